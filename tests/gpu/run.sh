#!/usr/bin/env bash
# GPU checks of coccl's device path, on a machine with a CUDA device (one H200 is enough: the
# ranks are processes sharing it through CUDA IPC). From the repository root:
#
#   OUT=$OUT bash tests/gpu/run.sh                 # build, tests, sanitizers, perf (< 9 min)
#   STEPS="build test" bash tests/gpu/run.sh       # a subset, e.g. to split over two calls
#
# Steps (STEPS, default "build test sanitize perf"; perf_nccl, perf_hier, perf_check ... on
# request):
#   build     configure with CUDA (extra cmake arguments from $CMAKE_ARGS) and build
#   test      ctest -L gpu: tests/gpu (device collectives) and tests/gpu/codec (codec kernels)
#             (with 2+ GPUs also DeviceMultiGpu: each rank on its own GPU; skipped on one)
#   each      every test of test_device_collectives on its own (timeout EACH_TIMEOUT s, default
#             150), one log per test under $OUT/each: a hang costs one test, not the run
#   sanitize  compute-sanitizer memcheck and racecheck on a small 2-rank case of every collective
#             and on DevicePhaseTimes (2 MiB calls: the codec rings' cp.async copies staged)
#   perf      coccl_perf --mem device all_reduce, 2 and 4 processes, uncompressed vs fp8_ash_ds,
#             1 MiB .. 1 GiB; --input on the real TP tensors at 4 ranks, device and host path
#   plugin    examples/codec_plugin (q8) against an install of the build, loaded by bare name:
#             checked coccl_perf all_reduce / reduce_scatter / all_gather --codec q8 --mem device
#             on 2 processes, CUDA IPC (staged pipeline) and COCCL_DEVICE_TRANSPORT=nccl
#   kbench_plugins  kernel_bench of the int4 and tah plug-ins beside fp8_ash_ds and a copy
#             (256 MiB)
#   perf_pp   sendrecv --mem device through tah:row=4096 vs exact, 2 processes, CUDA IPC and
#             NCCL, bf16 and fp32, 1 MiB .. 64 MiB, checked (-c 1); --input on the captured
#             pipeline activations (tests/data/pp_activations, tah:row=384), device and host
#   perf_hier two-level (hier:intra=int8,inter=int4) reduce_scatter and all_reduce on device
#             buffers, 4 processes as 2 nodes of 2 over COCCL_DEVICE_TRANSPORT=nccl, bf16, 4 MiB ..
#             64 MiB, checked (-c 1): NCCL's own (--codec none), flat int4, two levels one piece
#             at a time and pipelined (COCCL_TWO_LEVEL_PIPELINE=0|1) side by side
#   shim_torch PyTorch through the shim (nccl-tests-shim/torch_check.py, 2 processes): int8 on
#             every collective and the weight-difference all_gather (--delta: a policy rule's
#             "delta": true; first call exact, then within 2% of each step's change, in place,
#             ranks bitwise alike)
#   perf_check what the default per-call agreement over the NCCL transport costs
#             (perf/scripts/call_check_cost.sh: COCCL_NCCL_CALL_CHECK=0 vs 1, 2 and 3 processes,
#             all_reduce, reduce_scatter, all_gather, bf16 fp8_ash_ds, 64 KiB .. 16 MiB, 3
#             rounds): the median time per call and its ratio, in call_check_cost.txt
#   perf_phases the CUDA IPC collectives' phase times (coccl_perf --phases) with the codec rings
#             off and on (COCCL_DEVICE_CODEC_RINGS=0|1), 2 and 4 processes, bf16, 1 MiB ..
#             256 MiB, and the NVLink model from them (perf/scripts/phase_sweep.sh,
#             phase_model.py): phase_sweep.txt, phase_model.md
#   perf_nccl coccl_perf --mem device all_reduce, 2 processes, COCCL_DEVICE_TRANSPORT=nccl (each
#             rank its own NCCL_HOSTID): NCCL's own AllReduce (--codec none) vs coccl's two-shot
#             through fp8_ash_ds and int8 over NCCL send/recv, bf16 and fp32, 1 MiB .. 256 MiB
# Environment: OUT (default ./out), BUILD_DIR (default build-gpu, git-ignored), CMAKE_ARGS,
#   CUDA_ARCH (default 90), COCCL_DATA_DIR (the tp_tensors manifest; default: .data,
#   shared/data, ../shared/data), PERF_MAX (largest perf size, default 1G), TEST_TIMEOUT (s),
#   USE_MPS=1 (start a private MPS control daemon before the perf steps, stop it at exit).
# Results in $OUT: summary.txt (the short story), build.log, tests.log, sanitizer.log, perf.log.
set -uo pipefail
shopt -s extglob
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
BDIR=${BUILD_DIR:-build-gpu}
STEPS=${STEPS:-build test sanitize perf}
CUDA_ARCH=${CUDA_ARCH:-90}
PERF_MAX=${PERF_MAX:-1G}
JOBS=$(nproc 2>/dev/null || echo 8)
SUMMARY=$OUT/summary.txt
T0=$(date +%s)
status=0
log() { echo "[gpu $(( $(date +%s) - T0 ))s] $*" | tee -a "$SUMMARY"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }

if [ -z "${COCCL_DATA_DIR:-}" ]; then
  for d in "$ROOT/.data" "$ROOT/shared/data" "$ROOT/../shared/data"; do
    if [ -f "$d/tp_tensors_manifest.json" ]; then export COCCL_DATA_DIR=$d; break; fi
  done
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader \
  2>&1 | head -2 | sed 's/^/# gpu: /' | tee -a "$SUMMARY"

# ---- build ---------------------------------------------------------------------------------
if has build; then
  log "configure $BDIR (sm_$CUDA_ARCH, ${CMAKE_ARGS:-no extra args})"
  # shellcheck disable=SC2086
  if ! cmake -S "$ROOT" -B "$BDIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOCCL_ENABLE_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" -DCOCCL_BUILD_SHIM=OFF ${CMAKE_ARGS:-} \
      > "$OUT/build.log" 2>&1; then
    log "configure FAILED (build.log)"
    tail -25 "$OUT/build.log"
    exit 1
  fi
  if ! timeout 420 ninja -C "$BDIR" -j "$JOBS" >> "$OUT/build.log" 2>&1; then
    log "build FAILED or timed out (build.log)"
    grep -E "error|FAILED" "$OUT/build.log" | head -30
    exit 1
  fi
  log "build OK"
fi
PERF=$(find "$BDIR" -type f -name coccl_perf -perm -u+x | head -1)

# ---- tests ---------------------------------------------------------------------------------
if has test; then
  log "ctest -L gpu"
  timeout "${TEST_TIMEOUT:-300}" ctest --test-dir "$BDIR" -L gpu --output-on-failure \
    --timeout 280 > "$OUT/tests.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && status=1
  grep -E "tests passed|tests failed|\*\*\*Failed|Timeout|Not Run|SKIPPED|2000 AllReduces" \
    "$OUT/tests.log" | head -40 | tee -a "$SUMMARY"
  log "ctest exit $rc"
fi

# ---- each device test on its own --------------------------------------------------------------
if has each; then
  TBIN=$(find "$BDIR" -type f -name test_device_collectives -perm -u+x | head -1)
  mkdir -p "$OUT/each"
  for t in $("$TBIN" --gtest_list_tests | awk '/^[^ ]/ {s=$1; next} {print s $1}'); do
    [ -n "${EACH_FILTER:-}" ] && [[ "$t" != ${EACH_FILTER} ]] && continue
    t0=$(date +%s)
    timeout "${EACH_TIMEOUT:-150}" "$TBIN" --gtest_filter="$t" --gtest_color=no \
      > "$OUT/each/${t//\//_}.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && status=1
    log "each $t exit $rc in $(( $(date +%s) - t0 )) s"
  done
fi

# ---- compute-sanitizer -----------------------------------------------------------------------
if has sanitize; then
  TBIN=$(find "$BDIR" -type f -name test_device_collectives -perm -u+x | head -1)
  if command -v compute-sanitizer > /dev/null && [ -n "$TBIN" ]; then
    : > "$OUT/sanitizer.log"
    for tool in memcheck racecheck; do
      log "compute-sanitizer --tool $tool (DeviceSmoke, DevicePhaseTimes: 2 ranks, rings off/on)"
      timeout 150 compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 99 \
        "$TBIN" --gtest_filter='DeviceSmoke.*:DevicePhaseTimes.*' --gtest_color=no \
        >> "$OUT/sanitizer.log" 2>&1
      rc=$?
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$OUT/sanitizer.log" | tail -6 \
        | tee -a "$SUMMARY"
      log "$tool exit $rc"
      [ $rc -ne 0 ] && status=1
    done
  else
    log "sanitize: compute-sanitizer or test_device_collectives missing, skipped"
  fi
fi

# ---- coccl_perf ------------------------------------------------------------------------------
# nprocs, then coccl_perf arguments: torchrun-style variables, one process per rank, all on
# device 0; rank 0's output goes to perf.log.
launch() {
  local n=$1 plog=${PERF_LOG:-$OUT/perf.log}
  shift
  local port=$(( 20000 + (RANDOM % 20000) ))
  local pids=()
  for ((r = 1; r < n; ++r)); do
    NCCL_HOSTID=coccl-perf-$$-$r RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port timeout 300 "$PERF" "$@" > /dev/null 2>> "$plog" &
    pids+=($!)
  done
  NCCL_HOSTID=coccl-perf-$$-0 RANK=0 WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=$port timeout 300 "$PERF" "$@" >> "$plog" 2>&1
  local rc=$?
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}

if [ "${USE_MPS:-0}" = 1 ] &&
  { has perf || has perf_nccl || has perf_hier || has perf_pp || has perf_check || has plugin ||
    has perf_phases; } &&
  command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/coccl-mps-pipe-$$ CUDA_MPS_LOG_DIRECTORY=/tmp/coccl-mps-log-$$
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d; then
    trap 'echo quit | nvidia-cuda-mps-control' EXIT
    log "MPS control daemon started"
  fi
fi

if has perf; then
  if [ -z "$PERF" ]; then
    log "perf: no coccl_perf under $BDIR"
    status=1
  else
    : > "$OUT/perf.log"
    # Checked sweep (small sizes; the fp64 host check of 1 GiB would take minutes), then timing
    # only up to PERF_MAX. bf16, sum; in-place and out-of-place (nccl-tests columns).
    for n in 2 4; do
      for codec in none fp8_ash_ds; do
        echo "### all_reduce --mem device -np $n --codec $codec (checked, 1M..16M)" >> "$OUT/perf.log"
        launch "$n" all_reduce --mem device -d bfloat16 -b 1M -e 16M -f 4 -n 3 -w 1 -c 1 \
          --codec "$codec"
        rc=$?
        log "perf checked n=$n codec=$codec exit $rc"
        [ $rc -ne 0 ] && status=1
        echo "### all_reduce --mem device -np $n --codec $codec (timing, 1M..$PERF_MAX)" >> "$OUT/perf.log"
        launch "$n" all_reduce --mem device -d bfloat16 -b 1M -e "$PERF_MAX" -f 4 -n 5 -w 2 -c 0 \
          --codec "$codec"
        rc=$?
        log "perf timing n=$n codec=$codec exit $rc"
        [ $rc -ne 0 ] && status=1
      done
    done
    if [ -n "${COCCL_DATA_DIR:-}" ]; then
      for mem in device host; do
        echo "### all_reduce --input (real TP tensors) --mem $mem -np 4 --codec fp8_ash_ds" >> "$OUT/perf.log"
        launch 4 all_reduce --input "$COCCL_DATA_DIR/tp_tensors_manifest.json" --mem "$mem" \
          --codec fp8_ash_ds -n 3 -w 1
        rc=$?
        log "perf --input mem=$mem exit $rc"
        [ $rc -ne 0 ] && status=1
        grep -E "relL2 over|Result" "$OUT/perf.log" | tail -2 | tee -a "$SUMMARY"
      done
    else
      log "perf --input: no tp_tensors_manifest.json found (set COCCL_DATA_DIR)"
    fi
    # The busbw columns of every sweep, for the summary.
    grep -E "^###|^ +[0-9]+ +[0-9]+ +bfloat16" "$OUT/perf.log" | grep -v "^$" \
      | awk '/^###/ {print; next} {print "   ", $1, $6, $7, $8, $9, $10, $11, $12, $14, $15, $16}' \
      | head -80 >> "$SUMMARY"
  fi
fi

if has perf_hier; then
  INT4=$(find "$BDIR" -name 'libcoccl-codec-int4.so' | head -1)
  if [ -z "$PERF" ] || [ -z "$INT4" ]; then
    log "perf_hier: no coccl_perf or libcoccl-codec-int4.so under $BDIR"
    status=1
  else
    export PERF_LOG=$OUT/perf_hier.log
    : > "$PERF_LOG"
    HIER=hier:intra=int8,inter=int4
    for coll in reduce_scatter all_reduce; do
      for run in none int4 policy:0 policy:1; do
        codec=${run%%:*} pipe=${run#*:}
        [ "$pipe" = "$run" ] && pipe=0
        echo "### $coll --mem device -np 4 (2 nodes of 2) -d bfloat16 --codec $codec, COCCL_TWO_LEVEL_PIPELINE=$pipe" >> "$PERF_LOG"
        COCCL_DEVICE_TRANSPORT=nccl NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_NVLS_ENABLE=0 \
          COCCL_RANKS_PER_NODE=2 COCCL_CODEC_PLUGIN=$INT4 COCCL_TWO_LEVEL_PIPELINE=$pipe \
          COCCL_CODEC_REDUCESCATTER=$HIER COCCL_CODEC_ALLREDUCE=$HIER \
          launch 4 $coll --mem device -d bfloat16 -b 4M -e 64M -f 4 -n 5 -w 2 -c 1 --codec "$codec"
        rc=$?
        log "perf_hier $coll codec=$codec pipeline=$pipe exit $rc"
        [ $rc -ne 0 ] && status=1
      done
    done
    unset PERF_LOG
    grep -E "^###|^ +[0-9]+ +[0-9]+ +bfloat16" "$OUT/perf_hier.log" \
      | awk '/^###/ {print; next} {print "   ", $1, $6, $7, $8, $9, $14, $15, $16}' >> "$SUMMARY"
  fi
fi

if has perf_nccl; then
  if [ -z "$PERF" ]; then
    log "perf_nccl: no coccl_perf under $BDIR"
    status=1
  else
    export PERF_LOG=$OUT/perf_nccl.log
    : > "$PERF_LOG"
    for dt in bfloat16 float; do
      for codec in none fp8_ash_ds int8; do
        echo "### all_reduce --mem device -np 2 -d $dt --codec $codec, COCCL_DEVICE_TRANSPORT=nccl" >> "$PERF_LOG"
        COCCL_DEVICE_TRANSPORT=nccl NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_NVLS_ENABLE=0 \
          launch 2 all_reduce --mem device -d "$dt" -b 1M -e 256M -f 4 -n 5 -w 2 -c 0 --codec "$codec"
        rc=$?
        log "perf_nccl $dt codec=$codec exit $rc"
        [ $rc -ne 0 ] && status=1
      done
    done
    unset PERF_LOG
    grep -E "^###|^ +[0-9]+ +[0-9]+ +(bfloat16|float)" "$OUT/perf_nccl.log" \
      | awk '/^###/ {print; next} {print "   ", $1, $6, $7, $8, $10, $11, $12}' >> "$SUMMARY"
  fi
fi

# ---- the per-call agreement's cost over the NCCL transport -----------------------------------
if has perf_check; then
  if [ -z "$PERF" ]; then
    log "perf_check: no coccl_perf under $BDIR"
    status=1
  else
    COLLS="all_reduce reduce_scatter all_gather" ROUNDS=${CHECK_ROUNDS:-3} \
      bash perf/scripts/call_check_cost.sh "$PERF" "$OUT/call_check_cost.txt" \
      > "$OUT/call_check_cost_summary.txt" 2>&1
    rc=$?
    log "perf_check exit $rc"
    [ $rc -ne 0 ] && status=1
    grep -E " 1 [0-9]+ " "$OUT/call_check_cost_summary.txt" | sed 's/^/    /' >> "$SUMMARY"
  fi
fi

# ---- the CUDA IPC kernels' phase times, codec rings off and on ----------------------------------
if has perf_phases; then
  if [ -z "$PERF" ]; then
    log "perf_phases: no coccl_perf under $BDIR"
    status=1
  else
    OUT=$OUT bash perf/scripts/phase_sweep.sh "$PERF" > "$OUT/phase_sweep_summary.txt" 2>&1
    rc=$?
    log "perf_phases exit $rc (phase_sweep.txt, phase_model.md)"
    [ $rc -ne 0 ] && status=1
  fi
fi

# ---- a codec plug-in on the device path ------------------------------------------------------
# examples/codec_plugin (q8, with device launchers) built against an install of this build,
# loaded by bare name, run by the installed coccl_perf (checked: #wrong must be 0) on the CUDA
# IPC path (the staged pipeline with the P2P kernel) and over NCCL (one NCCL_HOSTID per rank).
if has plugin; then
  prefix=$ROOT/$BDIR/prefix
  PLOG=$OUT/plugin.log
  : > "$PLOG"
  if cmake --install "$BDIR" --prefix "$prefix" >> "$PLOG" 2>&1 &&
     cmake -S "$ROOT/examples/codec_plugin" -B "$BDIR/q8" -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_INSTALL_PREFIX="$prefix" \
       -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" >> "$PLOG" 2>&1 &&
     ninja -C "$BDIR/q8" install >> "$PLOG" 2>&1; then
    log "plugin: q8 built and installed into $prefix"
    SAVED_PERF=$PERF
    PERF=$prefix/bin/coccl_perf
    export PERF_LOG=$PLOG
    for tp in cuda_ipc nccl; do
      for coll in all_reduce reduce_scatter all_gather; do
        for dt in bfloat16 float; do
          echo "### $coll --mem device -np 2 -d $dt --codec q8, COCCL_DEVICE_TRANSPORT=$tp" >> "$PLOG"
          COCCL_CODEC_PLUGIN=q8 COCCL_DEVICE_TRANSPORT=$tp NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} \
            NCCL_NVLS_ENABLE=0 launch 2 "$coll" --mem device -d "$dt" -b 64K -e 16M -f 4 -n 3 -w 1 \
            -c 1 --codec q8
          rc=$?
          log "plugin $tp $coll $dt exit $rc"
          [ $rc -ne 0 ] && status=1
        done
      done
    done
    if [ -n "${COCCL_DATA_DIR:-}" ]; then
      echo "### all_reduce --input (real TP tensors) --mem device -np 4 --codec q8" >> "$PLOG"
      COCCL_CODEC_PLUGIN=q8 launch 4 all_reduce --input "$COCCL_DATA_DIR/tp_tensors_manifest.json" \
        --mem device --codec q8 -n 3 -w 1
      rc=$?
      log "plugin --input exit $rc"
      [ $rc -ne 0 ] && status=1
      grep -E "relL2 over|Result" "$PLOG" | tail -2 | tee -a "$SUMMARY"
    fi
    unset PERF_LOG
    PERF=$SAVED_PERF
    grep -E "^###|^ +[0-9]+ +[0-9]+ +(bfloat16|float)|Identical|wrong" "$PLOG" | head -100 >> "$SUMMARY"
  else
    log "plugin: building examples/codec_plugin FAILED (plugin.log)"
    tail -20 "$PLOG"
    status=1
  fi
fi

# ---- plug-in codec kernels: int4 and tah (plugins/) beside the built-ins and a copy -----------
if has kbench_plugins; then
  KB=$(find "$BDIR" -type f -name kernel_bench -perm -u+x | head -1)
  # kernel_bench links coccl statically: name the plug-ins by their paths in the build tree
  INT4=$(find "$BDIR" -name 'libcoccl-codec-int4.so' | head -1)
  TAH=$(find "$BDIR" -name 'libcoccl-codec-tah.so' | head -1)
  if [ -n "$KB" ] && [ -n "$INT4" ] && [ -n "$TAH" ]; then
    COCCL_CODEC_PLUGIN=$INT4,$TAH timeout 240 "$KB" --sizes 256 --dtypes bf16,fp32 \
      --codecs int4,int4:rotate=0,tah:row=4096,tah:row=1024,fp8_ash_ds --iters 5 --warmup 2 \
      > "$OUT/kbench_plugins.txt" 2>&1
    rc=$?
    log "kernel_bench int4, tah exit $rc"
    [ $rc -ne 0 ] && status=1
    tail -60 "$OUT/kbench_plugins.txt" >> "$SUMMARY"
  else
    log "kbench_plugins: no kernel_bench, libcoccl-codec-int4.so or libcoccl-codec-tah.so under $BDIR"
    status=1
  fi
fi

# ---- PyTorch through the shim, with the weight-difference all-gather ---------------------------
if has shim_torch; then
  SHIM_LIB=$(find "$BDIR" -name 'libnccl.so.2' -path '*nccl-tests-shim*' | head -1)
  if [ -z "$SHIM_LIB" ] || ! python3 -c "import torch" 2>/dev/null; then
    log "shim_torch: no libnccl.so.2 under $BDIR (COCCL_BUILD_SHIM) or no PyTorch"
    status=1
  else
    timeout 300 python3 nccl-tests-shim/torch_check.py --shim "$SHIM_LIB" --codec int8 --delta \
      > "$OUT/shim_torch.log" 2>&1
    rc=$?
    log "shim_torch (int8, --delta) exit $rc: $(tail -1 "$OUT/shim_torch.log")"
    [ $rc -ne 0 ] && status=1
    grep -E "^rank|FAIL|NOTE" "$OUT/shim_torch.log" | head -20 >> "$SUMMARY"
  fi
fi

# ---- pipeline Send/Recv through tah (issue 17's acceptance) ------------------------------------
# coccl_perf sendrecv on device buffers, 2 processes (each sends to rank+1), checked (-c 1): the
# codec's bound, the wire ratio; CUDA IPC and COCCL_DEVICE_TRANSPORT=nccl; then the captured
# pipeline activations (tests/data/pp_activations, hidden 384) through --input.
if has perf_pp; then
  TAH=$(find "$BDIR" -name 'libcoccl-codec-tah.so' | head -1)
  if [ -z "$PERF" ] || [ -z "$TAH" ]; then
    log "perf_pp: no coccl_perf or libcoccl-codec-tah.so under $BDIR"
    status=1
  else
    export PERF_LOG=$OUT/perf_pp.log
    : > "$PERF_LOG"
    for tp in cuda_ipc nccl; do
      for dt in bfloat16 float; do
        for codec in none tah:row=4096; do
          echo "### sendrecv --mem device -np 2 -d $dt --codec $codec, COCCL_DEVICE_TRANSPORT=$tp" >> "$PERF_LOG"
          COCCL_CODEC_PLUGIN=$TAH COCCL_DEVICE_TRANSPORT=$tp NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} \
            NCCL_NVLS_ENABLE=0 launch 2 sendrecv --mem device -d "$dt" -b 1M -e 64M -f 4 -n 5 -w 2 \
            -c 1 --codec "$codec"
          rc=$?
          log "perf_pp $tp $dt codec=$codec exit $rc"
          [ $rc -ne 0 ] && status=1
        done
      done
    done
    PPM=$ROOT/tests/data/pp_activations/manifest.json
    if [ -f "$PPM" ]; then
      for mem in device host; do
        echo "### sendrecv --input pp_activations --mem $mem -np 2 --codec tah:row=384" >> "$PERF_LOG"
        COCCL_CODEC_PLUGIN=$TAH launch 2 sendrecv --input "$PPM" --mem "$mem" --codec tah:row=384 \
          -n 3 -w 1
        rc=$?
        log "perf_pp --input mem=$mem exit $rc"
        [ $rc -ne 0 ] && status=1
      done
    fi
    unset PERF_LOG
    grep -E "^###|^ +[0-9]+ +[0-9]+ +(bfloat16|float)|relL2|wrong" "$OUT/perf_pp.log" | head -120 >> "$SUMMARY"
  fi
fi

log "done, status $status (logs in $OUT)"
exit $status
