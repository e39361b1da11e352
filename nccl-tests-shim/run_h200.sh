#!/usr/bin/env bash
# The shim on a GPU machine (made for the one-H200 machine: 2 ranks share GPU 0).
#   1. builds coccl and libnccl.so.2 (CUDA on), unless COCCL_SHIM names a built one;
#   2. builds nccl-tests from the source tree $1 (NVIDIA/nccl-tests 2.19) with MPI against the
#      system NCCL;
#   3. runs all_reduce / reduce_scatter / all_gather / broadcast _perf, LD_PRELOADing the shim:
#      "nccl" (no shim, the baseline), "passthrough" (shim, COCCL_CODEC unset: everything goes to
#      NCCL, data checked with -c 1) and "compressed" (COCCL_CODEC=$CODEC, -c 0: lossy); on
#      request "exact_coccl" (shim, a policy giving every uncompressed collective to coccl's
#      kernels, -c 1) and "tuned" (shim, COCCL_POLICY=$POLICY, e.g. coccl_tune's table, -c 0),
#      then best_of.py: per size, tuned against the best of nccl / exact_coccl / compressed;
#   4. runs torch_check.py (PyTorch through the shim) in both modes.
# Logs go to $OUT (or $2, or ./shim-out). Exit status: non-zero if any step failed.
# usage: nccl-tests-shim/run_h200.sh NCCL_TESTS_SRC [OUT_DIR]
# env: COCCL_SHIM=path/libnccl.so.2  skip step 1
#      UCX_INCLUDE=dir               headers ucp/ ucs/ uct/ ucm/ when libucx-dev is missing and
#                                    the checkout has no .ucx/ (dpkg -x of libucx-dev, which
#                                    coccl's CMake finds by itself)
#      STEPS=nccl,passthrough,compressed,torch  which runs, commas or spaces (the builds always
#                 happen); also exact_coccl, tuned (needs POLICY=file)
#      NCCL_TYPES="float"  the types of the nccl baseline (include the tuned runs' types, e.g.
#                 "float bfloat16", or best_of.py compares without NCCL)
#      COMPRESS_MIN_BYTES  COCCL_COMPRESS_MIN_BYTES of the compressed runs (default: coccl's)
#      NP=2 CODEC=fp8_ash_ds MAXBYTES=64M NCCL_TESTS_DEVICE=0 RUN_TIMEOUT=300 (s per run)
#      TESTS="all_reduce reduce_scatter all_gather broadcast"  COMPRESSED_TYPES="float bfloat16"
#      USE_MPS=1  start a private MPS control daemon for the runs (stopped at exit): without
#                 it, the ranks' kernels on the one GPU are time-sliced (milliseconds a step)
# About 5-8 minutes on the one-H200 machine with the defaults (builds ~2 min).
set -uo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
src=${1:?usage: run_h200.sh NCCL_TESTS_SRC [OUT_DIR]}
src=$(cd "$src" && pwd)
out=${OUT:-${2:-$PWD/shim-out}}
mkdir -p "$out"
work=${WORK:-/tmp/coccl-shim-h200}
mkdir -p "$work"
NP=${NP:-2}
CODEC=${CODEC:-fp8_ash_ds}
MAXBYTES=${MAXBYTES:-64M}
STEPS=${STEPS:-nccl,passthrough,compressed,torch}
STEPS=${STEPS// /,}  # commas or spaces
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
read -r -a tests <<<"${TESTS:-all_reduce reduce_scatter all_gather broadcast}"
read -r -a ctypes <<<"${COMPRESSED_TYPES:-float bfloat16}"
want() { [[ ",$STEPS," == *",$1,"* ]]; }
status=0
step() { echo "=== $*" | tee -a "$out/summary.txt"; }
note() { echo "$*" | tee -a "$out/summary.txt"; }

# Multicast stays off on these machines (KINDS.md); one host: everything over loopback.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} COCCL_SOCKET_IFNAME=${COCCL_SOCKET_IFNAME:-lo}
export NCCL_TESTS_DEVICE=${NCCL_TESTS_DEVICE:-0}
unset COCCL_COMM_ID

# ---- 1. coccl + the shim ---------------------------------------------------------------------
if [ -z "${COCCL_SHIM:-}" ]; then
  step "build coccl + libnccl.so.2"
  if ! pkg-config --exists ucx && [ ! -d "$repo/.ucx/usr/include/ucp" ]; then
    [ -n "${UCX_INCLUDE:-}" ] || { note "no ucx.pc, no .ucx/ and no UCX_INCLUDE: cannot build coccl"; exit 1; }
    pc=$work/ucx-pc
    mkdir -p "$pc/lib"
    for l in ucp ucs uct ucm; do
      ln -sf "$(ls /usr/lib/x86_64-linux-gnu/lib$l.so.0 | head -1)" "$pc/lib/lib$l.so"
    done
    printf 'Name: ucx\nDescription: UCX (headers carried)\nVersion: 1.16.0\nCflags: -I%s\nLibs: -L%s -lucp -lucs\n' \
      "$(cd "$UCX_INCLUDE" && pwd)" "$pc/lib" >"$pc/ucx.pc"
    export PKG_CONFIG_PATH=$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  fi
  build=$work/build
  if cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOCCL_ENABLE_CUDA=ON \
       -DCMAKE_CUDA_ARCHITECTURES=90 -DCOCCL_BUILD_TESTS=OFF -DCOCCL_BUILD_PERF=OFF \
       >"$out/build_coccl.log" 2>&1 &&
     ninja -C "$build" nccl_shim >>"$out/build_coccl.log" 2>&1; then
    COCCL_SHIM=$build/nccl-tests-shim/libnccl.so.2
  else
    note "coccl build failed (build_coccl.log)"; tail -20 "$out/build_coccl.log"; exit 1
  fi
fi
COCCL_SHIM=$(readlink -f "$COCCL_SHIM")
note "shim: $COCCL_SHIM"
ldd "$COCCL_SHIM" >"$out/shim_ldd.txt" 2>&1
if grep -q "not found" "$out/shim_ldd.txt"; then note "shim dependencies missing:"; grep "not found" "$out/shim_ldd.txt"; exit 1; fi

# ---- 2. nccl-tests ---------------------------------------------------------------------------
step "build nccl-tests"
nt=$work/nccl-tests
MPI_HOME=${MPI_HOME:-/usr/lib/x86_64-linux-gnu/openmpi}
if ! make -C "$src" -j"$(nproc)" MPI=1 MPI_HOME="$MPI_HOME" CUDA_HOME=/usr/local/cuda NCCL_HOME="${NCCL_HOME:-/usr}" \
     NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$nt" >"$out/build_nccl_tests.log" 2>&1; then
  note "nccl-tests build failed (build_nccl_tests.log)"; tail -20 "$out/build_nccl_tests.log"; exit 1
fi
nm -D --undefined-only "$nt/all_reduce_perf" | awk '$2 ~ /^nccl/ {print $2}' | sort >"$out/nccl_tests_imports.txt"
if ! comm -23 "$out/nccl_tests_imports.txt" "$here/imports/nccl-tests-2.19.txt" | tee "$out/imports_not_listed.txt" | grep -q .; then
  note "all_reduce_perf's nccl imports are in imports/nccl-tests-2.19.txt"
else
  note "all_reduce_perf imports symbols missing from imports/nccl-tests-2.19.txt:"; cat "$out/imports_not_listed.txt"; status=1
fi

# ---- 3. runs ---------------------------------------------------------------------------------
if [ "${USE_MPS:-0}" = 1 ] && command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=$work/mps-pipe CUDA_MPS_LOG_DIRECTORY=$work/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d; then
    trap 'echo quit | nvidia-cuda-mps-control' EXIT
    note "MPS control daemon started (pipe $CUDA_MPS_PIPE_DIRECTORY)"
  fi
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$NP"
     --mca btl self,vader --mca btl_vader_single_copy_mechanism none
     -x NCCL_TESTS_DEVICE -x NCCL_NVLS_ENABLE -x NCCL_SOCKET_IFNAME -x COCCL_SOCKET_IFNAME
     -x NCCL_DEBUG=${NCCL_DEBUG:-WARN} -x COCCL_DEBUG=${COCCL_DEBUG:-WARN} -x PATH)
[ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && mpi+=(-x CUDA_MPS_PIPE_DIRECTORY)
[ -n "${LD_LIBRARY_PATH:-}" ] && mpi+=(-x LD_LIBRARY_PATH)
run() {  # run MODE TEST DTYPE CHECK [mpirun -x args...]
  local mode=$1 test=$2 dt=$3 check=$4
  shift 4
  local log="$out/${mode}_${test}_${dt}.log"
  note "--- $mode $test -d $dt -c $check"
  if timeout "$RUN_TIMEOUT" "${mpi[@]}" "$@" "$here/mpi_rank.sh" "$nt/${test}_perf" -b 8 -e "$MAXBYTES" -f 4 \
       -g 1 -d "$dt" -c "$check" -n 10 -w 3 >"$log" 2>&1; then
    grep -E "Avg bus bandwidth|Out of bounds" "$log" | tee -a "$out/summary.txt"
    if [ "$check" = 1 ] && awk '/^ +[0-9]+ +[0-9]+ / && ($9 != "0" || $13 != "0") {bad=1} END {exit !bad}' "$log"; then
      note "    data check reported wrong results"; status=1
    fi
  else
    note "    FAILED (rc $?): $(tail -3 "$log" | tr '\n' ' ')"; status=1
  fi
}
if want nccl; then
  step "nccl: the real NCCL alone (baseline)"
  for dt in ${NCCL_TYPES:-float}; do for t in "${tests[@]}"; do run nccl "$t" "$dt" 1; done; done
fi
if want passthrough; then
  step "passthrough: shim preloaded, COCCL_CODEC unset"
  for t in "${tests[@]}"; do run passthrough "$t" float 1 -x LD_PRELOAD="$COCCL_SHIM"; done
fi
if want compressed; then
  step "compressed: shim preloaded, COCCL_CODEC=$CODEC"
  for dt in "${ctypes[@]}"; do
    for t in "${tests[@]}"; do
      run compressed "$t" "$dt" 0 -x LD_PRELOAD="$COCCL_SHIM" -x COCCL_CODEC="$CODEC" \
        ${COMPRESS_MIN_BYTES:+-x COCCL_COMPRESS_MIN_BYTES=$COMPRESS_MIN_BYTES}
    done
  done
  if grep -l "no device path" "$out"/compressed_*.log >/dev/null 2>&1; then
    note "NOTE: coccl has no device path in this build: GPU buffers went to NCCL uncompressed"
  fi
fi

if want exact_coccl; then
  step "exact_coccl: shim preloaded, every uncompressed collective on coccl's kernels"
  echo '{"rules": [{"codec": "none", "exact": "coccl"}]}' >"$out/exact_coccl_policy.json"
  for dt in "${ctypes[@]}"; do
    for t in "${tests[@]}"; do
      [ "$t" = broadcast ] && continue  # always NCCL's
      run exact_coccl "$t" "$dt" 1 -x LD_PRELOAD="$COCCL_SHIM" \
        -x COCCL_POLICY="$out/exact_coccl_policy.json"
    done
  done
fi
if want tuned; then
  step "tuned: shim preloaded, COCCL_POLICY=${POLICY:?tuned needs POLICY=file}"
  for dt in "${ctypes[@]}"; do
    for t in "${tests[@]}"; do
      [ "$t" = broadcast ] && continue
      run tuned "$t" "$dt" 0 -x LD_PRELOAD="$COCCL_SHIM" -x COCCL_POLICY="$(readlink -f "$POLICY")"
      alone=()
      for m in nccl exact_coccl compressed; do
        [ -f "$out/${m}_${t}_${dt}.log" ] && alone+=("$m=$out/${m}_${t}_${dt}.log")
      done
      python3 "$here/best_of.py" "$out/tuned_${t}_${dt}.log" "${alone[@]}" \
        | tee "$out/best_of_${t}_${dt}.txt" | tail -1 | tee -a "$out/summary.txt"
    done
  done
fi

# ---- 4. PyTorch ------------------------------------------------------------------------------
if want torch; then
  step "PyTorch"
  if LD_PRELOAD="$COCCL_SHIM" python3 -c "import torch, torch.distributed; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())" \
       >"$out/torch_import.log" 2>&1; then
    note "import torch with the shim preloaded: $(tail -1 "$out/torch_import.log")"
  else
    note "import torch with the shim preloaded FAILED"; tail -5 "$out/torch_import.log"; status=1
  fi
  # policy: a COCCL_POLICY file compressing Send/Recv (the shim routes ncclSend / ncclRecv to
  # coccl) and AllReduce / ReduceScatter / AllGather with $CODEC.
  printf '{"rules": [{"collective": "sendrecv", "codec": "int8"}, {"codec": "%s"}]}\n' "$CODEC" \
    >"$out/torch_policy.json"
  for mode in passthrough compressed policy; do
    codec=""; policy=""
    [ $mode = compressed ] && codec=$CODEC
    [ $mode = policy ] && policy=$out/torch_policy.json
    if COCCL_CODEC=$codec COCCL_POLICY=$policy COCCL_DEBUG=${COCCL_DEBUG:-WARN} \
         timeout "$RUN_TIMEOUT" python3 "$here/torch_check.py" --shim "$COCCL_SHIM" \
         --codec "${codec:-${policy:+$CODEC}}" >"$out/torch_${mode}.log" 2>&1; then
      note "torch_check $mode: $(tail -1 "$out/torch_${mode}.log")"
    else
      note "torch_check $mode FAILED: $(tail -3 "$out/torch_${mode}.log" | tr '\n' ' ')"; status=1
    fi
  done
fi
step "done: status $status"
exit $status
