#!/usr/bin/env python3
"""A small GPT trained with Megatron-style tensor parallelism, for measuring collectives.

Each transformer layer splits attention heads and the MLP's hidden units over the TP ranks:
QKV and MLP-up are column-parallel (identity forward, all-reduce of the input gradient
backward), the attention output projection and MLP-down are row-parallel (all-reduce of the
output forward). These are the tensor-parallel all-reduces coccl compresses when this runs with
the libnccl.so.2 shim preloaded (LD_PRELOAD=.../libnccl.so.2 COCCL_CODEC=fp8_ash_ds).

Data: a fixed synthetic language (each token is a deterministic function of the two before it,
with 10% random tokens), identical on every rank, so the loss falls and runs are comparable.
The last line printed is the result:
  tp=N steps=S loss=L (mean of the last 10 steps) tokens/s=T (after 10 warm-up steps)

usage: torchrun --standalone --nproc_per_node N tp_gpt.py [--steps 200] [--layers 4] ...
Runs on CPU with gloo as well (for checking the script): --device cpu.
"""
import argparse
import contextlib
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class _CopyToTP(torch.autograd.Function):
    """Forward identity; backward all-reduce (the input of a column-parallel layer)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous()
        dist.all_reduce(g)
        return g


class _ReduceFromTP(torch.autograd.Function):
    """Forward all-reduce; backward identity (the output of a row-parallel layer)."""

    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def attention(q, k, v):
    """Causal attention (torch's fused kernel where it exists, torch < 2.0 spelled out)."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    t = q.shape[-2]
    w = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(w.masked_fill(mask, float("-inf")), dim=-1) @ v


class TPBlock(nn.Module):
    def __init__(self, d, heads, tp, ffn_mult=4):
        super().__init__()
        assert heads % tp == 0 and (ffn_mult * d) % tp == 0
        self.h = heads // tp          # local heads
        self.dh = d // heads
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * self.h * self.dh)          # column-parallel
        self.proj = nn.Linear(self.h * self.dh, d, bias=False)  # row-parallel
        self.up = nn.Linear(d, ffn_mult * d // tp)              # column-parallel
        self.down = nn.Linear(ffn_mult * d // tp, d, bias=False)  # row-parallel
        self.proj_bias = nn.Parameter(torch.zeros(d))
        self.down_bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        b, t, _ = x.shape
        a = _CopyToTP.apply(self.ln1(x))
        q, k, v = self.qkv(a).view(b, t, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        y = attention(q, k, v)
        y = y.transpose(1, 2).reshape(b, t, self.h * self.dh)
        x = x + _ReduceFromTP.apply(self.proj(y)) + self.proj_bias
        m = _CopyToTP.apply(self.ln2(x))
        x = x + _ReduceFromTP.apply(self.down(F.gelu(self.up(m)))) + self.down_bias
        return x


class TPGPT(nn.Module):
    def __init__(self, vocab, d, heads, layers, seq, tp):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([TPBlock(d, heads, tp) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def batch(step, bsz, seq, vocab, device):
    """The synthetic language: x[i] = (7 x[i-1] + 3 x[i-2] + 1) mod vocab, 10% random tokens."""
    g = torch.Generator().manual_seed(1234 + step)
    x = torch.empty(bsz, seq + 1, dtype=torch.long)
    x[:, :2] = torch.randint(vocab, (bsz, 2), generator=g)
    noise = torch.rand(bsz, seq + 1, generator=g) < 0.1
    rnd = torch.randint(vocab, (bsz, seq + 1), generator=g)
    for i in range(2, seq + 1):
        x[:, i] = torch.where(noise[:, i], rnd[:, i], (7 * x[:, i - 1] + 3 * x[:, i - 2] + 1) % vocab)
    x = x.to(device)
    return x[:, :-1], x[:, 1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()

    local = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    tp, rank = dist.get_world_size(), dist.get_rank()
    torch.manual_seed(0)  # replicated parts (embeddings, norms, head) equal on every rank
    model = TPGPT(args.vocab, args.dim, args.heads, args.layers, args.seq, tp)
    torch.manual_seed(100 + rank)  # the TP shards: different per rank
    for blk in model.blocks:
        for lin in (blk.qkv, blk.proj, blk.up, blk.down):
            nn.init.normal_(lin.weight, std=0.02 / math.sqrt(tp if lin in (blk.proj, blk.down) else 1))
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    # bf16 activations on the GPU (what TP training all-reduces); fp32 on the CPU (gloo has no
    # bf16 reductions in older torch)
    amp = (torch.autocast(device_type="cuda", dtype=torch.bfloat16) if device.type == "cuda"
           else contextlib.nullcontext())

    losses, t0, warm = [], None, 10
    for step in range(args.steps):
        if step == warm:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        x, y = batch(step, args.batch, args.seq, args.vocab, device)
        with amp:
            logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, args.vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        # Replicated parameters get the same gradient on every rank (the activations entering
        # them are all-reduced), so no gradient all-reduce is needed at TP only.
        opt.step()
        losses.append(loss.item())
        if rank == 0 and (step % 20 == 0 or step == args.steps - 1):
            print(f"step {step} loss {losses[-1]:.4f}", flush=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0 if t0 else float("nan")
    tokens = (args.steps - warm) * args.batch * args.seq
    last = sum(losses[-10:]) / len(losses[-10:])
    if rank == 0:
        print(f"tp={tp} steps={args.steps} loss={last:.4f} tokens/s={tokens / dt:.0f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
