"""The process grid, the pipeline schedule and the data-parallel sharded optimizer of perf/train.

Ranks are laid out as Megatron-LM does: TP fastest, then DP, then PP,
  rank = (pp_stage * dp + dp_index) * tp + tp_index.

Pipeline schedule: GPipe (Huang et al., arXiv 1811.06965): every micro-batch forward, stage to
stage (Send/Recv of the residual stream in the compute dtype), then every micro-batch backward
in the same order (Send/Recv of its gradient).

Data parallelism: a distributed optimizer as Megatron-LM's (and ZeRO stage 1, Rajbhandari et al.,
arXiv 1910.02054): the rank's parameters form one flat fp32 vector split into DP shards;
the gradients are reduce-scattered (each DP rank receives the sum of its shard), each rank
updates its shard with AdamW, and the updated shards are all-gathered. The reduce-scatter
(fp32 gradients) and the all-gather (fp32 parameters) are the data-parallel traffic coccl can
compress (COCCL_CODEC_REDUCESCATTER / COCCL_CODEC_ALLGATHER through the shim), separately from
the TP all-reduces (COCCL_CODEC_ALLREDUCE).
"""
import math

import torch
import torch.distributed as dist


class Grid:
    def __init__(self, tp, dp, pp):
        self.tp, self.dp, self.pp = tp, dp, pp
        self.world, self.rank = dist.get_world_size(), dist.get_rank()
        if tp * dp * pp != self.world:
            raise SystemExit(f"tp {tp} x dp {dp} x pp {pp} != world size {self.world}")
        self.tp_index = self.rank % tp
        self.dp_index = (self.rank // tp) % dp
        self.stage = self.rank // (tp * dp)
        # every rank creates every group, in the same order (torch.distributed's rule)
        self.tp_group = self.dp_group = None
        for s in range(pp):
            for d in range(dp):
                ranks = [(s * dp + d) * tp + t for t in range(tp)]
                g = dist.new_group(ranks) if tp > 1 else None
                if self.rank in ranks:
                    self.tp_group = g
        for s in range(pp):
            for t in range(tp):
                ranks = [(s * dp + d) * tp + t for d in range(dp)]
                g = dist.new_group(ranks) if dp > 1 else None
                if self.rank in ranks:
                    self.dp_group = g

    def peer(self, stage):
        """The rank of `stage` with this rank's TP and DP indices."""
        return (stage * self.dp + self.dp_index) * self.tp + self.tp_index

    @property
    def logger(self):
        """The rank that prints and writes the CSV: TP 0, DP 0 of the last stage."""
        return self.tp_index == 0 and self.dp_index == 0 and self.stage == self.pp - 1


def pipeline_step(stage, grid, micro, act_dtype, train, wire_dtype=None):
    """Runs the micro-batches [(x, y)] through the pipeline. Returns the sum over micro-batches of
    the mean cross-entropy (nats per byte) on the last stage, else None. With train set, the
    gradients of (sum of micro-batch losses) / len(micro) are accumulated into the parameters.
    wire_dtype: the type of the activation messages (default act_dtype); the values are always
    rounded to act_dtype first, so float64 carries the same numbers past a codec policy that
    compresses act_dtype (no codec takes float64): an exact pipeline for evaluation."""
    wire = wire_dtype or act_dtype
    first, last, n = stage.first, stage.last, len(micro)
    saved, total = [], 0.0
    for x, y in micro:
        if first:
            inp = x
        else:
            b, t = x.shape
            buf = torch.empty(b, t, stage.cfg.d, dtype=wire, device=x.device)
            dist.recv(buf, src=grid.peer(grid.stage - 1))
            inp = buf.float().requires_grad_(train)
        with torch.set_grad_enabled(train):
            out = stage(inp)
            if last:
                loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
                total += loss.detach()
                out = loss / n
        if not last:
            dist.send(out.detach().to(act_dtype).to(wire).contiguous(), dst=grid.peer(grid.stage + 1))
        if train:
            saved.append((inp, out))
    if train:
        for inp, out in saved:
            if last:
                out.backward()
            else:
                g = torch.empty(out.shape, dtype=act_dtype, device=out.device)
                dist.recv(g, src=grid.peer(grid.stage + 1))
                out.backward(g.float())
            if not first:
                dist.send(inp.grad.to(act_dtype).contiguous(), dst=grid.peer(grid.stage - 1))
    if not last:
        return None
    return float(total)


def _reduce_scatter(out, inp, group, gloo):
    if gloo:  # gloo has no reduce-scatter: all-reduce and keep the shard
        dist.all_reduce(inp, group=group)
        r = dist.get_rank(group)
        out.copy_(inp[r * out.numel():(r + 1) * out.numel()])
    else:
        dist.reduce_scatter_tensor(out, inp, group=group)


def _all_gather(out, inp, group, gloo):
    if gloo:
        dist.all_gather(list(out.chunk(dist.get_world_size(group))), inp, group=group)
    else:
        dist.all_gather_into_tensor(out, inp, group=group)


class ShardedAdamW:
    """AdamW (Loshchilov & Hutter, arXiv 1711.05101) over this rank's DP shard of the flat
    parameter vector; decoupled weight decay on matrices only."""

    def __init__(self, params, grid, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                 gloo=False):
        self.params, self.grid, self.lr, self.betas, self.eps = list(params), grid, lr, betas, eps
        self.gloo, dev = gloo, self.params[0].device
        n = sum(p.numel() for p in self.params)
        self.shard = math.ceil(n / grid.dp)
        self.flat = torch.zeros(self.shard * grid.dp, device=dev)
        self.grads = torch.zeros_like(self.flat)
        decay = torch.zeros_like(self.flat)
        off = 0
        for p in self.params:
            self.flat[off:off + p.numel()].copy_(p.detach().flatten())
            if p.dim() >= 2:
                decay[off:off + p.numel()] = weight_decay
            off += p.numel()
        lo = grid.dp_index * self.shard
        self.mine = slice(lo, lo + self.shard)
        # This rank's shard of the weights, kept apart from the gathered copy `flat`: a lossy
        # parameter all-gather (the shim's weight-difference AllGather, SDP4Bit's qWD) changes
        # `flat` but never the weights the optimizer steps. Exact gathers keep them equal.
        self.master = self.flat[self.mine].clone()
        self.decay = decay[self.mine].clone()
        self.m = torch.zeros(self.shard, device=dev)
        self.v = torch.zeros(self.shard, device=dev)
        self.t = 0

    def step(self, lr_scale):
        """Reduce-scatters the gradients (mean over DP), updates the shard, all-gathers."""
        off = 0
        for p in self.params:
            self.grads[off:off + p.numel()].copy_(p.grad.flatten())
            p.grad = None
            off += p.numel()
        g = torch.empty(self.shard, device=self.flat.device)
        if self.grid.dp > 1:
            _reduce_scatter(g, self.grads, self.grid.dp_group, self.gloo)
            g.mul_(1.0 / self.grid.dp)
        else:
            g.copy_(self.grads)
        self.t += 1
        b1, b2 = self.betas
        lr = self.lr * lr_scale
        self.m.mul_(b1).add_(g, alpha=1 - b1)
        self.v.mul_(b2).addcmul_(g, g, value=1 - b2)
        mhat = self.m / (1 - b1 ** self.t)
        vhat = self.v / (1 - b2 ** self.t)
        w = self.master
        w.mul_(1 - lr * self.decay).addcdiv_(mhat, vhat.sqrt().add_(self.eps), value=-lr)
        if self.grid.dp > 1:
            _all_gather(self.flat, w, self.grid.dp_group, self.gloo)
        else:
            self.flat[self.mine].copy_(w)
        with torch.no_grad():
            off = 0
            for p in self.params:
                p.copy_(self.flat[off:off + p.numel()].view_as(p))
                off += p.numel()

    def state_dict(self):
        return {"flat": self.flat, "master": self.master, "m": self.m, "v": self.v, "t": self.t}

    def load_state_dict(self, s):
        self.flat.copy_(s["flat"])
        self.master.copy_(s["master"] if "master" in s else self.flat[self.mine])
        self.m.copy_(s["m"])
        self.v.copy_(s["v"])
        self.t = s["t"]
        with torch.no_grad():
            off = 0
            for p in self.params:
                p.copy_(self.flat[off:off + p.numel()].view_as(p))
                off += p.numel()
