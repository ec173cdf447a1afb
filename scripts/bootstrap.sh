#!/usr/bin/env bash
# bootstrap.sh - the two commands of the README, from a fresh Debian 12 machine:
#
#   sudo scripts/bootstrap.sh demo    packages, build, then the demo (scripts/demo.sh)
#   sudo scripts/bootstrap.sh test    packages, build, then every check (scripts/test.sh)
#
# Only installing packages needs root.  Run through sudo by a user, it installs them as root and
# then builds and runs as that user, so the checkout gets no root-owned files.  As root proper
# (CI) it does everything itself; as a user without sudo, deps.sh asks for sudo when a package
# is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
    echo "usage: $0 demo|test" >&2
    exit 2
}
[[ $# -eq 1 ]] || usage
case $1 in
demo) script=demo.sh ;;
test) script=test.sh ;;
*) usage ;;
esac

bash "$ROOT/scripts/deps.sh"
if [[ $(id -u) -eq 0 && -n ${SUDO_USER:-} && $SUDO_USER != root ]]; then
    exec sudo -u "$SUDO_USER" -- bash "$ROOT/scripts/$script"
fi
exec bash "$ROOT/scripts/$script"
