#!/usr/bin/env python3
"""Plots perf/train's CSVs and writes the comparison table.

usage: plot.py OUT_DIR [--baseline base_s1] [--noise base_s2]
Reads OUT_DIR/<run>.csv (train.py --csv) for every run, writes OUT_DIR/curves.png (validation
and training loss against step, one curve per run, and a zoom on the last 40% of the steps) and
OUT_DIR/table.md: per run the final validation loss, its delta against the baseline in %, the
same for the validation loss with an exact pipeline (val_loss_exact),
the final training loss, tokens/s (mean over the run) and their ratio to the baseline. The
noise floor is the |delta| of the second baseline (another seed).
"""
import argparse
import csv
import glob
import os


def read(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [{k: float(v) for k, v in r.items()} for r in rows]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--baseline", default="base_s1")
    ap.add_argument("--noise", default="base_s2")
    a = ap.parse_args()
    runs = {os.path.basename(p)[:-4]: read(p) for p in sorted(glob.glob(os.path.join(a.out, "*.csv")))}
    runs = {k: v for k, v in runs.items() if v}
    if a.baseline not in runs:
        raise SystemExit(f"plot.py: no {a.baseline}.csv in {a.out}")

    def tps(rows):
        # mean over the run, the first row (warm-up) left out when there are more
        xs = [r["tokens_per_s"] for r in rows[1:]] or [rows[0]["tokens_per_s"]]
        return sum(xs) / len(xs)

    base = runs[a.baseline]
    bv, bt = base[-1]["val_loss"], tps(base)
    noise = abs(runs[a.noise][-1]["val_loss"] / bv - 1) * 100 if a.noise in runs else float("nan")
    # val_loss_exact (train.py: the pipeline's evaluation messages uncompressed): absent in CSVs
    # written before it existed (nan: never compared with the other measure)
    bve = base[-1].get("val_loss_exact", float("nan"))
    lines = [f"| run | steps | final val loss | vs {a.baseline} | exact-pipeline val loss | vs "
             f"{a.baseline} | final train loss | tokens/s | tokens/s vs {a.baseline} |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, rows in runs.items():
        last = rows[-1]
        ve = last.get("val_loss_exact", float("nan"))
        lines.append(f"| {name} | {int(last['step'])} | {last['val_loss']:.4f} | "
                     f"{(last['val_loss'] / bv - 1) * 100:+.2f}% | {ve:.4f} | "
                     f"{(ve / bve - 1) * 100:+.2f}% | {last['train_loss']:.4f} | "
                     f"{tps(rows):,.0f} | {tps(rows) / bt:.3f}x |")
    lines.append("")
    lines.append(f"noise floor (|{a.noise} vs {a.baseline}|, another seed): {noise:.2f}%")
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib missing, no curves.png")
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    last_step = max(r[-1]["step"] for r in runs.values())
    for name, rows in runs.items():
        s = [r["step"] for r in rows]
        style = "--" if name.startswith("base") else "-"
        ax[0].plot(s, [r["val_loss"] for r in rows], style, label=name, lw=1.2)
        if any(r.get("val_loss_exact", r["val_loss"]) != r["val_loss"] for r in rows):
            zoom_e = [(x, r["val_loss_exact"]) for x, r in zip(s, rows) if x >= 0.6 * last_step]
            if zoom_e:
                ax[1].plot(*zip(*zoom_e), ":x", ms=3, label=name + " (exact pipeline)", lw=1.0)
        zoom = [(x, r["val_loss"]) for x, r in zip(s, rows) if x >= 0.6 * last_step]
        if zoom:
            ax[1].plot(*zip(*zoom), style + "o", ms=3, label=name, lw=1.2)
    ax[0].set(xlabel="step", ylabel="validation loss (nats/byte)", title="validation loss")
    ax[1].set(xlabel="step", ylabel="validation loss (nats/byte)", title="last 40% of the steps")
    for x in ax:
        x.grid(alpha=0.3)
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "curves.png"), dpi=90)
    print(f"wrote {os.path.join(a.out, 'curves.png')}")


if __name__ == "__main__":
    main()
