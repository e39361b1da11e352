#!/usr/bin/env python3
"""Captures the tensors that cross a pipeline-parallel boundary of a small GPT, as test data
for the tah codec (plugins/tah, tests/data/pp_activations).

A byte-level GPT (vocabulary 256, 6 layers, hidden 384, 6 heads, context 256) is trained from
scratch on CPython's own standard-library sources (the .py files under the running
interpreter's stdlib folder) with AdamW. The layers are split into two halves, as a 2-stage
pipeline would split them; at a few training steps the hidden states leaving layer 3 (what
stage 0 sends to stage 1, forward) and their gradients (what stage 1 sends back, backward) are
saved for a fixed evaluation batch, rounded to bf16, as raw little-endian files of rows
(tokens) x hidden, plus manifest.json.

  python3 perf/scripts/capture_pp_activations.py --out tests/data/pp_activations
  (options: --steps 300 --capture 30,100,300 --rows 512 --device cuda|cpu --seed 0)

Sizes: 6 files of 512 x 384 bf16 = 384 KiB each, 2.25 MiB in all.
"""
import argparse
import json
import math
import os
import random
import sysconfig
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def corpus_bytes(limit=8 << 20):
    """The standard library's .py files, concatenated in sorted path order (at most limit bytes)."""
    root = sysconfig.get_paths()["stdlib"]
    paths = []
    for d, _, files in os.walk(root):
        if "site-packages" in d or "test" in d.split(os.sep):
            continue
        paths += [os.path.join(d, f) for f in files if f.endswith(".py")]
    out = bytearray()
    for p in sorted(paths):
        try:
            with open(p, "rb") as f:
                out += f.read()
        except OSError:
            continue
        if len(out) >= limit:
            break
    return bytes(out[:limit]), root


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        sh = lambda z: z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(sh(q), sh(k), sh(v), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, layers=6, d=384, heads=6, ctx=256):
        super().__init__()
        self.tok, self.pos = nn.Embedding(256, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, 256, bias=False)
        self.split = layers // 2  # stage 0: blocks [0, split), stage 1: the rest

    def forward(self, idx, boundary_hook=None):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for i, blk in enumerate(self.blocks):
            if i == self.split and boundary_hook is not None:
                x = boundary_hook(x)
            x = blk(x)
        return self.head(self.ln(x))


def batch(data, n, ctx, gen, device):
    starts = torch.randint(0, len(data) - ctx - 1, (n,), generator=gen)
    x = torch.stack([data[s:s + ctx] for s in starts])
    y = torch.stack([data[s + 1:s + ctx + 1] for s in starts])
    return x.to(device), y.to(device)


def save_bf16(path, t):
    """Raw little-endian bf16 of a 2-D tensor (rows x hidden)."""
    u = t.detach().to(torch.bfloat16).contiguous().cpu().view(torch.uint8).reshape(-1)
    with open(path, "wb") as f:
        f.write(bytes(u.tolist()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--capture", default="30,100,300")
    ap.add_argument("--rows", type=int, default=512, help="tokens per capture (multiple of 256)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    raw, root = corpus_bytes()
    data = torch.tensor(list(raw), dtype=torch.long)
    ctx = 256
    model = GPT(ctx=ctx).to(a.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    gen, evgen = torch.Generator().manual_seed(a.seed), torch.Generator().manual_seed(a.seed + 1)
    ex, ey = batch(data, a.rows // ctx, ctx, evgen, a.device)  # the fixed capture batch
    captures = sorted(int(s) for s in a.capture.split(","))
    os.makedirs(a.out, exist_ok=True)
    tensors, t0 = [], time.time()
    for step in range(1, a.steps + 1):
        model.train()
        x, y = batch(data, a.batch, ctx, gen, a.device)
        lr = 1e-3 * min(1.0, step / 30) * 0.5 * (1 + math.cos(math.pi * step / a.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        loss = F.cross_entropy(model(x).view(-1, 256), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step in captures:
            model.eval()
            held = {}

            def hook(h):
                h = h.detach().requires_grad_(True)
                h.retain_grad()
                held["h"] = h
                return h

            el = F.cross_entropy(model(ex, hook).view(-1, 256), ey.view(-1))
            el.backward()
            model.zero_grad(set_to_none=True)
            h, d = held["h"], held["h"].shape[-1]
            for kind, t in (("activation", h), ("gradient", h.grad)):
                name = f"{kind[:4]}_step{step}.bf16"
                save_bf16(os.path.join(a.out, name), t.reshape(-1, d))
                tensors.append({"file": name, "kind": kind, "step": step, "dtype": "bf16",
                                "rows": int(t.numel() // d), "row": int(d),
                                "eval_loss": round(float(el), 4)})
            print(f"step {step}: train loss {float(loss):.3f} eval loss {float(el):.3f} "
                  f"({time.time() - t0:.0f} s)", flush=True)
    manifest = {
        "what": "hidden states (activation) leaving layer 3 of 6 and their gradients (gradient) "
                "at the boundary of a 2-stage pipeline split, raw little-endian bf16, rows x row",
        "model": {"layers": 6, "hidden": 384, "heads": 6, "context": 256, "vocab": 256,
                  "optimizer": "AdamW lr 1e-3 cosine, batch %d" % a.batch, "steps": a.steps,
                  "corpus": "CPython stdlib .py sources (%s), %d bytes" % (root, len(raw)),
                  "torch": torch.__version__, "device": a.device, "seed": a.seed},
        "tensors": tensors,
    }
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
