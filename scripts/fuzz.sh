#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, host-only, ASan+UBSan) into
# ${BUILD_DIR:-build-fuzz} and runs each for FUZZ_SECONDS (default 60) from its checked-in seed
# corpus (tests/fuzz/corpus/<target>/). Fails on the first crash, leak, sanitizer report or
# failed check; the input that did it is left as build-fuzz/artifacts/<target>/crash-* (replay:
# build-fuzz/tests/fuzz/<target> that-file). New corpus entries go to build-fuzz/corpus/, not
# into the checkout. Usage: scripts/fuzz.sh [target...]   (default: every target).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_JOBS=${FUZZ_JOBS:-2}  # targets fuzzed at once
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_codec_decode fuzz_codec_spec fuzz_env fuzz_bootstrap_wire fuzz_policy_file
  fuzz_plugin_decode)

t0=$(date +%s)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCOCCL_ENABLE_CUDA=OFF \
  -DCOCCL_BUILD_FUZZ=ON -DCOCCL_BUILD_TESTS=OFF -DCOCCL_BUILD_PERF=OFF -DCOCCL_BUILD_SHIM=OFF \
  -DCOCCL_WERROR=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${targets[@]}"
t1=$(date +%s)
echo "fuzz.sh: built ${#targets[@]} targets in $((t1 - t0)) s"

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
run_one() {
  local t=$1 dir=$BUILD_DIR/corpus/$t art=$BUILD_DIR/artifacts/$t
  mkdir -p "$dir" "$art"
  # -rss_limit_mb: a run that needs more is a finding (e.g. a length field trusted).
  if "$BUILD_DIR/tests/fuzz/$t" -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=2048 \
       -max_len=4096 -print_final_stats=1 -artifact_prefix="$art/" \
       "$dir" "tests/fuzz/corpus/$t" >"$BUILD_DIR/$t.log" 2>&1; then
    echo "fuzz.sh: $t: ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$BUILD_DIR/$t.log" | grep -o '[0-9]*$') runs)"
  else
    echo "fuzz.sh: $t FAILED; log $BUILD_DIR/$t.log, input:" $(ls "$art") >&2
    tail -n 60 "$BUILD_DIR/$t.log" >&2
    return 1
  fi
}
fail=0
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" & pids+=($!); names+=("$t")
  if [ ${#pids[@]} -ge "$FUZZ_JOBS" ]; then
    wait "${pids[0]}" || fail=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
echo "fuzz.sh: fuzzed ${#targets[@]} targets x ${FUZZ_SECONDS} s in $(( $(date +%s) - t1 )) s"
exit $fail
