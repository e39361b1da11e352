#!/usr/bin/env bash
# Before and after a change, on one GPU machine, in one call: builds an older source tree
# (BASE_SRC, e.g. `git archive <commit> | tar x -C .base`) and this checkout side by side, then
# runs every measurement on base and head in turn:
#   1. kernel_bench: codec kernels (256 MiB, bf16 and fp32, fp8_ash_ds and int8) vs a copy;
#   2. coccl_perf all_reduce --mem device, 2 processes on GPU 0 (MPS), bf16, none and
#      fp8_ash_ds, 1 MiB .. PERF_MAX; 2s. the same from 8 B to 1 MiB (x8), the time per call
#      (SMALL_ITERS calls per size, default 200); 2b. the same with COCCL_DEVICE_TRANSPORT=nccl (one
#      NCCL_HOSTID per rank) to 256 MiB, for each collective of NCCL_COLLS (default all_reduce);
#   3. with NCCL_TESTS_SRC: nccl-tests all_reduce_perf (bf16, 1 MiB .. 256 MiB) with each tree's
#      libnccl.so.2 preloaded, COCCL_CODEC=fp8_ash_ds (2 MPI ranks on GPU 0).
# usage: OUT=dir perf/scripts/before_after.sh BASE_SRC [NCCL_TESTS_SRC]
# env: PERF_MAX (default 1G), SMALL_ITERS, NCCL_COLLS (e.g. "all_reduce all_gather"), ITERS (coccl_perf -n, default 10), JOBS (per build, default nproc/2)
# Results: $OUT/before_after.txt (busbw side by side with head/base ratios) and one log per
# tree and measurement.
set -uo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
head_src=$(cd "$here/../.." && pwd)
base_src=$(cd "${1:?usage: before_after.sh BASE_SRC [NCCL_TESTS_SRC]}" && pwd)
nt_src=${2:-}
out=${OUT:-$PWD/before-after}
mkdir -p "$out"
work=${WORK:-/tmp/coccl-before-after}
mkdir -p "$work"
PERF_MAX=${PERF_MAX:-1G}
NCCL_COLLS=${NCCL_COLLS:-all_reduce}
ITERS=${ITERS:-10}
SMALL_ITERS=${SMALL_ITERS:-200}
JOBS=${JOBS:-$(( $(nproc) / 2 ))}
sum=$out/before_after.txt
: >"$sum"
note() { echo "$*" | tee -a "$sum"; }
status=0
export NCCL_NVLS_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
export COCCL_SOCKET_IFNAME=${COCCL_SOCKET_IFNAME:-lo}
unset COCCL_COMM_ID

# ---- builds (in parallel) --------------------------------------------------------------------
build() {  # build NAME SRC
  local b=$work/build-$1
  cmake -S "$2" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOCCL_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCOCCL_BUILD_TESTS=OFF >"$work/build-$1.log" 2>&1 &&
    ninja -C "$b" -j "$JOBS" >>"$work/build-$1.log" 2>&1
}
t0=$(date +%s)
# The base tree finds .ucx/ beside its own sources: share this checkout's.
[ -d "$head_src/.ucx" ] && [ ! -e "$base_src/.ucx" ] && ln -s "$head_src/.ucx" "$base_src/.ucx"
build base "$base_src" & pb=$!
build head "$head_src" & ph=$!
wait $pb || { note "base build FAILED"; tail -20 "$work/build-base.log"; exit 1; }
wait $ph || { note "head build FAILED"; tail -20 "$work/build-head.log"; exit 1; }
note "# builds done in $(( $(date +%s) - t0 )) s; base $base_src, head $head_src"
bin() { find "$work/build-$1" -type f -name "$2" -perm -u+x | head -1; }

if command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=$work/mps-pipe CUDA_MPS_LOG_DIRECTORY=$work/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && trap 'echo quit | nvidia-cuda-mps-control' EXIT
fi

# ---- 1. kernel_bench -------------------------------------------------------------------------
for t in base head; do
  timeout 240 "$(bin $t kernel_bench)" --sizes 256 --dtypes bf16,fp32 --codecs fp8_ash_ds,int8 \
    --iters 10 --warmup 3 >"$out/kernel_$t.txt" 2>&1 || { note "kernel_bench $t FAILED"; status=1; }
done
note "## kernel_bench, 256 MiB: GB/s base | head | head/base"
ktable() { sed 's/ (unfused)/-unfused/' "$1" | awk '/^op +codec +dtype/ {on = 1; next} on && NF >= 8 {print $1, $2, $3, $5, $7}'; }
paste -d' ' <(ktable "$out/kernel_base.txt") <(ktable "$out/kernel_head.txt" | awk '{print $5}') |
  awk '{printf "%-20s %-16s %-5s p=%-2s %9s %9s %6.3f\n", $1, $2, $3, $4, $5, $6, ($5 > 0 ? $6 / $5 : 0)}' >>"$sum"

# ---- 2. coccl_perf, device AllReduce, 2 processes ----------------------------------------------
launch() {  # launch TREE LOG args...: torchrun-style variables, all ranks on device 0
  local tree=$1 log=$2 n=2 port=$(( 20000 + (RANDOM % 20000) )) pids=() rc
  shift 2
  local perf
  perf=$(bin "$tree" coccl_perf)
  # NCCL accepts several ranks on one GPU with one NCCL_HOSTID each (COCCL_DEVICE_TRANSPORT=nccl)
  for ((r = 1; r < n; ++r)); do
    NCCL_HOSTID=coccl-ba-$r RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      timeout 300 "$perf" "$@" >/dev/null 2>>"$log" & pids+=($!)
  done
  NCCL_HOSTID=coccl-ba-0 RANK=0 WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout 300 "$perf" "$@" >>"$log" 2>&1
  rc=$?
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}
for codec in none fp8_ash_ds; do
  for t in base head; do
    echo "### $codec" >>"$out/perf_$t.txt"
    launch $t "$out/perf_$t.txt" all_reduce --mem device -d bfloat16 -b 1M -e "$PERF_MAX" -f 4 \
      -n "$ITERS" -w 3 -c 0 --codec "$codec" || { note "coccl_perf $t $codec FAILED"; status=1; }
  done
done
column() {  # column FILE CODEC N: size and column N (8: out-of-place busbw, 6: time) of a sweep
  awk -v c="$2" -v n="$3" '/^### / {on = ($2 == c); next} on && /^ +[0-9]+ +[0-9]+ +bfloat16/ {print $1, $n}' "$1"
}
sidebyside() {  # sidebyside PREFIX CODEC N: base and head of $out/PREFIX_{base,head}.txt, and head/base
  join <(column "$out/$1_base.txt" "$2" "$3") <(column "$out/$1_head.txt" "$2" "$3") |
    awk '{printf "%12s %10s %10s %6.3f\n", $1, $2, $3, ($2 > 0 ? $3 / $2 : 0)}' >>"$sum"
}
for codec in none fp8_ash_ds; do
  note "## coccl_perf all_reduce --mem device, 2 procs, bf16, --codec $codec: size, busbw base | head | head/base"
  sidebyside perf $codec 8
done

# ---- 2s. small messages: latency (out-of-place time, us), 8 B .. 1 MiB, CUDA IPC, 2 processes --
for codec in none fp8_ash_ds; do
  for t in base head; do
    echo "### $codec" >>"$out/small_$t.txt"
    launch $t "$out/small_$t.txt" all_reduce --mem device -d bfloat16 -b 8 -e 1M -f 8 \
      -n "$SMALL_ITERS" -w 20 -c 0 --codec "$codec" || { note "coccl_perf small $t $codec FAILED"; status=1; }
  done
done
for codec in none fp8_ash_ds; do
  note "## coccl_perf all_reduce --mem device, 2 procs, bf16, --codec $codec, small: size, time (us) base | head | head/base"
  sidebyside small $codec 6
done

# ---- 2b. the same over the NCCL transport (the staged codec pipeline), up to 256 MiB, for each
# collective of NCCL_COLLS -----------------------------------------------------------------------
for coll in $NCCL_COLLS; do
  for codec in none fp8_ash_ds; do
    for t in base head; do
      echo "### $codec" >>"$out/perf_nccl_${coll}_$t.txt"
      COCCL_DEVICE_TRANSPORT=nccl launch $t "$out/perf_nccl_${coll}_$t.txt" "$coll" --mem device \
        -d bfloat16 -b 1M -e 256M -f 4 -n "$ITERS" -w 3 -c 0 --codec "$codec" ||
        { note "coccl_perf nccl transport $coll $t $codec FAILED"; status=1; }
    done
  done
  for codec in none fp8_ash_ds; do
    note "## coccl_perf $coll --mem device, COCCL_DEVICE_TRANSPORT=nccl, 2 procs, bf16, --codec $codec: size, busbw base | head | head/base"
    sidebyside "perf_nccl_${coll}" $codec 8
  done
done

# ---- 3. nccl-tests through each tree's shim ------------------------------------------------------
if [ -n "$nt_src" ]; then
  nt=$work/nccl-tests
  MPI_HOME=${MPI_HOME:-/usr/lib/x86_64-linux-gnu/openmpi}
  if make -C "$nt_src" -j"$(nproc)" MPI=1 MPI_HOME="$MPI_HOME" CUDA_HOME=/usr/local/cuda \
       NCCL_HOME=/usr NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$nt" \
       >"$work/nccl-tests.log" 2>&1; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_TESTS_DEVICE=0
    for t in base head; do
      shim=$(find "$work/build-$t" -name libnccl.so.2 | head -1)
      timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
        --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
        -x NCCL_TESTS_DEVICE -x NCCL_NVLS_ENABLE -x NCCL_SOCKET_IFNAME -x COCCL_SOCKET_IFNAME \
        -x CUDA_MPS_PIPE_DIRECTORY -x LD_PRELOAD="$shim" -x COCCL_CODEC=fp8_ash_ds -x PATH \
        "$head_src/nccl-tests-shim/mpi_rank.sh" "$nt/all_reduce_perf" -b 1M -e 256M -f 4 -g 1 \
        -d bfloat16 -c 0 -n "$ITERS" -w 3 >"$out/shim_$t.txt" 2>&1 ||
        { note "nccl-tests through the $t shim FAILED"; status=1; }
    done
    note "## nccl-tests all_reduce_perf -d bfloat16 through the shim, COCCL_CODEC=fp8_ash_ds: size, busbw base | head | head/base"
    shimrows() { awk '/^ +[0-9]+ +[0-9]+ +bfloat16/ {print $1, $8}' "$1"; }
    join <(shimrows "$out/shim_base.txt") <(shimrows "$out/shim_head.txt") |
      awk '{printf "%12s %10s %10s %6.3f\n", $1, $2, $3, ($2 > 0 ? $3 / $2 : 0)}' >>"$sum"
  else
    note "nccl-tests build FAILED"; tail -10 "$work/nccl-tests.log"; status=1
  fi
fi
note "# done in $(( $(date +%s) - t0 )) s, status $status"
exit $status
