#!/usr/bin/env bash
# CI check of perf/train (the convergence comparison's trainer) on the CPU: PyTorch's wheel from
# PyPI (installed when missing), the gloo backend, no shim. Builds a small corpus
# (perf/train/corpus.py: CPython's stdlib sources and Debian's dict-gcide, downloaded with
# `apt-get download`, never installed), then trains a tiny GPT for 12 steps on 4 processes in
# three layouts (TP 2 x DP 2, TP 2 x PP 2, DP 2 x PP 2 interrupted by --time-limit at step 10
# and resumed from its checkpoint) and checks that
#   - the three layouts end at the same validation loss (they start from the same weights and
#     see the same data: fp32 on the CPU leaves only summation order, well below 1e-4),
#   - the loss falls (step 12 below step 6), and the resumed run wrote every CSV row once,
#   - the exact-pipeline evaluation (float64 messages) gives the usual one's loss.
# usage: scripts/train_smoke.sh [WORK_DIR]     (about 5 minutes on 2 cores with the install)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-$(mktemp -d /tmp/coccl-train-smoke.XXXXXX)}
mkdir -p "$W"
if ! python3 -c "import torch" 2>/dev/null; then
  echo "train_smoke: installing torch from PyPI"
  python3 -m pip install --quiet "torch==2.11.0" numpy
fi
if [ ! -f "$W/corpus/train.bin" ]; then
  (cd "$W" && apt-get download dict-gcide >/dev/null 2>&1 && dpkg-deb -x dict-gcide_*.deb gcide)
  python3 perf/train/corpus.py --out "$W/corpus" --gcide "$W/gcide" --mib-per-source 2 >/dev/null
fi
common=(--data "$W/corpus" --device cpu --dmodel 64 --layers 2 --heads 2 --seq 32 --batch 8
        --steps 12 --eval-every 6 --eval-batches 2 --lr 3e-3 --warmup 2)
launch() { python3 -m torch.distributed.run --standalone --nproc-per-node 4 perf/train/train.py "$@"; }
launch "${common[@]}" --tp 2 --dp 2 --csv "$W/tp2dp2.csv" --tag tp2dp2 > "$W/tp2dp2.log" 2>&1
launch "${common[@]}" --tp 2 --pp 2 --csv "$W/tp2pp2.csv" --tag tp2pp2 > "$W/tp2pp2.log" 2>&1
rm -rf "$W/ckpt"
set +e
launch "${common[@]}" --dp 2 --pp 2 --csv "$W/dp2pp2.csv" --tag dp2pp2 --ckpt "$W/ckpt" \
  --time-limit 0.001 > "$W/dp2pp2.first.log" 2>&1
rc=$?
set -e
grep -q "time limit: checkpoint at step 10" "$W/dp2pp2.first.log" ||
  { echo "train_smoke: the time-limited run did not stop at step 10 (status $rc)"; tail -20 "$W/dp2pp2.first.log"; exit 1; }
launch "${common[@]}" --dp 2 --pp 2 --csv "$W/dp2pp2.csv" --tag dp2pp2 --ckpt "$W/ckpt" \
  > "$W/dp2pp2.log" 2>&1
python3 - "$W" <<'PY'
import csv, sys
w = sys.argv[1]
rows = {n: list(csv.DictReader(open(f"{w}/{n}.csv"))) for n in ("tp2dp2", "tp2pp2", "dp2pp2")}
for n, r in rows.items():
    steps = [int(x["step"]) for x in r]
    assert steps == [6, 12], f"{n}: CSV steps {steps}, want [6, 12]"
    v6, v12 = float(r[0]["val_loss"]), float(r[1]["val_loss"])
    assert v12 < v6, f"{n}: validation loss did not fall ({v6} -> {v12})"
    # the exact-pipeline evaluation (float64 messages) carries the same numbers: no codec here
    for x in r:
        ve, v = float(x["val_loss_exact"]), float(x["val_loss"])
        assert abs(ve - v) <= 1e-5 * v, f"{n}: val_loss_exact {ve} != val_loss {v}"
    print(f"train_smoke: {n}: val {v6:.5f} -> {v12:.5f}")
final = [float(r[-1]["val_loss"]) for r in rows.values()]
spread = (max(final) - min(final)) / min(final)
assert spread < 1e-4, f"layouts disagree: final val losses {final}"
print(f"train_smoke: OK (layouts agree to {spread:.2e}; resume from checkpoint)")
PY
