#!/usr/bin/env python3
"""Trains a byte-level GPT from scratch with tensor, data and pipeline parallelism, for comparing
communication: run it once with NCCL and once with the coccl shim preloaded
(LD_PRELOAD=.../libnccl.so.2, a codec per collective from COCCL_CODEC_ALLREDUCE (the TP
all-reduces), COCCL_CODEC_REDUCESCATTER / COCCL_CODEC_ALLGATHER (the DP gradients and
parameters) or a COCCL_POLICY file); everything else (weights, data order, schedule) is the same.

Data: perf/train/corpus.py's train.bin / val.bin (raw bytes, optionally .gz): CPython's
standard-library sources and Debian's dict-gcide. A step draws `--batch` sequences of `--seq`
bytes at offsets from a generator seeded by (seed, step), split over the DP ranks, then into
`--micro` micro-batches. Validation: `--eval-batches` fixed batches of val.bin (the same in
every run, whatever the seed), every `--eval-every` steps and at the end.

Output (rank TP 0 / DP 0 of the last stage): a CSV `--csv` with one row per evaluation
  step,train_loss,val_loss,val_loss_exact,tokens_per_s,elapsed_s
(losses in nats per byte; train_loss the mean over the steps since the previous row; val_loss
through the pipeline's usual messages, so with a codec on them its noise is in it;
val_loss_exact with the pipeline's evaluation messages sent as float64, which no codec takes:
the trained weights alone (equal to val_loss without a pipeline); tokens/s of the training
steps since the previous row, evaluation excluded) and, last, a line
  result: tag=... steps=N val_loss=L val_loss_exact=L train_loss=L tokens_per_s=T params=P
Checkpoints: `--ckpt DIR` saves every `--ckpt-every` steps and when `--time-limit` seconds have
passed (then exits with status 3); a later run with the same arguments resumes from it.

usage: torchrun --standalone --nproc-per-node 4 perf/train/train.py --data DIR --tp 2 --dp 2
       [--pp 1] [--steps 1500] [--csv out.csv] ...   (--device cpu: gloo, fp32, for checking)
"""
import argparse
import gzip
import math
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import TP, Config, Stage, full_weights  # noqa: E402
from parallel import Grid, ShardedAdamW, pipeline_step  # noqa: E402


def load_bytes(folder, split):
    for name, opener in ((f"{split}.bin", open), (f"{split}.bin.gz", gzip.open)):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with opener(path, "rb") as f:
                return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
    raise SystemExit(f"train.py: no {split}.bin or {split}.bin.gz in {folder} (perf/train/corpus.py)")


def batch(data, seed, count, seq, part, parts, device):
    """Sequences [part * count / parts, (part + 1) * count / parts) of the `count` drawn by `seed`."""
    g = torch.Generator().manual_seed(seed)
    offs = torch.randint(0, data.numel() - seq - 1, (count,), generator=g)
    per = count // parts
    rows = torch.stack([data[o:o + seq + 1] for o in offs[part * per:(part + 1) * per].tolist()])
    rows = rows.to(device=device, dtype=torch.long)
    return rows[:, :-1], rows[:, 1:]


def lr_scale(step, warmup, steps):
    if step < warmup:
        return (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return 0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, p)))


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--pp", type=int, default=1)
    ap.add_argument("--dmodel", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=32, help="sequences per step, all DP ranks")
    ap.add_argument("--micro", type=int, default=0, help="micro-batches per step (0: 2 PP)")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--csv", default="")
    ap.add_argument("--tag", default="run")
    ap.add_argument("--ckpt", default="")
    ap.add_argument("--ckpt-every", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=0.0, help="seconds; 0: none")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    a.micro = a.micro or (1 if a.pp == 1 else 2 * a.pp)
    return a


def init(a):
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if a.device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", 0))
        ngpu = torch.cuda.device_count()
        if int(os.environ.get("LOCAL_WORLD_SIZE", world)) > ngpu:
            # ranks sharing a GPU: the real NCCL accepts them only as different hosts
            os.environ["NCCL_HOSTID"] = os.environ.get("NCCL_HOSTID", "train") + f"-r{rank}"
        device = torch.device("cuda", local % ngpu)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
        return device, torch.bfloat16
    dist.init_process_group("gloo")
    return torch.device("cpu"), torch.float32


def main():
    a = parse()
    device, act = init(a)
    gloo = device.type == "cpu"
    grid = Grid(a.tp, a.dp, a.pp)
    if a.batch % (a.dp * a.micro):
        raise SystemExit("--batch must divide by dp x micro")
    cfg = Config(d=a.dmodel, layers=a.layers, heads=a.heads, seq=a.seq)
    stage = Stage(cfg, full_weights(cfg, a.seed), TP(a.tp, grid.tp_index, grid.tp_group, act),
                  grid.stage, a.pp).to(device)
    opt = ShardedAdamW(stage.parameters(), grid, a.lr, gloo=gloo)
    train, val = load_bytes(a.data, "train"), load_bytes(a.data, "val")
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if not gloo else torch.autocast("cpu", enabled=False)

    state = {"step": 0, "tokens": 0, "train_s": 0.0, "loss_sum": 0.0, "loss_n": 0, "elapsed": 0.0}
    ckpt = os.path.join(a.ckpt, f"rank{grid.rank}.pt") if a.ckpt else ""
    if ckpt and os.path.exists(ckpt):
        s = torch.load(ckpt, map_location=device)
        opt.load_state_dict(s["opt"])
        state = s["state"]
    csv = None
    if grid.logger and a.csv:
        fresh = state["step"] == 0 or not os.path.exists(a.csv)
        csv = open(a.csv, "w" if fresh else "a")
        if fresh:
            csv.write("step,train_loss,val_loss,val_loss_exact,tokens_per_s,elapsed_s\n")

    def sync():
        if not gloo:
            torch.cuda.synchronize()

    def dp_mean(x):
        t = torch.tensor([float(x)], device=device)
        if a.dp > 1:
            dist.all_reduce(t, group=grid.dp_group)
        return t.item() / a.dp

    def evaluate(wire=None):
        total = 0.0
        with amp, torch.no_grad():
            for k in range(a.eval_batches):
                x, y = batch(val, 10_000 + k, a.batch, a.seq, grid.dp_index, a.dp, device)
                micro = list(zip(x.chunk(a.micro), y.chunk(a.micro)))
                r = pipeline_step(stage, grid, micro, act, train=False, wire_dtype=wire)
                total += (r or 0.0) / a.micro
        return dp_mean(total / a.eval_batches) if stage.last else None

    def evaluate_both():
        """(val_loss through the pipeline's usual wire, val_loss with exact pipeline messages):
        a codec on the activation messages adds its noise to the first; the second measures the
        trained weights alone. Equal without a pipeline."""
        v = evaluate()
        return v, (evaluate(torch.float64) if a.pp > 1 else v)

    def save():
        if ckpt:
            os.makedirs(a.ckpt, exist_ok=True)
            torch.save({"opt": opt.state_dict(), "state": state}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)

    start, interval = time.time() - state["elapsed"], (0, 0.0)
    tok_per_step = a.batch * a.seq
    while state["step"] < a.steps:
        step = state["step"]
        sync()
        t0 = time.time()
        x, y = batch(train, a.seed * 1_000_003 + step, a.batch, a.seq, grid.dp_index, a.dp, device)
        with amp:
            loss = pipeline_step(stage, grid, list(zip(x.chunk(a.micro), y.chunk(a.micro))), act, True)
        opt.step(lr_scale(step, a.warmup, a.steps))
        sync()
        dt = time.time() - t0
        if step >= min(10, a.steps // 4):  # the first steps warm up kernels and communicators
            state["tokens"] += tok_per_step
            state["train_s"] += dt
        interval = (interval[0] + tok_per_step, interval[1] + dt)
        if loss is not None:
            state["loss_sum"] += loss / a.micro
            state["loss_n"] += 1
        state["step"] = step = step + 1
        if step % a.eval_every == 0 or step == a.steps:
            v, ve = evaluate_both()
            if stage.last:
                tl = dp_mean(state["loss_sum"] / max(1, state["loss_n"]))
                state["loss_sum"], state["loss_n"] = 0.0, 0
                state["last"] = (tl, v, ve)
                if csv:
                    csv.write(f"{step},{tl:.5f},{v:.5f},{ve:.5f},{interval[0] / interval[1]:.1f},"
                              f"{time.time() - start:.1f}\n")
                    csv.flush()
                    print(f"step {step} train {tl:.4f} val {v:.4f} val_exact {ve:.4f} "
                          f"tokens/s {interval[0] / interval[1]:.0f}", flush=True)
            interval = (0, 0.0)
        if a.ckpt_every and step % a.ckpt_every == 0:
            state["elapsed"] = time.time() - start
            save()
        if a.time_limit and step % 10 == 0 and step < a.steps:
            stop = torch.tensor([float(time.time() - start > a.time_limit)], device=device)
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item() > 0:
                state["elapsed"] = time.time() - start
                save()
                if grid.logger:
                    print(f"time limit: checkpoint at step {step}", flush=True)
                dist.destroy_process_group()
                sys.exit(3)
    if grid.logger:
        tl, v, ve = state.get("last", (float("nan"),) * 3)
        tps = state["tokens"] / state["train_s"] if state["train_s"] else float("nan")
        n = sum(p.numel() for p in stage.parameters())
        print(f"result: tag={a.tag} steps={a.steps} val_loss={v:.5f} val_loss_exact={ve:.5f} "
              f"train_loss={tl:.5f} "
              f"tokens_per_s={tps:.0f} params_per_rank={n}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
