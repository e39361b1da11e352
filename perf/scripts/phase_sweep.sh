#!/usr/bin/env bash
# The CUDA IPC collectives' phase times (coccl_perf --phases) with the codec rings off and on
# (COCCL_DEVICE_CODEC_RINGS=0 / 1), interleaved in one run, and the NVLink model from them
# (perf/scripts/phase_model.py). Processes share GPU 0 (start MPS first for concurrent kernels).
# usage: OUT=dir perf/scripts/phase_sweep.sh PATH/coccl_perf
#   NPS="2 4" COLLS="all_reduce reduce_scatter all_gather" CODECS="fp8_ash_ds none"
#   TYPES=bfloat16 MAX=256M ROUNDS=1 (sizes 1 MiB .. MAX by x4)
set -uo pipefail
perf=${1:?usage: OUT=dir phase_sweep.sh PATH/coccl_perf}
out=${OUT:-.}/phase_sweep.txt
here=$(cd "$(dirname "$0")" && pwd)
: > "$out"
for round in $(seq "${ROUNDS:-1}"); do
  for np in ${NPS:-2 4}; do
    for coll in ${COLLS:-all_reduce reduce_scatter all_gather}; do
      for codec in ${CODECS:-fp8_ash_ds none}; do
        for rings in 0 1; do
          [ "$codec" = none ] && [ "$rings" = 1 ] && continue  # (exact kernels: no rings)
          echo "=== np=$np $coll $codec rings=$rings round=$round" >> "$out"
          COCCL_DEVICE_CODEC_RINGS=$rings timeout 300 "$here/local_ranks.sh" "$np" "$perf" \
            "$coll" --mem device -d "${TYPES:-bfloat16}" -b 1M -e "${MAX:-256M}" -f 4 -n 10 -w 3 \
            -c 0 --codec "$codec" --phases >> "$out" 2>&1 || echo "# rc $?" >> "$out"
        done
      done
    done
  done
done
python3 "$here/phase_model.py" "$out" > "${OUT:-.}/phase_model.md"
cat "${OUT:-.}/phase_model.md"
