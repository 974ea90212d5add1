#!/usr/bin/env bash
# Set up whatever is missing on a Debian machine, then run pickfs or its tests.
#   ./bootstrap.sh run [pickfs run options]   the default job (sqlite-tpcb on every preset)
#   ./bootstrap.sh test [pytest options]      the test suite
#   ./bootstrap.sh pickfs ARGS...             any pickfs command
# Environment: PYTHON=/path/to/python3 makes .venv from that Python (default: Debian's /usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")"
what=${1:-run}

# The Debian packages, in groups: each group is installed only for a job that needs it, and said why.
PKG_BASE=(e2fsprogs xfsprogs btrfs-progs util-linux sqlite3 python3-venv)
WHY_BASE="to build and mount the filesystems compared (mkfs, loop devices), for SQLite, and for .venv"
PKG_SERVERS=(postgresql mariadb-server sysbench fio firebird3.0-server-core firebird3.0-server libfbclient2 firebird3.0-utils)
WHY_SERVERS="the database servers and load tools of the workloads other than SQLite (pgbench, tpcc: PostgreSQL; sysbench-oltp: MariaDB; firebird-tpcb: Firebird; fio); pickfs starts its own servers on the filesystems under test, so their system services are left stopped and not enabled"
PKG_CRASH=(libfuse3-3 fuse3)
WHY_CRASH="for the crash tests' write recorder (a FUSE filesystem)"
PKG_BROWSER=(chromium)
WHY_BROWSER="for the test of the HTML report in a real browser"
PKG_FLEET=(openssh-server openssh-client iproute2)
WHY_FLEET="for the fleet tests, whose hosts are network namespaces reached over SSH (the tests start their own sshd; a system SSH service the install adds is neither started nor enabled)"
# (a fleet host installs PKG_BASE, PKG_SERVERS and PKG_CRASH: pickfs.fleet.playbooks.APT_PACKAGES, kept equal)

# Which groups a job needs: the default job (SQLite) only the base; a run naming other workloads or a plan the
# servers, a crash test the recorder; commands that build nothing (report, results, env, fleet's controller...) the
# base; the tests everything.
groups_for() {
  local mode=$1; shift
  if [ "$mode" = pickfs ]; then
    mode=${1:-}; shift || true
    case "$mode" in run|crashtest) ;; *) echo BASE; return ;; esac
  fi
  case "$mode" in
    test) echo BASE SERVERS CRASH BROWSER FLEET; return ;;
    crashtest) echo BASE SERVERS CRASH; return ;;
  esac
  local args=" $* " groups="BASE"
  case "$args" in
    *pgbench*|*tpcc*|*sysbench*|*firebird*|*mariadb*|*postgres*|*fio*|*fileio*|*" --plan"*|*command*|*wal*) groups="$groups SERVERS" ;;
  esac
  case "$args" in *--crash-states*|*" --plan"*) groups="$groups CRASH" ;; esac
  echo "$groups"
}

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# -- installing without side effects on the machine's services -------------------------------------------------
# pickfs starts its own servers on the filesystems under test: the packages' system services are installed without
# being started or enabled, and the services already on the machine are left as they were (see the script).
INSTALL=src/pickfs/fleet/install_quietly.sh   # the fleet's hosts install with it too
STATE_DIR=.bootstrap
ENABLED_BEFORE=$STATE_DIR/enabled-before   # the enablement links found before bootstrap first installed anything

enablement_links() {  # systemd's wants/requires links and SysV's start links, one a line (as the script lists them)
  find /etc/systemd/system -mindepth 2 -maxdepth 2 -type l \( -path '*.wants/*' -o -path '*.requires/*' \) 2>/dev/null
  find /etc/rc0.d /etc/rc1.d /etc/rc2.d /etc/rc3.d /etc/rc4.d /etc/rc5.d /etc/rc6.d /etc/rcS.d -maxdepth 1 \
    -type l -name 'S*' 2>/dev/null
}

install_missing() {
  local group pkgs why missing=() pkg
  for group in $(groups_for "$@"); do
    eval "pkgs=(\"\${PKG_$group[@]}\")"
    eval "why=\$WHY_$group"
    local need=()
    for pkg in "${pkgs[@]}"; do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
    done
    if [ ${#need[@]} -gt 0 ]; then
      echo "bootstrap: installing ${need[*]}: $why" >&2
      missing+=("${need[@]}")
    fi
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  $SUDO sh "$INSTALL" "${missing[@]}" >/dev/null
}

if grep -qsF "made by pickfs" /usr/sbin/policy-rc.d || [ -e /usr/sbin/policy-rc.d.pickfs-saved ]; then
  $SUDO sh "$INSTALL" --restore  # an install killed half-way left its policy-rc.d: the machine's own comes back
fi
if [ ! -f "$ENABLED_BEFORE" ]; then  # (the test of this set-up reads it: tests/integration/test_bootstrap.py)
  { mkdir -p "$STATE_DIR" && enablement_links | sort -u > "$ENABLED_BEFORE"; } 2>/dev/null || true
fi
install_missing "$what" "${@:2}"

# .venv from Debian's Python (any user can run it), or PYTHON's; remade when the user cannot run the one here
# (made by root from a Python under root's home, say).
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON; elif [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
if [ -e .venv ] && ! .venv/bin/python -c '' 2>/dev/null; then
  if [ -w .venv ] && [ -O .venv ]; then
    echo "bootstrap: .venv does not run for $(id -un) (its Python: $(readlink -f .venv/bin/python 2>/dev/null || echo none)): making it again from $PY" >&2
    rm -rf .venv
  else
    echo "bootstrap: .venv was made by another user from a Python $(id -un) cannot run: remove it (sudo rm -rf .venv) and run again" >&2
    exit 2
  fi
fi
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv from $PY" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.pickfs-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "bootstrap: installing pickfs and its dependencies into .venv" >&2
  .venv/bin/python -m pip install -q --upgrade pip >&2
  .venv/bin/python -m pip install -q -e '.[test]' >&2
  touch "$stamp"
fi

# A directory target (--dir) builds nothing and runs as the user who asked; everything else needs root.
AS_ROOT=$SUDO
case " $* " in *" --dir "*|*" --dir="*|*" --target directory "*|*" --target=directory "*) AS_ROOT="" ;; esac
shift || true
case "$what" in
  run) exec $AS_ROOT .venv/bin/pickfs run "$@" ;;
  test) exec $SUDO .venv/bin/python -m pytest "$@" ;;
  pickfs) exec $AS_ROOT .venv/bin/pickfs "$@" ;;
  *) echo "usage: ./bootstrap.sh run|test|pickfs [args]" >&2; exit 2 ;;
esac
