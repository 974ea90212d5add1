#!/usr/bin/env bash
# Set up whatever is missing on a Debian machine, then run pickfs or its tests.
#   ./bootstrap.sh run [pickfs run options]   the default job (sqlite-tpcb on every preset)
#   ./bootstrap.sh test [pytest options]      the test suite
#   ./bootstrap.sh pickfs ARGS...             any pickfs command
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES=(e2fsprogs xfsprogs btrfs-progs util-linux sqlite3 python3-venv postgresql mariadb-server sysbench fio
              firebird3.0-server-core firebird3.0-server libfbclient2 firebird3.0-utils libfuse3-3 fuse3)
# The test suite also checks the HTML report in a real browser.
[ "${1:-run}" = "test" ] && APT_PACKAGES+=(chromium)
# The fleet tests (issue 16) reach hosts made of network namespaces through real SSH servers.
[ "${1:-run}" = "test" ] && APT_PACKAGES+=(openssh-server openssh-client iproute2)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}" >&2
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}" >&2
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.pickfs-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "bootstrap: installing pickfs and its dependencies into .venv" >&2
  .venv/bin/python -m pip install -q --upgrade pip >&2
  .venv/bin/python -m pip install -q -e '.[test]' >&2
  touch "$stamp"
fi

what=${1:-run}
shift || true
case "$what" in
  run) exec $SUDO .venv/bin/pickfs run "$@" ;;
  test) exec $SUDO .venv/bin/python -m pytest "$@" ;;
  pickfs) exec $SUDO .venv/bin/pickfs "$@" ;;
  *) echo "usage: ./bootstrap.sh run|test|pickfs [args]" >&2; exit 2 ;;
esac
