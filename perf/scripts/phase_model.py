#!/usr/bin/env python3
"""Per-phase times of the CUDA IPC collectives (coccl_perf --phases) and a model of the same
calls on 2-8 GPUs of their own joined by NVLink, from a run on one GPU shared by p processes.

usage: phase_model.py OUTPUT.txt [--link-gbs 370] [--gpus 2,4,8] [--md]

OUTPUT.txt: coccl_perf's stdout (rows, each followed by its '#  phases' line), any number of
runs one after another, each headed by a line '=== np=<p> <coll> <codec> ...' (the form
.train scripts and perf/scripts write) or by coccl_perf's own header.

The model (written here so that its assumptions can be read and changed):
- A phase's work (push = encode-on-send and its stores, own = the owner step, pull = the decode
  of the results) is done by the call's blocks in parallel; on one GPU the p ranks' kernels
  share the SMs with nb_shared blocks each (COCCL_DEVICE_BLOCKS auto: 32 at 2 ranks, 16 at 4).
  On a GPU of its own a rank runs nb_own blocks a call (one per 256 KiB, 16..128) at the same
  rate per block: compute time = measured time x nb_shared / nb_own. The waits scale alike.
  From np measured ranks to G modelled ones, push and pull scale by ((G-1)/G) / ((np-1)/np)
  (the part of S they encode or decode); the owner step reads G inputs of S/G, about S at any
  G, and is not scaled.
- Bytes over NVLink per rank and call (r = wire bytes / input bytes, from the row's ratio):
  AllReduce push (p-1)/p S r (stores into the owners' inboxes), pull (p-1)/p S r (loads from
  the owners' outboxes); ReduceScatter push (p-1)/p S r; AllGather pull (p-1)/p S r. S is the
  row's size (coccl_perf's: the message for AllReduce, the whole output or input for the
  others). link time = bytes / link (GB/s a direction).
- Today's kernel runs a round's phases one after another: T_seq = agree + sum over phases of
  (wait + max(compute, link)). A software-pipelined kernel that overlaps them (issue 15's
  persistent kernel) is bounded by T_ovl = agree + max(sum of compute, push link, pull link)
  plus one round of the sequential time (its fill and drain).
The model ignores NVLink latency, the HBM shared by the p ranks on one GPU (which makes the
measured compute slower than on own GPUs: the model is then pessimistic), and clock
differences between the GPUs.
"""
import argparse
import re
import sys

NAMES = ["agree", "push_wait", "push", "own_wait", "own", "pull_wait", "pull", "total",
         "rounds", "blocks"]


def parse(path):
    runs, cur = [], None
    head = re.compile(r"^=== np=(\d+) (\S+) (\S+)(.*)")
    for line in open(path, errors="replace"):
        m = head.match(line)
        if m:
            cur = {"np": int(m.group(1)), "coll": m.group(2), "codec": m.group(3),
                   "label": m.group(4).strip(), "rows": []}
            runs.append(cur)
            continue
        if cur is None:
            continue
        f = line.split()
        if line.startswith("#  phases") and cur["rows"]:
            g = line.split("):", 1)[1].split()  # name value pairs after the label
            vals = dict(zip(g[0::2], map(float, g[1::2])))
            cur["rows"][-1]["ph"] = vals
        elif len(f) >= 17 and f[0].isdigit() and f[1].isdigit():
            ratio = float(f[-3]) if f[-3] not in ("-", "nan") else 1.0
            cur["rows"].append({"bytes": int(f[0]), "time": float(f[5]), "busbw": float(f[7]),
                                "ratio": ratio})
    return runs


def own_blocks(size):
    return max(16, min(128, size // (256 << 10)))


def model(run, row, g, link):
    ph, p = row["ph"], g
    S, r = row["bytes"], 1.0 / row["ratio"]
    k = ph["blocks"] / own_blocks(S)
    share = (p - 1) / p * S * r / (link * 1e3)  # us
    push_l = share if run["coll"] in ("all_reduce", "reduce_scatter") else 0.0
    pull_l = share if run["coll"] in ("all_reduce", "all_gather") else 0.0
    # the work of a rank at g ranks against the measured np: push and pull move (p-1)/p of S,
    # the owner step reads p inputs of S/p (about S at any p)
    f = ((g - 1) / g) / ((run["np"] - 1) / run["np"])
    comp = {"push": ph["push"] * k * f, "own": ph["own"] * k, "pull": ph["pull"] * k * f}
    waits = sum(ph[x] * k for x in ("push_wait", "own_wait", "pull_wait"))
    seq = ph["agree"] + waits + max(comp["push"], push_l) + comp["own"] + max(comp["pull"], pull_l)
    rounds = max(ph["rounds"], 1.0)
    ovl = ph["agree"] + max(sum(comp.values()), push_l, pull_l) + (seq - ph["agree"]) / rounds
    return seq, min(ovl, seq)


def busbw(coll, size, us, p):
    alg = size / (us * 1e3)
    return alg * (2 * (p - 1) / p if coll == "all_reduce" else (p - 1) / p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--link-gbs", type=float, default=370.0)
    ap.add_argument("--gpus", default="2,4,8")
    a = ap.parse_args()
    gpus = [int(x) for x in a.gpus.split(",")]
    for run in parse(a.output):
        rows = [r for r in run["rows"] if "ph" in r]
        if not rows:
            continue
        print(f"\n{run['coll']} {run['codec']} {run['label']}, {run['np']} processes on one "
              f"GPU: us a call "
              f"(one block's phases), then the model's busbw (GB/s) on G GPUs, today's "
              f"kernel / overlapped")
        cols = ["size", "time", "busbw"] + NAMES[:8] + ["rounds", "blocks"]
        cols += [f"G={g} seq / ovl" for g in gpus]
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for row in rows:
            ph = row["ph"]
            cells = [str(row["bytes"]), f"{row['time']:.1f}", f"{row['busbw']:.1f}"]
            cells += [f"{ph.get(n, 0):.1f}" for n in NAMES[:8]]
            cells += [f"{ph.get('rounds', 0):.1f}", f"{ph.get('blocks', 0):.0f}"]
            for g in gpus:
                seq, ovl = model(run, row, g, a.link_gbs)
                cells.append(f"{busbw(run['coll'], row['bytes'], seq, g):.0f} / "
                             f"{busbw(run['coll'], row['bytes'], ovl, g):.0f}")
            print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
