#!/usr/bin/env bash
# The convergence comparison: trains perf/train/train.py (a byte-level GPT, TP x DP x PP
# processes) once per run below, with the same weights, data order and schedule, differing only
# in communication: NCCL alone (two seeds: the noise floor) or the coccl libnccl.so.2 shim
# preloaded with a codec on the TP all-reduces or the DP gradient reduce-scatter. Then
# plot.py writes $OUT/table.md and $OUT/curves.png.
#
# usage: perf/train/compare.sh DATA_DIR OUT_DIR      (DATA_DIR: perf/train/corpus.py's output)
# env:  SHIM      the shim (default build-gpu/nccl-tests-shim/libnccl.so.2)
#       INT4, TAH the int4 and tah plug-ins (default: the build tree's, beside libcoccl.so;
#                 the shim carries coccl inside it, so a bare name is looked up beside the shim)
#       RUNS      run names (default: all below, in that order)
#       PARALLEL  runs at once on the machine (default 2; ranks share GPUs through MPS; above 1
#                 COCCL_DEVICE_BLOCKS defaults to 8 so that every run's kernels fit together)
#       NPROC     processes per run (default 4)
#       TRAIN_ARGS train.py arguments (default "--tp 2 --dp 2 --steps 2000")
#       RUN_TIMEOUT seconds per run (default 900)
#       USE_MPS=1 start a private MPS control daemon (stopped at exit)
#       KEEP_LOGS=1 keep each rank's COCCL_DEBUG=INFO log ($OUT/<run>.coccl.<pid>.log)
# Runs (name: what differs):
#   base_s1, base_s2  NCCL, seeds 1 and 2 (no shim)
#   exact_shim        the shim, nothing compressed (COCCL_CODEC unset)
#   fp8_tp            TP all-reduces through fp8_ash_ds (TACO's ASH + DS)
#   int8_tp           TP all-reduces through int8 (per block, rotate=auto)
#   fp8_noscale_tp    fp8_ash_ds without the adaptive scale (alpha_min = alpha_max = 1)
#   fp8_nohad_tp      fp8_ash_ds without the Hadamard transform (rotate=0: per-block absmax E4M3)
#   int4_tp           TP all-reduces through the int4 plug-in (15 levels, block 128)
#   int4_dp           DP gradient reduce-scatter (fp32) through int4
#   int4_dp_wd        SDP4Bit's pair on one host: the DP gradient reduce-scatter through int4
#                     and the parameter all-gather as a weight-difference AllGather through
#                     int4 (perf/policy/dp-int4-wd.json, "delta": true)
#   tah_pp            PP Send/Recv (activations and their gradients) through tah:row=512
#                     (needs --pp 2 in TRAIN_ARGS; row = --dmodel)
#   tah_pp_warm       tah_pp after an uncompressed warm-up of 100 steps (TAH-Quant's recipe:
#                     perf/policy/pp-tah-warmup.json, "warmup_calls": 400; --pp 2)
#   tah_pp_up         tah on the activations alone (messages up the pipeline), their gradients
#                     coming back exact (perf/policy/pp-tah-up.json, "direction": "up"; --pp 2)
#   tah_pp_mixed      tah on the activations, int8 blocks on their gradients
#                     (perf/policy/pp-tah-up-int8-down.json; --pp 2)
#   tah_pp_low0       tah_pp with every row 4-bit (tah:row=512,low=0: 4.5 bits an element; --pp 2)
#   tp_fp8_pp_tah     the 3D demonstration: perf/policy/tp2-pp2.json picks fp8_ash_ds for the TP
#                     groups' collectives and tah for the pipeline's Send/Recv (--tp 2 --pp 2)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
DATA=${1:?usage: compare.sh DATA_DIR OUT_DIR}
OUT=${2:?usage: compare.sh DATA_DIR OUT_DIR}
mkdir -p "$OUT"
SHIM=${SHIM:-$root/build-gpu/nccl-tests-shim/libnccl.so.2}
INT4=${INT4:-$(dirname "$SHIM")/../src/api/coccl/libcoccl-codec-int4.so}
TAH=${TAH:-$(dirname "$SHIM")/../src/api/coccl/libcoccl-codec-tah.so}
PARALLEL=${PARALLEL:-2}
# Runs side by side share the GPU's SMs: coccl's kernels in flight must fit on it together
# (README, "GPU buffers"), so fewer blocks a kernel than the auto rule's 32 for one run.
if [ "$PARALLEL" -gt 1 ] && [ -z "${COCCL_DEVICE_BLOCKS:-}" ]; then export COCCL_DEVICE_BLOCKS=8; fi
NPROC=${NPROC:-4}
TRAIN_ARGS=${TRAIN_ARGS:---tp 2 --dp 2 --steps 2000}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
ALL="base_s1 base_s2 exact_shim fp8_tp int8_tp fp8_noscale_tp fp8_nohad_tp int4_tp int4_dp"
RUNS=${RUNS:-$ALL}

# The environment of a run: "seed shim VAR=value ..." (shim: 1 to preload it).
spec() {
  case $1 in
    base_s1) echo "1 0" ;;
    base_s2) echo "2 0" ;;
    exact_shim) echo "1 1" ;;
    fp8_tp) echo "1 1 COCCL_CODEC_ALLREDUCE=fp8_ash_ds" ;;
    int8_tp) echo "1 1 COCCL_CODEC_ALLREDUCE=int8" ;;
    fp8_noscale_tp) echo "1 1 COCCL_CODEC_ALLREDUCE=fp8_ash_ds:alpha_min=1,alpha_max=1" ;;
    fp8_nohad_tp) echo "1 1 COCCL_CODEC_ALLREDUCE=fp8_ash_ds:rotate=0" ;;
    int4_tp) echo "1 1 COCCL_CODEC_PLUGIN=$INT4 COCCL_CODEC_ALLREDUCE=int4" ;;
    int4_dp) echo "1 1 COCCL_CODEC_PLUGIN=$INT4 COCCL_CODEC_REDUCESCATTER=int4" ;;
    int4_dp_wd) echo "1 1 COCCL_CODEC_PLUGIN=$INT4 COCCL_POLICY=$root/perf/policy/dp-int4-wd.json" ;;
    tah_pp) echo "1 1 COCCL_CODEC_PLUGIN=$TAH COCCL_CODEC_SENDRECV=tah:row=512" ;;
    tah_pp_warm) echo "1 1 COCCL_CODEC_PLUGIN=$TAH COCCL_POLICY=$root/perf/policy/pp-tah-warmup.json" ;;
    tah_pp_up) echo "1 1 COCCL_CODEC_PLUGIN=$TAH COCCL_POLICY=$root/perf/policy/pp-tah-up.json" ;;
    tah_pp_mixed) echo "1 1 COCCL_CODEC_PLUGIN=$TAH COCCL_POLICY=$root/perf/policy/pp-tah-up-int8-down.json" ;;
    tah_pp_low0) echo "1 1 COCCL_CODEC_PLUGIN=$TAH COCCL_CODEC_SENDRECV=tah:row=512,low=0" ;;
    tp_fp8_pp_tah) echo "1 1 COCCL_CODEC_PLUGIN=$TAH COCCL_POLICY=$root/perf/policy/tp2-pp2.json" ;;
    *) return 1 ;;
  esac
}

if [ "${USE_MPS:-0}" = 1 ] && command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/train-mps-pipe-$$ CUDA_MPS_LOG_DIRECTORY=/tmp/train-mps-log-$$
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && trap 'echo quit | nvidia-cuda-mps-control' EXIT
fi

run() {
  local name=$1 s seed shim
  s=$(spec "$name") || { echo "compare.sh: unknown run $name" >&2; return 1; }
  read -r seed shim rest <<<"$s"
  local -a envs=(env -u COCCL_CODEC -u COCCL_CODEC_ALLREDUCE -u COCCL_CODEC_REDUCESCATTER
                 -u COCCL_CODEC_ALLGATHER -u COCCL_CODEC_SENDRECV -u COCCL_POLICY COCCL_DEBUG=INFO COCCL_DEBUG_SUBSYS=COLL
                 "COCCL_DEBUG_FILE=$OUT/$name.coccl.%p.log")
  # shellcheck disable=SC2206
  envs+=($rest)
  [ "$shim" = 1 ] && envs+=("LD_PRELOAD=$SHIM")
  rm -f "$OUT/$name.csv" "$OUT/$name".coccl.*.log
  echo "[$(date +%T)] start $name: seed $seed, shim $shim, ${rest:-no codec}"
  # shellcheck disable=SC2086
  timeout "$RUN_TIMEOUT" "${envs[@]}" python3 -m torch.distributed.run --standalone \
    --nproc-per-node "$NPROC" "$here/train.py" --data "$DATA" --csv "$OUT/$name.csv" \
    --tag "$name" --seed "$seed" $TRAIN_ARGS >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "[$(date +%T)] done $name (status $rc): $(grep '^result:' "$OUT/$name.log" | tail -1)"
  # what coccl ran compressed, per communicator (rank lines at destroy)
  cat "$OUT/$name".coccl.*.log 2>/dev/null | grep -h "compressed" | sed 's/^[^ ]* //' \
    | sort | uniq -c | head -20 >"$OUT/$name.coccl.txt"
  [ "${KEEP_LOGS:-0}" = 1 ] || rm -f "$OUT/$name".coccl.*.log
  return $rc
}

status=0
for name in $RUNS; do
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n || status=1; done
  run "$name" &
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || status=1; done
python3 "$here/plot.py" "$OUT" || status=1
exit $status
