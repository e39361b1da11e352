#!/usr/bin/env bash
# The measured policy tables of the one-GPU machine (one H200, ranks as processes sharing it with
# MPS): coccl_tune.py per world size in NPS, device buffers, the three ways to run a call side by
# side (the real NCCL over its socket transport, coccl's kernels over CUDA IPC, coccl compressed
# with CODECS), then --check (the table against the best of the three alone at every size).
# Tables: $OUT/h200-1gpu-<N>proc.json (commit them under perf/policy/tuned/); logs: $OUT/tune-*.
# TRANSPORT=nccl measures the NCCL transport instead (COCCL_DEVICE_TRANSPORT=nccl, where NCCL
# runs every uncompressed call: the real NCCL against coccl compressed over NCCL), into
# $OUT/h200-1gpu-<N>proc-nccl.json.
# usage: OUT=dir perf/scripts/tune_h200.sh BUILD_DIR
# env: NPS ("2 4"), COLLS (all_reduce,reduce_scatter,all_gather), DTYPES (bfloat16,float),
#      CODECS (fp8_ash_ds), MIN (8), MAX (1G; MAX_4 for 4 and more ranks), FACTOR (4), ITERS (5),
#      SPLIT (64M: smaller sizes get SMALL_ITERS, 40; the tables of 2026-12-03 used 1M); every measured table in $OUT/tables-<N>proc/
set -uo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: tune_h200.sh BUILD_DIR}" && pwd)
out=${OUT:-$PWD/tune-out}
mkdir -p "$out"
perf=$(find "$build" -type f -name coccl_perf -perm -u+x | head -1)
[ -n "$perf" ] || { echo "no coccl_perf under $build" >&2; exit 1; }
export NCCL_NVLS_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
export COCCL_SOCKET_IFNAME=${COCCL_SOCKET_IFNAME:-lo}
unset COCCL_COMM_ID COCCL_POLICY COCCL_DEVICE_EXACT
exact=nccl,coccl suffix=""
if [ "${TRANSPORT:-cuda_ipc}" = nccl ]; then
  export COCCL_DEVICE_TRANSPORT=nccl
  exact=default suffix=-nccl
fi
if command -v nvidia-cuda-mps-control >/dev/null && [ -z "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/coccl-tune-mps CUDA_MPS_LOG_DIRECTORY=/tmp/coccl-tune-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && trap 'echo quit | nvidia-cuda-mps-control' EXIT
fi
status=0
for np in ${NPS:-2 4}; do
  max=${MAX:-1G}
  [ "$np" -ge 4 ] && max=${MAX_4:-$max}
  t0=$(date +%s)
  if python3 "$here/coccl_tune.py" --perf "$perf" --launch "$here/local_ranks.sh $np" --mem device \
      --exact "$exact" --codecs "${CODECS:-fp8_ash_ds}" --colls "${COLLS:-all_reduce,reduce_scatter,all_gather}" \
      --dtypes "${DTYPES:-bfloat16,float}" --min "${MIN:-8}" --max "$max" --factor "${FACTOR:-4}" \
      --iters "${ITERS:-5}" --split "${SPLIT:-64M}" --small-iters "${SMALL_ITERS:-40}" --keep "$out/tables-${np}proc$suffix" --check --out "$out/h200-1gpu-${np}proc$suffix.json" >"$out/tune-${np}proc$suffix.log" 2>&1; then
    echo "$np processes: $(tail -1 "$out/tune-${np}proc$suffix.log") ($(( $(date +%s) - t0 )) s)"
  else
    echo "$np processes: coccl_tune FAILED: $(tail -5 "$out/tune-${np}proc$suffix.log" | tr '\n' ' ')"
    status=1
  fi
done
exit $status
