#!/bin/sh
# Install the Debian packages of the arguments that are missing, without starting or enabling their system
# services: pickfs starts its own database servers on the filesystems under test and needs none of the system's.
# Run as root, by bootstrap.sh and by every fleet host (pickfs.fleet.playbooks).
#
# During the install a policy-rc.d denies every start (invoke-rc.d and deb-systemd-invoke ask it; systemd need
# not be PID 1); a machine's own policy-rc.d that already denies is left alone, one that allows is set aside and
# put back. Afterwards the boot-time links the install made for services that were not on the machine before
# are undone: systemd's wants/requires links removed (deb-systemd-helper then reads the unit as disabled by the
# admin, and upgrades keep it so), SysV start links made stop links (update-rc.d's own "disable"). Services that
# were here before are left as they were.
#
#   install_quietly.sh PACKAGE...   prints "installed: PACKAGE..." when it installed some; apt's output on stderr;
#                                   exit 3 with "missing Debian packages: ..." as the last line when apt cannot
#   install_quietly.sh --restore    only put back a policy-rc.d that a killed run left
set -u
POLICY=/usr/sbin/policy-rc.d
MARK="# made by pickfs install_quietly.sh"

restore_policy() {
  if [ -f "$POLICY" ] && grep -qF "$MARK" "$POLICY"; then rm -f "$POLICY"; fi
  if [ -e "$POLICY.pickfs-saved" ] && [ ! -e "$POLICY" ]; then mv "$POLICY.pickfs-saved" "$POLICY"; fi
}

if [ "${1:-}" = "--restore" ]; then
  restore_policy
  exit 0
fi
restore_policy  # an earlier run killed during its install

missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

enablement_links() {
  find /etc/systemd/system -mindepth 2 -maxdepth 2 -type l \( -path '*.wants/*' -o -path '*.requires/*' \) \
    2>/dev/null
  find /etc/rc0.d /etc/rc1.d /etc/rc2.d /etc/rc3.d /etc/rc4.d /etc/rc5.d /etc/rc6.d /etc/rcS.d -maxdepth 1 \
    -type l -name 'S*' 2>/dev/null
}

services() {  # every systemd unit and SysV script on this machine
  ls /lib/systemd/system /usr/lib/systemd/system /etc/systemd/system /etc/init.d 2>/dev/null | grep -v ':$'
}

tmp=$(mktemp -d) || exit 1
trap 'restore_policy; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
enablement_links | sort -u > "$tmp/links"
services | sort -u > "$tmp/services"

if [ -x "$POLICY" ] && { "$POLICY" pickfs start >/dev/null 2>&1; [ $? -eq 101 ]; }; then
  :  # the machine's own policy already denies starts: left as it is
else
  [ -e "$POLICY" ] && mv "$POLICY" "$POLICY.pickfs-saved"
  printf '#!/bin/sh\n%s: no service starts while packages are installed; removed afterwards\nexit 101\n' \
    "$MARK" > "$POLICY"
  chmod 755 "$POLICY"
fi

# shellcheck disable=SC2086  # $missing: one word per package
if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing; } >&2; then
  echo "missing Debian packages:$missing (apt-get could not install them: install them on this host, or give it a Debian mirror)" >&2
  exit 3
fi
restore_policy

enablement_links | sort -u > "$tmp/after"
comm -13 "$tmp/links" "$tmp/after" | while read -r link; do
  name=$(basename "$link")
  case "$link" in /etc/rc*) name=$(printf '%s' "$name" | cut -c4-) ;; esac
  grep -qxF "$name" "$tmp/services" && continue  # a service that was here before: as the install left it
  case "$link" in
    /etc/rc*) mv "$link" "$(dirname "$link")/K01$name"
              echo "pickfs: $name will not start at boot (its SysV start link $link made a stop link)" >&2 ;;
    *) rm -f "$link"
       echo "pickfs: $name will not start at boot (removed $link, made by its install)" >&2 ;;
  esac
done
echo "installed:$missing"
