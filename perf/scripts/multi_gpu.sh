#!/usr/bin/env bash
# Multi-GPU measurements (issue: coccl vs NCCL on 2-8 H200s). On one host with N GPUs:
#   1. builds coccl (CUDA, sm_90) with coccl_perf and the libnccl.so.2 shim, and nccl-tests from
#      the source tree $NCCL_TESTS_SRC (unmodified, against the system NCCL);
#   2. coccl_perf all_reduce / reduce_scatter / all_gather on n = 2, 4, 8 GPUs (n <= N), one
#      process per GPU, bf16 and fp32, 1 MiB .. 1 GiB: codecs none (coccl's own exact kernels,
#      COCCL_DEVICE_EXACT=coccl; NCCL has its own column), fp8_ash_ds, int8;
#   3. nccl-tests' all_reduce / reduce_scatter / all_gather _perf on the same n, same sizes:
#      plain NCCL, then with the shim preloaded and COCCL_CODEC=fp8_ash_ds (-c 0);
#   4. a tensor-parallel GPT (perf/scripts/tp_gpt.py, TP = n) through torchrun, with and without
#      the shim: tokens/s and the loss after the same number of steps;
#   5. summary.md: busbw side by side per size (coccl none / fp8 / int8 / NCCL / shim) with each
#      codec's ratio to NCCL per size (64 MiB and 1 GiB among them), and the smallest size from
#      which fp8_ash_ds stays ahead of NCCL.
# usage: OUT=dir NCCL_TESTS_SRC=path perf/scripts/multi_gpu.sh
# env: NS="2 4 8" TYPES="bfloat16 float" COLLS="all_reduce reduce_scatter all_gather"
#      MAXBYTES=1G ITERS=10 STEPS="build coccl nccl tp" TP_STEPS=200 RUN_TIMEOUT=600
# Multicast stays off (KINDS.md of the device machines): NCCL_NVLS_ENABLE=0.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-$ROOT/multi-gpu-out}
mkdir -p "$OUT"
STEPS=${STEPS:-build coccl nccl tp}
TYPES=${TYPES:-bfloat16 float}
COLLS=${COLLS:-all_reduce reduce_scatter all_gather}
MAXBYTES=${MAXBYTES:-1G}
ITERS=${ITERS:-10}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
BDIR=${BUILD_DIR:-build-multi}
NT=${NT_BUILD:-/tmp/coccl-nccl-tests}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
has() { [[ " $STEPS " == *" $1 "* ]]; }
log() { echo "[multi_gpu $(date +%T)] $*" | tee -a "$OUT/log.txt"; }
status=0

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")
log "GPUs: $NGPU ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
NS_ALL=${NS:-2 4 8}
NS=""
for n in $NS_ALL; do [ "$n" -le "$NGPU" ] && NS="$NS $n"; done
[ -n "$NS" ] || { log "fewer than 2 GPUs: nothing to measure"; exit 1; }

if has build; then
  log "build coccl ($BDIR)"
  cmake -S "$ROOT" -B "$BDIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOCCL_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCOCCL_BUILD_TESTS=OFF > "$OUT/build.log" 2>&1 &&
    ninja -C "$BDIR" >> "$OUT/build.log" 2>&1 || { log "coccl build FAILED"; exit 1; }
  if [ -n "${NCCL_TESTS_SRC:-}" ]; then
    log "build nccl-tests"
    make -C "$NCCL_TESTS_SRC" -j"$(nproc)" MPI=1 MPI_HOME=${MPI_HOME:-/usr/lib/x86_64-linux-gnu/openmpi} \
      CUDA_HOME=/usr/local/cuda NCCL_HOME=${NCCL_HOME:-/usr} \
      NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$NT" > "$OUT/build_nccl_tests.log" 2>&1 ||
      { log "nccl-tests build FAILED"; status=1; }
  fi
fi
PERF=$BDIR/perf/coccl_perf/coccl_perf
SHIM=$(readlink -f "$BDIR/nccl-tests-shim/libnccl.so.2" 2>/dev/null || true)
if [ -z "$SHIM" ] || [ ! -f "$SHIM" ]; then
  log "no shim under $BDIR: the shim runs (nccl-tests, tp) are skipped"
  SHIM=""
fi

# n, then coccl_perf arguments: one process per GPU (torchrun variables, LOCAL_RANK = GPU).
launch() {
  local n=$1
  shift
  local port=$((20000 + RANDOM % 20000)) pids=() rc
  for ((r = 1; r < n; ++r)); do
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      COCCL_DEVICE_EXACT=coccl timeout "$RUN_TIMEOUT" "$PERF" "$@" > /dev/null 2>> "$OUT/coccl_stderr.log" &
    pids+=($!)
  done
  RANK=0 WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    COCCL_DEVICE_EXACT=coccl timeout "$RUN_TIMEOUT" "$PERF" "$@"
  rc=$?
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}

# The out-of-place busbw columns of nccl-tests / coccl_perf tables side by side: one line per
# size of the first file, "size busbw1 busbw2 ...", "-" where a file lacks the size (or is
# missing).
merge() {
  local files=() f
  for f in "$@"; do [ -r "$f" ] && files+=("$f") || files+=(/dev/null); done
  awk -v nf=$# 'BEGIN { for (i = 1; i < ARGC; ++i) pos[ARGV[i]] = i }
       /^ +[0-9]+ +[0-9]+ / { f = pos[FILENAME]; v[f, $1] = $8; if (f == 1) order[++n] = $1 }
       END { for (i = 1; i <= n; ++i) { line = order[i]
               for (k = 1; k <= nf; ++k) line = line " " ((k, order[i]) in v ? v[k, order[i]] : "-")
               print line } }' "${files[@]}"
}

if has coccl; then
  for n in $NS; do
    for coll in $COLLS; do
      for dt in $TYPES; do
        for codec in none fp8_ash_ds int8; do
          f="$OUT/coccl_${coll}_${dt}_${codec}_n${n}.txt"
          log "coccl_perf $coll -d $dt --codec $codec on $n GPUs"
          launch "$n" "$coll" --mem device -d "$dt" -b 1M -e "$MAXBYTES" -f 4 -n "$ITERS" -w 3 \
            -c 0 --codec "$codec" > "$f" 2>&1 || { log "  FAILED (see $f)"; status=1; }
        done
      done
    done
  done
fi

mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none
     -x NCCL_NVLS_ENABLE -x PATH -x NCCL_DEBUG=${NCCL_DEBUG:-WARN} -x COCCL_DEBUG=${COCCL_DEBUG:-WARN})
if has nccl && [ ! -x "$NT/all_reduce_perf" ]; then
  log "no nccl-tests under $NT (set NCCL_TESTS_SRC): the NCCL columns stay empty"
fi
if has nccl && [ -x "$NT/all_reduce_perf" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for n in $NS; do
    for coll in $COLLS; do
      for dt in $TYPES; do
        log "nccl-tests ${coll}_perf -d $dt on $n GPUs: NCCL, then shim + fp8_ash_ds"
        timeout "$RUN_TIMEOUT" "${mpi[@]}" -np "$n" "$NT/${coll}_perf" -b 1M -e "$MAXBYTES" -f 4 \
          -g 1 -d "$dt" -c 1 -n "$ITERS" -w 3 > "$OUT/nccl_${coll}_${dt}_n${n}.txt" 2>&1 || status=1
        if [ -n "$SHIM" ]; then
          timeout "$RUN_TIMEOUT" "${mpi[@]}" -np "$n" -x LD_PRELOAD="$SHIM" -x COCCL_CODEC=fp8_ash_ds \
            "$NT/${coll}_perf" -b 1M -e "$MAXBYTES" -f 4 -g 1 -d "$dt" -c 0 -n "$ITERS" -w 3 \
            > "$OUT/shim_${coll}_${dt}_n${n}.txt" 2>&1 || status=1
        fi
      done
    done
  done
fi

if has tp; then
  for n in $NS; do
    for mode in nccl ${SHIM:+shim}; do
      pre=()
      [ $mode = shim ] && pre=(env LD_PRELOAD="$SHIM" COCCL_CODEC=fp8_ash_ds)
      log "tp_gpt.py TP=$n ($mode)"
      timeout "$RUN_TIMEOUT" "${pre[@]}" torchrun --standalone --nproc_per_node "$n" \
        perf/scripts/tp_gpt.py --steps "${TP_STEPS:-200}" > "$OUT/tp_${mode}_n${n}.txt" 2>&1 ||
        { log "  FAILED"; status=1; }
      tail -1 "$OUT/tp_${mode}_n${n}.txt" | tee -a "$OUT/log.txt"
    done
  done
fi

# ---- summary ---------------------------------------------------------------------------------
{
  echo "# Multi-GPU summary ($(date -u +%F), $NGPU x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
  for n in $NS; do
    for coll in $COLLS; do
      for dt in $TYPES; do
        b="$OUT/coccl_${coll}_${dt}"
        [ -f "${b}_none_n${n}.txt" ] || continue
        echo
        echo "## $coll $dt, $n GPUs: out-of-place busbw (GB/s)"
        echo "| size | coccl none | coccl fp8_ash_ds | coccl int8 | NCCL | shim fp8_ash_ds | fp8 / NCCL | int8 / NCCL |"
        echo "|---|---|---|---|---|---|---|---|"
        merge "${b}_none_n${n}.txt" "${b}_fp8_ash_ds_n${n}.txt" "${b}_int8_n${n}.txt" \
          "$OUT/nccl_${coll}_${dt}_n${n}.txt" "$OUT/shim_${coll}_${dt}_n${n}.txt" |
          awk '{ r1 = ($5 != "-" && $5 > 0) ? sprintf("%.2fx", $3 / $5) : "-";
                 r2 = ($5 != "-" && $5 > 0) ? sprintf("%.2fx", $4 / $5) : "-";
                 printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, r1, r2;
                 if ($5 != "-") { s[NR] = $1; a[NR] = $3 > $5; n = NR } }
               END { c = "never"; for (k = n; k >= 1 && a[k]; --k) c = s[k];
                     printf "\nfp8_ash_ds ahead of NCCL from %s bytes on\n", c }'
      done
    done
  done
  echo
  echo "## tensor-parallel GPT (tp_gpt.py): last line of each run"
  for f in "$OUT"/tp_*_n*.txt; do [ -f "$f" ] && echo "- $(basename "$f" .txt): $(tail -1 "$f")"; done
} > "$OUT/summary.md"
log "done, status $status (summary in $OUT/summary.md)"
exit $status
