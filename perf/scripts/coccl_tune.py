#!/usr/bin/env python3
"""coccl_tune: measures where each allowed codec, and each exact path, pays on this machine and
writes a codec policy file (docs/policy.md's format) that coccl loads with COCCL_POLICY=<file>.

For every (collective, dtype) it runs coccl_perf over the same sizes, side by side in one
invocation: once per exact path (--exact: "default" is the communicator's own choice; "nccl" and
"coccl" set COCCL_DEVICE_EXACT so that the real NCCL or coccl's own kernels run the uncompressed
calls) and once per allowed codec, and keeps per size the fastest out-of-place time. Among the
exact paths, the one fastest at the most sizes of a type keeps a size unless another is --margin
times faster there (a one-size flip by noise is not a crossover); a codec wins a size only when
its time times --margin is below the fastest exact time (margin 1.05: at least 5% faster).
The runs check that "nccl" ran NCCL's own collective and "coccl" did not (coccl_perf's
algorithm column), since a path that cannot come up falls back silently. The measurements
clear COCCL_POLICY and COCCL_DEVICE_EXACT from the environment ("default" is the communicator's
`auto`). Runs of consecutive sizes with the same choice become one rule with a byte range (a
rule says "exact": "nccl"|"coccl" when its path is not "default"; codec rules say
"min_bytes": 0, since the measurement forced the codec at that size): a range starts at the first measured size of its run, sizes below the
smallest measured one take the smallest's exact path, sizes above the largest take the largest's
choice. Every rule names `nranks` (the world size measured), so a communicator of another size
falls through to the environment's default rule. Pointing COCCL_POLICY at the file is the
opt-in: it compresses only where a codec was measured faster, and only with the codecs listed.

Sizes below --split are measured with --small-iters iterations (their calls are short and
noisy), the rest with --iters. --check then runs coccl_perf once more with the file (--codec policy) and prints, per size, its
time against the best variant measured alone (the policy's goal: >= 0.95x everywhere).

usage: coccl_tune.py --perf PATH/coccl_perf --out policy.json
         [--ranks 4 (threads of one process) | --launch "CMD ..." (e.g. an mpirun line with
          -x COCCL_DEVICE_EXACT -x COCCL_POLICY; the coccl_perf arguments are appended)]
         [--mem host|device] [--colls all_reduce,...] [--dtypes bfloat16,float]
         [--codecs fp8_ash_ds,int8] [--exact default | coccl,nccl] [--min 64K] [--max 256M]
         [--factor 2] [--iters 5] [--split 1M --small-iters 40] [--margin 1.05] [--check]
         [--keep DIR (every measured table as JSON)]
       coccl_tune.py --from-json [PATH=]exact.json ... codec.json ... --out policy.json
         (offline, from coccl_perf -J files measured before: the exact ones first, each
          labelled with its path (nccl=a.json coccl=b.json) or one unlabelled; then the codecs)
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


EXACT_PATHS = ("default", "nccl", "coccl")


def size_bytes(text):
    """ "64K" -> 65536 (coccl_perf's suffixes K, M, G)."""
    t = str(text).strip().upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(t[:-1] if mult > 1 else t) * mult


def sweeps(a):
    """[(min, max, iters)]: sizes below --split with --small-iters (small calls are noisy and
    cheap), the rest with --iters; one sweep when --split is 0 or outside (min, max]."""
    lo, hi, split = size_bytes(a.min), size_bytes(a.max), size_bytes(a.split)
    if lo < 1 or a.factor < 2 or hi < lo:
        sys.exit(f"coccl_tune: needs 1 <= --min <= --max and --factor >= 2 "
                 f"(got {a.min}, {a.max}, {a.factor})")
    if split <= lo:
        return [(lo, hi, a.iters)]
    if split > hi:
        return [(lo, hi, a.small_iters)]
    first_large = lo
    while first_large < split:
        first_large *= a.factor
    if first_large > hi:
        return [(lo, hi, a.small_iters)]
    return [(lo, first_large // a.factor, a.small_iters), (first_large, hi, a.iters)]


def measure(a, coll, dtype, codec, path, exact="default", policy=None):
    """One coccl_perf table (load()'s dict) over every size, from one run per sweep."""
    table = None
    for k, (lo, hi, iters) in enumerate(sweeps(a)):
        part = measure_sweep(a, coll, dtype, codec, f"{path}.{k}", exact, policy, lo, hi, iters)
        if table is None:
            table = part
        else:
            table["rows"].update(part["rows"])
            table["algorithms"].update(part["algorithms"])
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        name = f"{coll}-{dtype}-{codec if not policy else 'policy'}-{exact}.json".replace(":", "_")
        with open(os.path.join(a.keep, name), "w") as f:
            json.dump({"collective": coll, "dtype": dtype, "codec": table["codec"], "exact": exact,
                       "nranks": table["nranks"],
                       "rows": [{"size": s, "time_us": t} for (_, s), t in sorted(table["rows"].items())]},
                      f, indent=1)
    return table


def measure_sweep(a, coll, dtype, codec, path, exact, policy, lo, hi, iters):
    args = [coll, "-b", str(lo), "-e", str(hi), "-f", str(a.factor), "-n", str(iters), "-w", "1",
            "-d", dtype, "-c", "0", "--codec", codec, "--mem", a.mem, "-J", path]
    cmd = shlex.split(a.launch) + [a.perf] + args if a.launch else [a.perf, "-t", str(a.ranks)] + args
    env = dict(os.environ)
    env.pop("COCCL_POLICY", None)
    env.pop("COCCL_DEVICE_EXACT", None)
    if exact != "default":
        env["COCCL_DEVICE_EXACT"] = exact
    if policy:
        env["COCCL_POLICY"] = policy
    if os.path.exists(path):
        os.remove(path)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if r.returncode != 0 or not os.path.exists(path):
        sys.exit(f"coccl_tune: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-2000:]}")
    t = load(path, exact)
    if codec == "none":
        check_path(t, exact, " ".join(cmd))
    return t


def check_path(t, exact, what):
    """Exits when an exact table did not run the path it is labelled with: "nccl" must be NCCL's
    own collective (algorithm "nccl"), "coccl" must not be."""
    algos = set(t.get("algorithms", {}).values())
    if exact == "nccl" and algos - {"nccl"}:
        sys.exit(f"coccl_tune: COCCL_DEVICE_EXACT=nccl did not run NCCL's collectives ({what}: "
                 f"algorithms {sorted(algos)}): NCCL did not come up beside coccl's kernels "
                 "(ranks sharing a GPU need one NCCL_HOSTID each: --launch local_ranks.sh)")
    if exact == "coccl" and "nccl" in algos:
        sys.exit(f"coccl_tune: COCCL_DEVICE_EXACT=coccl ran NCCL's collectives ({what}): "
                 "coccl's kernels are not there (COCCL_DEVICE_TRANSPORT=nccl?)")


def load(path, exact="default"):
    with open(path) as f:
        d = json.load(f)
    rows = {(r["type"], r["size"]): r["out_of_place"]["time"] for r in d["results"]}
    algos = {(r["type"], r["size"]): r.get("algorithm", "") for r in d["results"]}
    return {"collective": d["collective"], "nranks": d["config"]["nranks"],
            "codec": d["config"]["codec"]["spec"], "exact": exact, "rows": rows,
            "algorithms": algos}


def choose(exacts, codecs, margin):
    """Per (dtype, size): (codec spec or 'none', exact path). exacts: one load() table or a list
    of them (one per exact path); codecs: load()'s tables. Among the exact paths the one that is
    fastest at the most sizes of a type is the incumbent, and another wins a size only when
    margin times faster (a one-size flip by noise is not a crossover)."""
    if isinstance(exacts, dict):
        exacts = [exacts]
    wins = {}
    for key in exacts[0]["rows"]:
        ts = [(e["rows"][key], i) for i, e in enumerate(exacts) if key in e["rows"]]
        w = min(ts)[1]
        wins[(key[0], w)] = wins.get((key[0], w), 0) + 1
    out = {}
    for key in sorted(exacts[0]["rows"]):
        # the incumbent of this type: most sizes won, the first listed on a tie
        inc = max(range(len(exacts)), key=lambda i: (wins.get((key[0], i), 0), -i))
        path, t_exact = exacts[inc]["exact"], exacts[inc]["rows"].get(key)
        if t_exact is None:
            path, t_exact = exacts[0]["exact"], exacts[0]["rows"][key]
        for e in exacts:
            t = e["rows"].get(key)
            if t is not None and t * margin < t_exact:
                path, t_exact = e["exact"], t
        # a lossy codec must beat every exact path by the margin, the incumbent or not
        t_fastest = min(e["rows"][key] for e in exacts if key in e["rows"])
        best, best_t = "none", t_fastest
        for c in codecs:
            t = c["rows"].get(key)
            if t is not None and t * margin < t_fastest and t < best_t:
                best, best_t = c["codec"], t
        out[key] = (best, path)
    return out


def rules(coll, nranks, choice):
    """Policy rules (dicts) for one collective from choose()'s per-(dtype, size) picks (a pick
    is (codec, exact path); a bare codec string means the default path)."""
    out = []
    pick = {k: (v, "default") if isinstance(v, str) else tuple(v) for k, v in choice.items()}
    for dtype in sorted({d for d, _ in pick}):
        runs = []  # [(codec, exact), first size]
        for s in sorted(s for d, s in pick if d == dtype):
            if not runs or runs[-1][0] != pick[(dtype, s)]:
                runs.append([pick[(dtype, s)], s])
        if runs[0][0][0] == "none":
            runs[0][1] = None  # exact also below the smallest size measured
        else:
            runs.insert(0, [("none", runs[0][0][1]), None])
        for i, ((c, path), lo) in enumerate(runs):
            hi = runs[i + 1][1] if i + 1 < len(runs) else None
            r = {"nranks": nranks, "collective": POLICY_COLL[coll],
                 "dtype": POLICY_DTYPE.get(dtype, dtype), "codec": c}
            b = {k: v for k, v in (("from", lo), ("below", hi)) if v is not None}
            if b:
                r["bytes"] = b
            if c != "none":
                r["min_bytes"] = 0  # the range is the threshold: the codec was measured there
            if path != "default":
                r["exact"] = path
            out.append(r)
    return out


def check_rows(variants, policy):
    """Per (dtype, size) measured under the policy: (size, dtype, best variant, its time, the
    policy's time, best / policy)."""
    out = []
    for key, t_pol in sorted(policy["rows"].items(), key=lambda kv: (kv[0][0], kv[0][1])):
        alone = [(v["rows"][key], label) for label, v in variants if key in v["rows"]]
        if not alone:
            continue
        t_best, label = min(alone)
        out.append((key[1], key[0], label, t_best, t_pol, t_best / t_pol if t_pol > 0 else 0.0))
    return out


def write(path, all_rules, note):
    lines = [f"// {l}" for l in note] + ["{", '  "rules": [']
    lines += ["    " + json.dumps(r) + ("," if i + 1 < len(all_rules) else "")
              for i, r in enumerate(all_rules)]
    lines += ["  ]", "}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def label(t):
    return t["codec"] if t["codec"] != "none" else f"exact:{t['exact']}"


def from_json(items):
    """--from-json arguments: exact tables (PATH=file, or the first unlabelled one) and codecs."""
    exacts, codecs = [], []
    for i, item in enumerate(items):
        path, sep, f = item.partition("=")
        if sep and path in EXACT_PATHS:
            exacts.append(load(f, path))
        elif sep and not os.path.exists(item):
            sys.exit(f"coccl_tune: --from-json {item}: the label must be one of "
                     f"{', '.join(EXACT_PATHS)} (codec tables take no label)")
        elif i == 0 and not exacts:
            exacts.append(load(item))
        else:
            codecs.append(load(item))
    if not exacts:
        sys.exit("coccl_tune: --from-json needs an exact table first (FILE or PATH=FILE)")
    return exacts, codecs


def main():
    ap = argparse.ArgumentParser(description="coccl_tune: a measured codec policy table "
                                 "(docs/policy.md, \"Measured policies\")")
    ap.add_argument("--perf")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--launch", default="")
    ap.add_argument("--mem", default="host")
    ap.add_argument("--colls", default="all_reduce,reduce_scatter,all_gather")
    ap.add_argument("--dtypes", default="bfloat16,float")
    ap.add_argument("--codecs", default="fp8_ash_ds,int8")
    ap.add_argument("--exact", default="default")
    ap.add_argument("--min", default="64K")
    ap.add_argument("--max", default="256M")
    ap.add_argument("--factor", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--split", default="0")
    ap.add_argument("--small-iters", type=int, default=40)
    ap.add_argument("--keep", default="")
    ap.add_argument("--margin", type=float, default=1.05)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--from-json", nargs="+", default=None)
    a = ap.parse_args()
    paths = [p for p in a.exact.split(",") if p]
    bad = [p for p in paths if p not in EXACT_PATHS]
    if bad or not paths:
        sys.exit(f"coccl_tune: --exact takes {', '.join(EXACT_PATHS)} (comma-separated), not {a.exact}")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    note = [f"coccl_tune {when} on {platform.node()}: margin {a.margin}, "
            "out-of-place times of coccl_perf, side by side", "command: " + " ".join(sys.argv)]
    all_rules = []
    if a.from_json:
        if a.check:
            sys.exit("coccl_tune: --check measures, so it does not go with --from-json")
        exacts, codecs = from_json(a.from_json)
        all_rules = rules(exacts[0]["collective"], exacts[0]["nranks"],
                          choose(exacts, codecs, a.margin))
        write(a.out, all_rules, note)
        print(f"coccl_tune: wrote {len(all_rules)} rules to {a.out}")
        return
    if not a.perf:
        sys.exit("coccl_tune: --perf PATH (coccl_perf) is required without --from-json")
    measured = []  # (coll, dtype, [(label, table)])
    with tempfile.TemporaryDirectory() as tmp:
        for coll in a.colls.split(","):
            for dtype in a.dtypes.split(","):
                base = f"{tmp}/{coll}-{dtype}"
                exacts = [measure(a, coll, dtype, "none", f"{base}-none-{p}.json", p) for p in paths]
                codecs = [measure(a, coll, dtype, c, f"{base}-{i}.json")
                          for i, c in enumerate(a.codecs.split(",")) if c]
                choice = choose(exacts, codecs, a.margin)
                all_rules += rules(coll, exacts[0]["nranks"], choice)
                picks = ", ".join(f"{s}:{c}" + (f"@{p}" if p != "default" else "")
                                  for (_, s), (c, p) in sorted(choice.items()))
                note.append(f"{coll} {dtype} nranks {exacts[0]['nranks']} {a.mem}: {picks}")
                measured.append((coll, dtype, [(label(t), t) for t in exacts + codecs]))
        write(a.out, all_rules, note)
        print(f"coccl_tune: wrote {len(all_rules)} rules to {a.out}")
        if not a.check:
            return
        worst = None
        print("coccl_tune --check: the policy's out-of-place time against the best variant alone")
        print(f"{'collective':>14} {'type':>9} {'size':>11} {'best alone':>16} {'t_best(us)':>11} "
              f"{'t_policy(us)':>12} {'best/policy':>11}")
        for coll, dtype, variants in measured:
            pol = measure(a, coll, dtype, "policy", f"{tmp}/{coll}-{dtype}-policy.json",
                          policy=a.out)
            for size, typ, lab, tb, tp, ratio in check_rows(variants, pol):
                print(f"{coll:>14} {typ:>9} {size:>11} {lab:>16} {tb:>11.2f} {tp:>12.2f} {ratio:>11.3f}")
                worst = ratio if worst is None else min(worst, ratio)
        if worst is None:
            sys.exit("coccl_tune --check: no size was measured both alone and under the table")
        print(f"coccl_tune --check: lowest best/policy ratio {worst:.3f}")


if __name__ == "__main__":
    main()
