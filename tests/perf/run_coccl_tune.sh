#!/usr/bin/env bash
# ctest coccl_tune_end_to_end: coccl_tune measures a tiny sweep on 2 host ranks, and the policy
# file it writes loads (every rank agrees at init) and drives a checked coccl_perf sweep.
# usage: run_coccl_tune.sh COCCL_PERF
set -euo pipefail
perf=$1
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 "$here/../../perf/scripts/coccl_tune.py" --perf "$perf" --ranks 2 --colls all_reduce,reduce_scatter \
  --dtypes bfloat16,float --codecs int8,fp8_ash_ds --min 4K --max 64K --iters 1 --out "$out/p.json"
cat "$out/p.json"
grep -q '"collective": "allreduce", "dtype": "bf16"' "$out/p.json"
grep -q '"collective": "reducescatter", "dtype": "fp32"' "$out/p.json"
COCCL_POLICY="$out/p.json" COCCL_DEBUG=INFO "$perf" all_reduce -t 2 -b 1K -e 128K -f 4 -n 1 \
  -d bf16,float --codec policy 2>&1 | tee "$out/run.log"
grep -q "codec policy of 2 ranks" "$out/run.log"
grep -Eiq "policy [0-9]+\. .*all_?reduce" "$out/run.log"
