#!/usr/bin/env python3
"""best_of: one nccl-tests run against the best of other runs of the same test, per size.

Reads nccl-tests output (all_reduce_perf and the others: rows "size count type redop root time
algbw busbw #wrong time algbw busbw #wrong") and compares the out-of-place time of RUN with
the fastest of the ALONE runs at each size: best/RUN >= 1 means RUN is as fast as the best.

usage: best_of.py RUN.log LABEL=ALONE.log [LABEL=ALONE.log ...]
Prints one row per size and a last line "lowest best/run ratio R at SIZE B (RUN's file name)";
exits 1 when RUN and the others have no size in common.
"""
import sys


def times(path):
    """{size: out-of-place time in us} of an nccl-tests log, with the type of its rows."""
    out, dtype = {}, "?"
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 13 and p[0].isdigit() and p[1].isdigit():
                try:
                    out[int(p[0])] = float(p[5])
                    dtype = p[2]
                except ValueError:
                    continue
    return out, dtype


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("\n\n")[2])
    run, dtype = times(sys.argv[1])
    alone = []
    for arg in sys.argv[2:]:
        label, _, path = arg.partition("=")
        alone.append((label, times(path)[0]))
    print(f"# {sys.argv[1]} ({dtype}) against the best of " + ", ".join(l for l, _ in alone))
    print(f"# {'size':>11} {'best alone':>12} {'t_best(us)':>11} {'t_run(us)':>10} {'best/run':>8}")
    worst = None
    for size in sorted(run):
        cands = [(t[size], label) for label, t in alone if size in t]
        if size == 0 or not cands or run[size] <= 0:
            continue
        tb, label = min(cands)
        r = tb / run[size]
        print(f"  {size:>11} {label:>12} {tb:>11.2f} {run[size]:>10.2f} {r:>8.3f}")
        if worst is None or r < worst[0]:
            worst = (r, size)
    name = sys.argv[1].rsplit("/", 1)[-1]
    if worst is None:
        print(f"no common sizes ({name})")
        return 1
    print(f"lowest best/run ratio {worst[0]:.3f} at {worst[1]} B ({name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
