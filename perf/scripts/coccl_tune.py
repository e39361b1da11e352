#!/usr/bin/env python3
"""coccl_tune: measures where each allowed codec pays on this machine and writes a codec policy
file (docs/policy.md's format) that coccl loads with COCCL_POLICY=<file>.

For every (collective, dtype) it runs coccl_perf once with the exact path (--codec none) and once
per allowed codec over the same sizes, side by side in one invocation, and keeps per size the
fastest out-of-place time: a codec is chosen at a size only when its time times --margin is
below the exact time (margin 1.05: at least 5% faster). Runs of consecutive sizes with the same
choice become one rule with a byte range: a range starts at the first measured size of its run,
sizes below the smallest measured one stay exact, sizes above the largest take the largest's
choice. Every rule names `nranks` (the world size measured), so a communicator of another size
falls through to the environment's default rule. Pointing COCCL_POLICY at the file is the
opt-in: it compresses only where a codec was measured faster, and only with the codecs listed.

usage: coccl_tune.py --perf PATH/coccl_perf --out policy.json
         [--ranks 4 (threads of one process) | --launch "CMD ..." (e.g. an mpirun line; the
          coccl_perf arguments are appended)] [--mem host|device] [--colls all_reduce,...]
         [--dtypes bfloat16,float] [--codecs fp8_ash_ds,int8] [--min 64K] [--max 256M]
         [--iters 5] [--margin 1.05]
       coccl_tune.py --from-json none.json codec.json ... --out policy.json  (offline: from
         coccl_perf -J files already measured, the first one the exact path)
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile

POLICY_COLL = {"all_reduce": "allreduce", "reduce_scatter": "reducescatter",
               "all_gather": "allgather"}
POLICY_DTYPE = {"bfloat16": "bf16", "half": "fp16", "float": "fp32"}


def measure(a, coll, dtype, codec, path):
    args = [coll, "-b", a.min, "-e", a.max, "-f", "2", "-n", str(a.iters), "-w", "1",
            "-d", dtype, "-c", "0", "--codec", codec, "--mem", a.mem, "-J", path]
    cmd = shlex.split(a.launch) + [a.perf] + args if a.launch else [a.perf, "-t", str(a.ranks)] + args
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or not os.path.exists(path):
        sys.exit(f"coccl_tune: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-2000:]}")
    return load(path)


def load(path):
    with open(path) as f:
        d = json.load(f)
    rows = {(r["type"], r["size"]): r["out_of_place"]["time"] for r in d["results"]}
    return {"collective": d["collective"], "nranks": d["config"]["nranks"],
            "codec": d["config"]["codec"]["spec"], "rows": rows}


def choose(exact, codecs, margin):
    """Per (dtype, size): the codec spec to use, or 'none'. exact/codecs: load()'s dicts."""
    out = {}
    for key, t_none in sorted(exact["rows"].items()):
        best, best_t = "none", t_none
        for c in codecs:
            t = c["rows"].get(key)
            if t is not None and t * margin < t_none and t < best_t:
                best, best_t = c["codec"], t
        out[key] = best
    return out


def rules(coll, nranks, choice):
    """Policy rules (dicts) for one collective from choose()'s per-(dtype, size) picks."""
    out = []
    for dtype in sorted({d for d, _ in choice}):
        runs = []  # [codec, first size]
        for s in sorted(s for d, s in choice if d == dtype):
            if not runs or runs[-1][0] != choice[(dtype, s)]:
                runs.append([choice[(dtype, s)], s])
        if runs[0][0] == "none":
            runs[0][1] = None  # exact also below the smallest size measured
        else:
            runs.insert(0, ["none", None])
        for i, (c, lo) in enumerate(runs):
            hi = runs[i + 1][1] if i + 1 < len(runs) else None
            r = {"nranks": nranks, "collective": POLICY_COLL[coll],
                 "dtype": POLICY_DTYPE.get(dtype, dtype), "codec": c}
            b = {k: v for k, v in (("from", lo), ("below", hi)) if v is not None}
            if b:
                r["bytes"] = b
            out.append(r)
    return out


def write(path, all_rules, note):
    lines = [f"// {l}" for l in note] + ["{", '  "rules": [']
    lines += ["    " + json.dumps(r) + ("," if i + 1 < len(all_rules) else "")
              for i, r in enumerate(all_rules)]
    lines += ["  ]", "}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--launch", default="")
    ap.add_argument("--mem", default="host")
    ap.add_argument("--colls", default="all_reduce,reduce_scatter,all_gather")
    ap.add_argument("--dtypes", default="bfloat16,float")
    ap.add_argument("--codecs", default="fp8_ash_ds,int8")
    ap.add_argument("--min", default="64K")
    ap.add_argument("--max", default="256M")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--margin", type=float, default=1.05)
    ap.add_argument("--from-json", nargs="+", default=None)
    a = ap.parse_args()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    note = [f"coccl_tune {when} on {platform.node()}: margin {a.margin}, "
            "out-of-place times of coccl_perf, side by side", "command: " + " ".join(sys.argv)]
    all_rules = []
    if a.from_json:
        exact, *codecs = [load(p) for p in a.from_json]
        all_rules = rules(exact["collective"], exact["nranks"], choose(exact, codecs, a.margin))
    else:
        if not a.perf:
            sys.exit("coccl_tune: --perf PATH (coccl_perf) is required without --from-json")
        with tempfile.TemporaryDirectory() as tmp:
            for coll in a.colls.split(","):
                for dtype in a.dtypes.split(","):
                    exact = measure(a, coll, dtype, "none", f"{tmp}/none.json")
                    codecs = [measure(a, coll, dtype, c, f"{tmp}/{i}.json")
                              for i, c in enumerate(a.codecs.split(","))]
                    choice = choose(exact, codecs, a.margin)
                    all_rules += rules(coll, exact["nranks"], choice)
                    picks = ", ".join(f"{s}:{c}" for (_, s), c in sorted(choice.items()))
                    note.append(f"{coll} {dtype} nranks {exact['nranks']} {a.mem}: {picks}")
    write(a.out, all_rules, note)
    print(f"coccl_tune: wrote {len(all_rules)} rules to {a.out}")


if __name__ == "__main__":
    main()
