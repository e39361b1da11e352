#!/usr/bin/env bash
# The main job: install what is missing, build, then all-reduce the real tensor-parallel
# payloads of ../shared/data on 4 host ranks through the fp8_ash_ds and int8 codecs (per-case
# error table), and an exact AllReduce sweep from 8 B to 64 MiB on 4 host ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
PERF="$BUILD_DIR/perf/coccl_perf/coccl_perf"
DATA=${COCCL_DATA_DIR:-../shared/data}
if [ -f "$DATA/tp_tensors_manifest.json" ]; then
  for codec in fp8_ash_ds int8; do
    "$PERF" all_reduce --codec "$codec" -t 4 --input "$DATA/tp_tensors_manifest.json"
  done
else
  echo "no real data at $DATA (set COCCL_DATA_DIR); skipping the real-input run"
fi
"$PERF" all_reduce -t 4 -b 8 -e 64M -f 2
