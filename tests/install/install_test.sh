#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR - installs the build into a throwaway
# prefix and compiles examples/leader.c against it twice: with pkg-config
# (shared and static) and with CMake's find_package(reign).  Proves that
# reign.pc, the CMake package and the public headers are enough on their own.
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(find "$tmp/prefix" -name reign.pc -printf '%h\n' | head -n 1)
test -n "$libdir" || { echo "reign.pc was not installed" >&2; exit 1; }
export PKG_CONFIG_PATH=$libdir
test -f "$tmp/prefix/include/reign/reign.h"
test -f "$tmp/prefix/include/reign/adapters/libuv.h"
test -x "$tmp/prefix/bin/reign"
test -f "$tmp/prefix/share/man/man1/reign.1"

# shared
cc -std=c11 -Wall -Werror $(pkg-config --define-prefix --cflags reign) "$src/examples/leader.c" \
    -o "$tmp/leader" $(pkg-config --define-prefix --libs reign) -Wl,-rpath,"$libdir/.."
"$tmp/leader" 2>/dev/null && { echo "leader without arguments should fail" >&2; exit 1; }
[[ $("$tmp/leader" 2>&1 || true) == usage:* ]]
# static
cc -std=c11 -Wall -Werror $(pkg-config --define-prefix --cflags reign) "$src/examples/leader.c" \
    -o "$tmp/leader-static" $(pkg-config --define-prefix --static --libs reign | sed 's/-lreign/-l:libreign.a/')
# Only the public API is exported from the shared library.
lib=$(find "$tmp/prefix" -name 'libreign.so.*.*' | head -n 1)
if nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^reign_' | grep -v '^REIGN_' |
    grep -q .; then
    echo "libreign exports symbols outside reign_*:" >&2
    nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^reign_' >&2
    exit 1
fi
nm -D --defined-only "$lib" | grep -q ' reign__' && { echo "internal symbols exported" >&2; exit 1; }

# CMake package
mkdir -p "$tmp/cm"
cat >"$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(use_reign C)
find_package(reign REQUIRED)
add_executable(leader $src/examples/leader.c)
target_link_libraries(leader PRIVATE reign::reign)
CM
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cm/build" >/dev/null
echo "install test: headers, reign.pc (shared and static), CMake package, man page: OK"
