#!/usr/bin/env bash
# Builds coccl with the CUDA path, runs the device codec tests and the kernel benchmark.
# On the GPU machine, from the repository root:
#
#   OUT=$OUT bash tests/gpu/codec/run_codec_gpu.sh            # build, test, bench
#   STEPS=build bash tests/gpu/codec/run_codec_gpu.sh          # one step at a time, e.g. to
#   STEPS="test bench" bash tests/gpu/codec/run_codec_gpu.sh   #   split over two calls
#
# Environment:
#   OUT            results folder (default ./out): summary.txt, build.log, codec_tests.log,
#                  codec_emulated.log, kernel_bench.txt, kernel_bench.json, res_usage.txt
#                  (registers / spills of every kernel), nvidia-smi.txt
#   BUILD_DIR      build folder (default build-codec-gpu; /build*/ is git-ignored, so it stays
#                  between calls on the device machine)
#   CMAKE_ARGS     extra cmake arguments (e.g. -DCOCCL_WITH_UCX=OFF, -DCOCCL_KERNELS_SOFT_CVT=ON)
#   CUDA_ARCH      CMAKE_CUDA_ARCHITECTURES (default 90)
#   COCCL_DATA_DIR the real TP tensors (default .data/ when it holds tp_tensors_manifest.json)
#   BENCH_ARGS     kernel_bench arguments (default: 256 and 1024 MiB, bf16 and fp32)
#   GTEST_FILTER   passed to the test binary
#   STEPS          any of: build test bench (default all three)
#   MODE           wrapper (default): a small wrapper project (in $BUILD_DIR/src) adds the
#                  repository with its own tests, perf and shim off, plus tests/gpu/codec and
#                  perf/kernel_bench: needs CUDA, what the library layers need (hwloc, UCX or the
#                  top level's fallback) and GoogleTest (a package, or its source in
#                  build-deps/googletest, e.g. a copy of Debian's /usr/src/googletest);
#                  project: the top-level project as is (once tests/gpu and perf add these
#                  folders), with all of its test and perf dependencies.
set -uo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-codec-gpu}
CUDA_ARCH=${CUDA_ARCH:-90}
STEPS=${STEPS:-build test bench}
MODE=${MODE:-wrapper}
JOBS=$(nproc 2>/dev/null || echo 8)
if [ -z "${COCCL_DATA_DIR:-}" ] && [ -f "$ROOT/.data/tp_tensors_manifest.json" ]; then
  export COCCL_DATA_DIR=$ROOT/.data
fi
status=0
log() { echo "[run_codec_gpu] $*" | tee -a "$OUT/summary.txt"; }

configure() {  # $1 source dir, $2 build dir, then extra cmake arguments
  local src=$1 dir=$2
  shift 2
  # shellcheck disable=SC2086
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOCCL_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" -DCOCCL_BUILD_SHIM=OFF "$@" ${CMAKE_ARGS:-}
}

BDIR=$BUILD_DIR
if [[ " $STEPS " == *" build "* ]]; then
  log "configure ($MODE, $BDIR, sm_$CUDA_ARCH, ${CMAKE_ARGS:-no extra args})"
  if [ "$MODE" = project ]; then
    configure "$ROOT" "$BDIR" > "$OUT/build.log" 2>&1
    rc=$?
  else
    mkdir -p "$BDIR/src"
    {
      echo "cmake_minimum_required(VERSION 3.25)"
      echo "project(coccl_codec_gpu LANGUAGES C CXX)"
      echo "set(CMAKE_CUDA_ARCHITECTURES $CUDA_ARCH)"
      echo "if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)"
      echo "  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)"
      echo "endif()"
      echo "enable_language(CUDA)"
      echo "enable_testing()"
      echo "add_subdirectory($ROOT coccl)"
      echo "add_subdirectory($ROOT/tests/gpu/codec gpu_codec)"
      echo "add_subdirectory($ROOT/perf/kernel_bench kernel_bench)"
    } > "$BDIR/src/CMakeLists.txt"
    configure "$BDIR/src" "$BDIR" -DCOCCL_BUILD_TESTS=OFF -DCOCCL_BUILD_PERF=OFF \
      > "$OUT/build.log" 2>&1
    rc=$?
  fi
  if [ $rc -ne 0 ]; then
    log "configure FAILED (see build.log)"
    tail -30 "$OUT/build.log"
    exit 1
  fi
  start=$(date +%s)
  if ! ninja -C "$BDIR" -j "$JOBS" test_codec_gpu test_codec_emulated kernel_bench \
      >> "$OUT/build.log" 2>&1; then
    log "build FAILED (see build.log)"
    grep -E "error|Error" "$OUT/build.log" | head -40
    exit 1
  fi
  log "build OK in $(( $(date +%s) - start )) s"
  if command -v cuobjdump > /dev/null; then
    lib=$(find "$BDIR" -name libcoccl_kernels.a | head -1)
    [ -n "$lib" ] && cuobjdump -res-usage "$lib" > "$OUT/res_usage.txt" 2>&1
  fi
fi

find_bin() { find "$BDIR" -type f -name "$1" -perm -u+x | head -1; }

if [[ " $STEPS " == *" test "* ]]; then
  TEST_BIN=$(find_bin test_codec_gpu)
  EMU_BIN=$(find_bin test_codec_emulated)
  if [ -z "$TEST_BIN" ]; then
    log "no test_codec_gpu under $BDIR: run STEPS=build first"
    exit 1
  fi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv \
    > "$OUT/nvidia-smi.txt" 2>&1 || true
  log "tests: $TEST_BIN (COCCL_DATA_DIR=${COCCL_DATA_DIR:-unset})"
  start=$(date +%s)
  "$TEST_BIN" --gtest_color=no ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} \
    > "$OUT/codec_tests.log" 2>&1
  rc=$?
  log "test_codec_gpu exit $rc in $(( $(date +%s) - start )) s"
  [ $rc -ne 0 ] && status=1
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[codec gpu\]|Failure|differ" "$OUT/codec_tests.log" \
    | head -60
  if [ -n "$EMU_BIN" ]; then
    "$EMU_BIN" --gtest_color=no > "$OUT/codec_emulated.log" 2>&1
    rc=$?
    log "test_codec_emulated exit $rc"
    [ $rc -ne 0 ] && status=1
  fi
fi

if [[ " $STEPS " == *" bench "* ]]; then
  BENCH_BIN=$(find_bin kernel_bench)
  if [ -z "$BENCH_BIN" ]; then
    log "no kernel_bench under $BDIR: run STEPS=build first"
    exit 1
  fi
  log "kernel_bench ${BENCH_ARGS:-(defaults)}"
  # shellcheck disable=SC2086
  "$BENCH_BIN" ${BENCH_ARGS:-} --json "$OUT/kernel_bench.json" > "$OUT/kernel_bench.txt" 2>&1
  rc=$?
  log "kernel_bench exit $rc"
  [ $rc -ne 0 ] && status=1
  sed -n '/^op /,$p' "$OUT/kernel_bench.txt"
fi
exit $status
