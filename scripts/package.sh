#!/usr/bin/env bash
# package.sh - the Debian packages of reign, built from this checkout on Debian 12.
#
#   scripts/package.sh [--lintian] [--dbgsym] [OUT_DIR]
#
# Builds libreign0, libreign-dev, reign and reignd with dpkg-buildpackage and debian/ (debhelper),
# into OUT_DIR (default: build-deb/ at the top of the checkout), then lists them:
#
#   apt-get install ./build-deb/reign_0.1.0-1_amd64.deb ...
#
# The build runs on a copy of the checkout's files (tracked and new, not ignored ones: no build
# trees) in a throwaway directory, so the checkout gets no debian/ build files and a dirty tree
# is packaged as it is.  What is missing of dpkg-dev, lintian (with --lintian) and debian/control's
# Build-Depends is installed first (apt-get build-dep), as root or through sudo.
#
#   --lintian   run lintian on the result: an error or a warning fails the script (the tags
#               overridden in debian/*.lintian-overrides are explained in docs/packaging.md);
#               info tags are shown
#   --dbgsym    keep the -dbgsym packages of debug symbols (left out by default)
#
# Environment: REIGN_PACKAGE_JOBS (parallel compile jobs, default: the number of cores).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/build-deb
lint=0
dbgsym=0
usage() {
    echo "usage: $0 [--lintian] [--dbgsym] [OUT_DIR]" >&2
    exit 2
}
while [[ $# -gt 0 ]]; do
    case $1 in
    --lintian) lint=1 ;;
    --dbgsym) dbgsym=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    -*) usage ;;
    *) OUT=$(realpath -m -- "$1") ;;
    esac
    shift
done

# apt-get as root, or through sudo.
as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        env DEBIAN_FRONTEND=noninteractive "$@"
    elif command -v sudo >/dev/null; then
        sudo env DEBIAN_FRONTEND=noninteractive "$@"
    else
        echo "package.sh: not root and no sudo: run as root: $*" >&2
        exit 1
    fi
}
tools=()
command -v dpkg-buildpackage >/dev/null || tools+=(dpkg-dev)
[[ $lint -eq 0 ]] || command -v lintian >/dev/null || tools+=(lintian)
if [[ ${#tools[@]} -gt 0 ]]; then
    echo "package.sh: installing ${tools[*]}" >&2
    as_root apt-get install -y -q --no-install-recommends "${tools[@]}"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/reign-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/reign
mkdir -p "$src"
# The checkout's files as they are: tracked and new ones, never ignored ones (build trees).
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    while IFS= read -r -d '' f; do
        [[ -e $ROOT/$f || -L $ROOT/$f ]] && printf '%s\0' "$f" # not deleted ones
    done < <(git -C "$ROOT" ls-files -z --cached --others --exclude-standard) |
        (cd "$ROOT" && xargs -0 -r cp -P --preserve=mode --parents -t "$src")
else
    (cd "$ROOT" && find . -mindepth 1 -maxdepth 1 ! -name 'build*' ! -name '.git' \
        -exec cp -a -t "$src" {} +)
fi

# The build dependencies of debian/control, if any is missing.
if ! (cd "$src" && dpkg-checkbuilddeps 2>/dev/null); then
    echo "package.sh: installing the build dependencies (apt-get build-dep)" >&2
    as_root apt-get build-dep -y -q --no-install-recommends "$src"
fi

opts="nocheck parallel=${REIGN_PACKAGE_JOBS:-$(nproc)}"
[[ $dbgsym -eq 1 ]] || opts+=" noautodbgsym"
echo "package.sh: building in $src (DEB_BUILD_OPTIONS=$opts)" >&2
(cd "$src" && DEB_BUILD_OPTIONS=$opts dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1) || {
    tail -n 60 "$work/build.log" >&2
    echo "package.sh: dpkg-buildpackage failed (the last 60 lines of its log are above)" >&2
    exit 1
}

mkdir -p "$OUT"
version=$(cd "$src" && dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
changes=reign_${version}_${arch}.changes
rm -f "$OUT"/*_"${version}"_*.deb "$OUT/$changes" "$OUT"/reign_"${version}"_"${arch}".buildinfo
# The files the .changes lists, and the .changes itself (lintian reads it).
mapfile -t files < <(sed -n '/^Files:/,/^[^ ]/{/^ /p}' "$work/$changes" | awk '{print $5}')
for f in "${files[@]}" "$changes"; do cp -- "$work/$f" "$OUT/"; done

status=0
if [[ $lint -eq 1 ]]; then
    command -v lintian >/dev/null || {
        echo "package.sh: --lintian: lintian is not installed" >&2
        exit 1
    }
    # Errors and warnings fail; info and pedantic tags are shown (docs/packaging.md).
    echo "package.sh: lintian" >&2
    lintian --display-info --fail-on error,warning "$OUT/$changes" || status=1
fi
echo "package.sh: in $OUT:" >&2
(cd "$OUT" && ls -1 -- *_"${version}"_*.deb)
exit $status
