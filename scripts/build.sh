#!/usr/bin/env bash
# build.sh - configure and build reign with every core.
#
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]
#
# BUILD_DIR defaults to build/ at the top of the source tree (a relative one is taken from the
# current directory).  The default build type is RelWithDebInfo; pass -DCMAKE_BUILD_TYPE=... to
# change it, or e.g. -DREIGN_SANITIZE=ON for a sanitizer build.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=$ROOT/build
if [[ $# -gt 0 && $1 != -* ]]; then
    BUILD_DIR=$1
    shift
fi

args=("$@")
have_arg() {
    local a
    for a in "${args[@]}"; do [[ $a == "$1"* ]] && return 0; done
    return 1
}
if ! have_arg -DCMAKE_BUILD_TYPE=; then args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo); fi
# Debian's python3-kazoo (used by tests) belongs to /usr/bin/python3, which need not be the
# first python3 on PATH.
if ! have_arg -DPython3_EXECUTABLE= && [[ -x /usr/bin/python3 ]]; then
    args+=(-DPython3_EXECUTABLE=/usr/bin/python3)
fi

cmake -S "$ROOT" -B "$BUILD_DIR" "${args[@]}"
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
