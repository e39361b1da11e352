#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs a consumer that uses
# find_package(coccl), and one that uses pkg-config coccl; builds the example codec plug-in
# (examples/codec_plugin, find_package(coccl) -> coccl::codec_sdk) into the same prefix and runs
# the installed coccl_perf through it (COCCL_CODEC_PLUGIN=q8, looked up in <prefix>/lib/coccl/).
# CHECK_INSTALL_VERBOSE=1 prints the plug-in's CUDA configuration and the coccl_perf table.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$src/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The policy files: the examples and the measured tables; each measured table is loaded by the
# installed coccl_perf below (the examples need the plug-ins: ctest policy_example loads them).
policies=$(find "$work/prefix/share/coccl/policy" -name '*.json' | sort)
[ -n "$policies" ] && [ -n "$(find "$work/prefix/share/coccl/policy/tuned" -name '*.json')" ] ||
  { echo "no policy files under <prefix>/share/coccl/policy (tuned/ included)" >&2; exit 1; }
cmake -S "$src/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/consumer"
libdir=$(dirname "$(find "$work/prefix" -name coccl.pc | head -1)")
PKG_CONFIG_PATH="$libdir" cc "$src/consumer/main.c" $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs coccl) -o "$work/pc"
LD_LIBRARY_PATH="$(dirname "$libdir")" "$work/pc"

# The plug-in SDK: headers only through pkg-config (no -l), and coccl_codec.h compiles as C.
sdk_flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs coccl-codec)
case "$sdk_flags" in *-l*) echo "coccl-codec.pc links a library: $sdk_flags" >&2; exit 1 ;; esac
printf '#include <coccl_codec.h>\nint main(void) { return sizeof(cocclCodecPlugin_v1_t) == 0; }\n' \
  > "$work/sdk.c"
cc -std=c99 -Wall -Werror $sdk_flags "$work/sdk.c" -o "$work/sdk" && "$work/sdk"

# The example plug-in, built against the installed SDK and installed into the same prefix. Its
# CUDA part compiles in seconds; -DQ8_WITH_CUDA=OFF where no CUDA compiler is wanted.
cmake -S "$root/examples/codec_plugin" -B "$work/q8" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_INSTALL_PREFIX="$work/prefix" ${Q8_CMAKE_ARGS:-} >/dev/null
cmake --build "$work/q8" >/dev/null
if [ -n "${CHECK_INSTALL_VERBOSE:-}" ]; then
  if [ -n "$(find "$work/q8" -name 'q8_device.cu.o')" ]; then echo "q8: device operations built"
  else echo "q8: host-only"; fi
fi
cmake --install "$work/q8" >/dev/null
plugin=$(find "$work/prefix" -path '*/coccl/libcoccl-codec-q8.so' | head -1)
[ -n "$plugin" ] || { echo "libcoccl-codec-q8.so is not in <prefix>/<libdir>/coccl/" >&2; exit 1; }
if nm -D --defined-only "$plugin" | grep -q ' cocclCommInitRank$'; then
  echo "the plug-in exports coccl's API (it must not link libcoccl)" >&2; exit 1
fi

# The installed coccl_perf finds the installed library by itself (RUNPATH $ORIGIN/../lib).
if [ -x "$work/prefix/bin/coccl_perf" ]; then
  env -u LD_LIBRARY_PATH "$work/prefix/bin/coccl_perf" all_reduce -t 2 -b 1K -e 1K -n 1 -w 0 >/dev/null
  # Each installed tuned table loads (its codecs are built in) and runs on 2 host ranks.
  for f in $(find "$work/prefix/share/coccl/policy/tuned" -name '*.json'); do
    env -u LD_LIBRARY_PATH COCCL_POLICY="$f" "$work/prefix/bin/coccl_perf" all_reduce -t 2 \
      -b 8 -e 1M -f 32 -n 1 -w 0 --codec policy >/dev/null ||
      { echo "coccl_perf with the installed policy $f failed" >&2; exit 1; }
  done
  # q8 through the installed tool, 4 host ranks, sum and avg in three types: the exit status
  # covers errors, #wrong and non-identical outputs; the #wrong column is checked as well.
  out="$work/q8_perf.txt"
  if ! env -u LD_LIBRARY_PATH COCCL_CODEC_PLUGIN=q8 "$work/prefix/bin/coccl_perf" all_reduce \
      --codec q8 -t 4 -b 64K -e 1M -f 4 -n 2 -w 1 -d float,half,bfloat16 -o sum,avg > "$out" 2>&1; then
    cat "$out" >&2
    echo "coccl_perf with the q8 plug-in failed" >&2
    exit 1
  fi
  # data rows "size count type redop root time algbw busbw #wrong time algbw busbw #wrong codec
  # ...": the #wrong columns (out-of-place, in-place) are found from the header line
  awk '
    /^#/ && /#wrong/ && !n { for (i = 2; i <= NF; ++i) if ($i == "#wrong") wrong[++n] = i - 1; next }
    /^#/ || NF == 0 { next }
    n && $1 ~ /^[0-9]+$/ { rows++; for (k = 1; k <= n; ++k) if ($(wrong[k]) != "0") bad++ }
    END { if (!n || rows == 0) { print "no coccl_perf rows with a #wrong column"; exit 1 }
          if (bad) { print bad " #wrong entries are not 0"; exit 1 } }' "$out" ||
    { cat "$out" >&2; exit 1; }
  grep -q '^# Out of bounds values : 0 OK' "$out" || { cat "$out" >&2; exit 1; }
  [ -z "${CHECK_INSTALL_VERBOSE:-}" ] || cat "$out"
  grep -q ' q8' "$out" || { cat "$out" >&2; echo "the rows do not name codec q8" >&2; exit 1; }
fi
# The installed conformance checker on the installed plug-in, by bare name (found in
# <prefix>/lib/coccl/ from <prefix>/bin/) and by path.
if [ -x "$work/prefix/bin/coccl_codec_check" ]; then
  for what in q8 "$work/prefix/lib/coccl/libcoccl-codec-q8.so"; do
    if ! env -u LD_LIBRARY_PATH "$work/prefix/bin/coccl_codec_check" "$what" --quick \
        > "$work/q8_check.txt" 2>&1; then
      cat "$work/q8_check.txt" >&2
      echo "coccl_codec_check $what failed" >&2
      exit 1
    fi
  done
  grep -q '# 1[0-9] checks, 0 failed' "$work/q8_check.txt" || { cat "$work/q8_check.txt" >&2; exit 1; }
  # Started through $PATH from another folder, the tool still looks beside its own file, not in
  # the current folder.
  if ! (cd / && env -u LD_LIBRARY_PATH PATH="$work/prefix/bin:$PATH" coccl_codec_check q8 --quick \
        > "$work/q8_path.txt" 2>&1); then
    cat "$work/q8_path.txt" >&2
    echo "coccl_codec_check q8 through \$PATH failed" >&2
    exit 1
  fi
fi
# The installed int4 plug-in (lib/coccl/libcoccl-codec-int4.so) is found by bare name.
if [ -x "$work/prefix/bin/coccl_perf" ] && [ -n "$(find "$work/prefix" -name libcoccl-codec-int4.so)" ]; then
  # (-c 0: coccl_perf's #wrong rule, 0.15 max|ref| per 128 elements, is an 8-bit codec's)
  out=$(env -u LD_LIBRARY_PATH COCCL_CODEC_PLUGIN=int4 "$work/prefix/bin/coccl_perf" all_reduce \
        -t 2 -b 64K -e 64K -n 1 -w 0 -c 0 --codec int4)
  echo "$out" | grep -q " int4 " || { echo "installed int4 plug-in not used:"; echo "$out"; exit 1; }
fi
# The first-hour examples (examples/allreduce) against the installed package, 4 processes each.
cmake -S "$src/../../examples/allreduce" -B "$work/examples" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/examples" >/dev/null
if ! LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" \
    bash "$src/../../examples/allreduce/run.sh" "$work/examples" 4 > "$work/examples.txt" 2>&1; then
  cat "$work/examples.txt" >&2
  echo "examples/allreduce failed" >&2
  exit 1
fi
[ "$(grep -c ' OK' "$work/examples.txt")" -ge 16 ] || { cat "$work/examples.txt" >&2; exit 1; }
