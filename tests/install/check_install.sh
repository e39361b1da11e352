#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs a consumer that uses
# find_package(coccl), and one that uses pkg-config coccl.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/consumer"
libdir=$(dirname "$(find "$work/prefix" -name coccl.pc | head -1)")
PKG_CONFIG_PATH="$libdir" cc "$src/consumer/main.c" $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs coccl) -o "$work/pc"
LD_LIBRARY_PATH="$(dirname "$libdir")" "$work/pc"
# The installed coccl_perf finds the installed library by itself (RUNPATH $ORIGIN/../lib).
if [ -x "$work/prefix/bin/coccl_perf" ]; then
  env -u LD_LIBRARY_PATH "$work/prefix/bin/coccl_perf" all_reduce -t 2 -b 1K -e 1K -n 1 -w 0 >/dev/null
fi
# The installed int4 plug-in (lib/coccl/libcoccl-codec-int4.so) is found by bare name.
if [ -x "$work/prefix/bin/coccl_perf" ] && [ -n "$(find "$work/prefix" -name libcoccl-codec-int4.so)" ]; then
  # (-c 0: coccl_perf's #wrong rule, 0.15 max|ref| per 128 elements, is an 8-bit codec's)
  out=$(env -u LD_LIBRARY_PATH COCCL_CODEC_PLUGIN=int4 "$work/prefix/bin/coccl_perf" all_reduce \
        -t 2 -b 64K -e 64K -n 1 -w 0 -c 0 --codec int4)
  echo "$out" | grep -q " int4 " || { echo "installed int4 plug-in not used:"; echo "$out"; exit 1; }
fi
