"""A byte-level GPT split Megatron-style over tensor- and pipeline-parallel ranks.

Tensor parallelism (Shoeybi et al., Megatron-LM, arXiv 1909.08053, section 3): in every layer
the attention heads and the MLP's hidden units are split over the TP ranks. QKV and MLP-up are
column-parallel (forward identity, backward all-reduce of the input gradient), the attention
output projection and MLP-down are row-parallel (forward all-reduce of the output, backward
identity). Those all-reduces carry activations in the compute dtype (bf16 on the GPU): they are
the tensor-parallel traffic coccl compresses when the libnccl.so.2 shim is preloaded.

Pipeline parallelism: stage s of P holds layers [s L / P, (s + 1) L / P); stage 0 also the
embeddings, the last stage the final LayerNorm and the LM head (untied from the embedding).

Every layout starts from the same weights: `full_weights` draws the whole unsplit model from one
seeded generator in a fixed order, and `Stage` takes its rank's slices of it, so runs with
different TP / PP / DP layouts differ only in how the sums are formed.
"""
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Config:
    def __init__(self, vocab=256, d=512, layers=8, heads=8, seq=256, ffn_mult=4):
        self.vocab, self.d, self.layers, self.heads, self.seq = vocab, d, layers, heads, seq
        self.ffn = ffn_mult * d
        assert d % heads == 0

    def param_count(self):
        d, L = self.d, self.layers
        per_layer = 4 * d + 3 * d * d + 3 * d + d * d + d + self.ffn * d + self.ffn + d * self.ffn + d
        return self.vocab * d + self.seq * d + L * per_layer + 2 * d + self.vocab * d


def full_weights(cfg, seed):
    """The unsplit model's weights (fp32, CPU), drawn in a fixed order from one generator.
    GPT-2's initialisation: N(0, 0.02), the residual projections scaled by 1/sqrt(2 L)."""
    g = torch.Generator().manual_seed(seed)
    d, L = cfg.d, cfg.layers

    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=g) * std

    w = {"tok": normal(cfg.vocab, d), "pos": normal(cfg.seq, d)}
    resid = 0.02 / math.sqrt(2 * L)
    for l in range(L):
        w[f"{l}.ln1.w"], w[f"{l}.ln1.b"] = torch.ones(d), torch.zeros(d)
        w[f"{l}.qkv.w"], w[f"{l}.qkv.b"] = normal(3 * d, d), torch.zeros(3 * d)
        w[f"{l}.proj.w"], w[f"{l}.proj.b"] = normal(d, d, std=resid), torch.zeros(d)
        w[f"{l}.ln2.w"], w[f"{l}.ln2.b"] = torch.ones(d), torch.zeros(d)
        w[f"{l}.up.w"], w[f"{l}.up.b"] = normal(cfg.ffn, d), torch.zeros(cfg.ffn)
        w[f"{l}.down.w"], w[f"{l}.down.b"] = normal(d, cfg.ffn, std=resid), torch.zeros(d)
    w["lnf.w"], w["lnf.b"] = torch.ones(d), torch.zeros(d)
    w["head.w"] = normal(cfg.vocab, d)
    return w


class _CopyToTP(torch.autograd.Function):
    """Forward identity; backward all-reduce over the TP group (input of a column-parallel layer)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous()
        dist.all_reduce(g, group=ctx.group)
        return g, None


class _ReduceFromTP(torch.autograd.Function):
    """Forward all-reduce over the TP group; backward identity (output of a row-parallel layer)."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


class TP:
    """The tensor-parallel group of this rank (size 1: no communication)."""

    def __init__(self, size, index, group, act_dtype):
        self.size, self.index, self.group, self.act_dtype = size, index, group, act_dtype

    def copy_in(self, x):
        x = x.to(self.act_dtype)
        return _CopyToTP.apply(x, self.group) if self.size > 1 else x

    def reduce_out(self, x):
        x = x.to(self.act_dtype)
        return _ReduceFromTP.apply(x, self.group) if self.size > 1 else x


def _param(t):
    return nn.Parameter(t.contiguous().clone())


class Block(nn.Module):
    def __init__(self, cfg, w, l, tp):
        super().__init__()
        d, H, r, n = cfg.d, cfg.heads, tp.index, tp.size
        assert H % n == 0 and cfg.ffn % n == 0, "heads and 4 d must divide by the TP size"
        self.tp, self.h, self.dh = tp, H // n, d // H
        heads = slice(r * self.h, (r + 1) * self.h)
        units = slice(r * cfg.ffn // n, (r + 1) * cfg.ffn // n)
        qkv_w = w[f"{l}.qkv.w"].view(3, H, self.dh, d)[:, heads].reshape(-1, d)
        qkv_b = w[f"{l}.qkv.b"].view(3, H, self.dh)[:, heads].reshape(-1)
        proj_w = w[f"{l}.proj.w"].view(d, H, self.dh)[:, heads].reshape(d, -1)
        self.ln1_w, self.ln1_b = _param(w[f"{l}.ln1.w"]), _param(w[f"{l}.ln1.b"])
        self.qkv_w, self.qkv_b = _param(qkv_w), _param(qkv_b)
        self.proj_w, self.proj_b = _param(proj_w), _param(w[f"{l}.proj.b"])
        self.ln2_w, self.ln2_b = _param(w[f"{l}.ln2.w"]), _param(w[f"{l}.ln2.b"])
        self.up_w, self.up_b = _param(w[f"{l}.up.w"][units]), _param(w[f"{l}.up.b"][units])
        self.down_w, self.down_b = _param(w[f"{l}.down.w"][:, units]), _param(w[f"{l}.down.b"])

    def forward(self, x):
        b, t, d = x.shape
        a = self.tp.copy_in(F.layer_norm(x, (d,), self.ln1_w, self.ln1_b))
        q, k, v = F.linear(a, self.qkv_w, self.qkv_b).view(b, t, 3, self.h, self.dh).unbind(2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)
        o = F.linear(o.transpose(1, 2).reshape(b, t, -1), self.proj_w)
        x = x + self.tp.reduce_out(o) + self.proj_b
        m = self.tp.copy_in(F.layer_norm(x, (d,), self.ln2_w, self.ln2_b))
        m = F.linear(F.gelu(F.linear(m, self.up_w, self.up_b)), self.down_w)
        return x + self.tp.reduce_out(m) + self.down_b


class Stage(nn.Module):
    """Pipeline stage `stage` of `stages` of the model, this rank's TP slices."""

    def __init__(self, cfg, w, tp, stage, stages):
        super().__init__()
        assert cfg.layers % stages == 0, "layers must divide by the PP size"
        per = cfg.layers // stages
        self.cfg, self.first, self.last = cfg, stage == 0, stage == stages - 1
        if self.first:
            self.tok, self.pos = _param(w["tok"]), _param(w["pos"])
        self.blocks = nn.ModuleList(Block(cfg, w, l, tp) for l in range(stage * per, (stage + 1) * per))
        if self.last:
            self.lnf_w, self.lnf_b, self.head = _param(w["lnf.w"]), _param(w["lnf.b"]), _param(w["head.w"])

    def forward(self, x):
        """x: token ids [b, t] on the first stage, else the residual stream [b, t, d] (fp32).
        Returns the residual stream, or the logits [b, t, vocab] (fp32) on the last stage."""
        if self.first:
            x = self.tok[x] + self.pos[: x.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        if self.last:
            x = F.layer_norm(x, (self.cfg.d,), self.lnf_w, self.lnf_b)
            x = F.linear(x, self.head).float()
        return x
