#!/usr/bin/env python3
"""PyTorch's ProcessGroupNCCL through the coccl libnccl.so.2 shim: 2 processes on one GPU.

Each process is started with LD_PRELOAD=<shim> and its own NCCL_HOSTID (the real NCCL refuses
two ranks on one GPU of one host otherwise). Compressed collectives (all_reduce sum/avg,
reduce_scatter, all_gather of bf16/fp32 above COCCL_COMPRESS_MIN_BYTES) are checked against the
exact result within the codec's error and for bitwise agreement across ranks; everything else
(broadcast, max, small messages, barrier, a new_group) must be exact.

usage: torch_check.py --shim path/to/libnccl.so.2 [--codec fp8_ash_ds|int8|none] [--world 2]
                      [--delta]
The codec is read by the shim from COCCL_CODEC; --codec only sets the tolerance (and
COCCL_CODEC when that is unset). --delta (with a codec) also writes a policy file whose
allgather rule says "delta": true (COCCL_POLICY; docs/policy.md) and checks the
weight-difference all_gather_into_tensor: the first call of a shape exact, later ones within
the codec's error of each step's change (far below its error of the weights), ranks bitwise
alike, into a fresh buffer and in place.
"""
import argparse
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# relative L2 error allowed per codec (two ranks; measured: fp8_ash_ds ~4%, int8 ~1.1%)
TOLERANCE = {"none": 0.0, "int8": 0.02, "fp8_ash_ds": 0.06}
N = 1 << 20  # elements: far above the default 64 KiB threshold


def rel_l2(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def fingerprint(t):
    """An exact integer summary of a tensor's bits, to compare ranks with an int64 all_gather."""
    bits = t.contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32)
    w = torch.arange(1, bits.numel() + 1, device=t.device, dtype=torch.int64)
    return (bits.to(torch.int64) * w).sum().reshape(1)


def delta_checks(rank, world, dev, tol_lossy, failures, errors):
    """The shim's weight-difference AllGather: a slowly drifting weight shard per rank."""
    n = N // 2  # a shape of its own: its first call starts the shim's reference
    # every rank's shard, made locally (the reference must not go through the shim)
    gens = [torch.Generator(device=dev).manual_seed(3000 + r) for r in range(world)]
    ws = [torch.randn(n, device=dev, generator=g) for g in gens]
    out = torch.empty(world * n, device=dev)
    for step in range(4):
        if step:
            for w, g in zip(ws, gens):
                w += 1e-3 * torch.randn(n, device=dev, generator=g)
        w = ws[rank]
        if step == 2:  # in place
            out[rank * n:(rank + 1) * n].copy_(w)
            dist.all_gather_into_tensor(out, out[rank * n:(rank + 1) * n])
        else:
            out = torch.full((world * n,), float("nan"), device=dev)  # garbage is never read
            dist.all_gather_into_tensor(out, w)
        want = torch.cat([x.double() for x in ws])
        err = (out.double() - want).norm().item()
        name = f"delta all_gather step {step}"
        if step == 0:
            errors[name] = err
            if err != 0.0:
                failures.append(f"{name}: the first call is not exact (|err| {err:.3g})")
        else:
            change = 1e-3 * (world * n) ** 0.5  # |change| of the concatenated shards
            errors[name] = err / change
            if not 0 < err <= tol_lossy * change:
                failures.append(f"{name}: |err| / |change| {err / change:.4g} not in (0, {tol_lossy}]")
        fps = [torch.empty(1, dtype=torch.int64, device=dev) for _ in range(world)]
        dist.all_gather(fps, fingerprint(out))
        if any(f.item() != fps[0].item() for f in fps):
            failures.append(f"{name}: ranks disagree")


def worker(rank, world, port, shim, tol_lossy, results, delta=False):
    os.environ["NCCL_HOSTID"] = f"torch-check-host{rank}"
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    failures = []

    def check(name, got, want, lossy):
        tol = tol_lossy if lossy else (4e-3 if got.dtype == torch.bfloat16 else 1e-6)
        err = rel_l2(got, want)
        if not err <= tol:
            failures.append(f"{name}: relL2 {err:.4g} > {tol}")
        return err

    with open("/proc/self/maps") as f:
        maps = f.read()
    if shim and os.path.realpath(shim) not in maps:
        failures.append("the shim is not loaded in this process")
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, device_id=dev)
    version = torch.cuda.nccl.version()
    lossy = tol_lossy > 0
    errors = {}
    for i, dtype in enumerate((torch.float32, torch.bfloat16)):
        # every rank's input, made locally (the references must not go through the shim)
        xs = [torch.randn(N, device=dev, generator=torch.Generator(device=dev).manual_seed(
            1000 + 10 * r + i)).to(dtype) for r in range(world)]
        x = xs[rank]
        exact_sum = sum(t.double() for t in xs)
        for op, scale in ((dist.ReduceOp.SUM, 1.0), (dist.ReduceOp.AVG, 1.0 / world)):
            y = x.clone()
            dist.all_reduce(y, op=op)
            name = f"all_reduce {op} {dtype}"
            errors[name] = check(name, y, exact_sum * scale, lossy)
            fps = [torch.empty(1, dtype=torch.int64, device=dev) for _ in range(world)]
            dist.all_gather(fps, fingerprint(y))
            if any(f.item() != fps[0].item() for f in fps):
                failures.append(f"{name}: ranks disagree")
        # all_gather_into_tensor and reduce_scatter_tensor
        out = torch.empty(world * N, device=dev, dtype=dtype)
        dist.all_gather_into_tensor(out, x)
        errors[f"all_gather {dtype}"] = check(f"all_gather {dtype}", out,
                                              torch.cat([t.double() for t in xs]), lossy)
        rs = torch.empty(N // world, device=dev, dtype=dtype)
        dist.reduce_scatter_tensor(rs, x)
        want = exact_sum[rank * (N // world):(rank + 1) * (N // world)]
        errors[f"reduce_scatter {dtype}"] = check(f"reduce_scatter {dtype}", rs, want, lossy)
        # never compressed: MAX, a small message, broadcast
        m = x.clone()
        dist.all_reduce(m, op=dist.ReduceOp.MAX)
        check(f"all_reduce MAX {dtype}", m, torch.stack([t.double() for t in xs]).amax(0), False)
        s = x[:64].clone()
        dist.all_reduce(s)
        check(f"all_reduce small {dtype}", s, exact_sum[:64], False)
        b = x.clone()
        dist.broadcast(b, src=1)
        check(f"broadcast {dtype}", b, xs[1].double(), False)
    # point-to-point: a ring of send/recv (ncclSend / ncclRecv: through coccl when its policy
    # compresses Send/Recv, COCCL_CODEC_SENDRECV or a COCCL_POLICY sendrecv rule; device buffers
    # then run exact inside coccl, said once)
    for dtype in (torch.float32, torch.bfloat16):
        xs = [torch.randn(N, device=dev, generator=torch.Generator(device=dev).manual_seed(
            2000 + r)).to(dtype) for r in range(world)]
        got = torch.empty(N, device=dev, dtype=dtype)
        ops = [dist.P2POp(dist.isend, xs[rank], (rank + 1) % world),
               dist.P2POp(dist.irecv, got, (rank + world - 1) % world)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        errors[f"send/recv {dtype}"] = check(f"send/recv {dtype}", got,
                                             xs[(rank + world - 1) % world].double(), lossy)
    if delta:
        delta_checks(rank, world, dev, tol_lossy, failures, errors)
    dist.barrier()
    # a subgroup (split from the default communicator when PyTorch can)
    g = dist.new_group(ranks=list(range(world)))
    z = torch.full((N,), float(rank + 1), device=dev)
    dist.all_reduce(z, group=g)
    check("new_group all_reduce", z, torch.full_like(z, world * (world + 1) / 2, dtype=torch.float64),
          lossy)
    dist.barrier(group=g)
    torch.cuda.synchronize()
    dist.destroy_process_group()
    results[rank] = (failures, errors, version)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", default="", help="libnccl.so.2 to LD_PRELOAD ('' = plain NCCL)")
    ap.add_argument("--codec", default=os.environ.get("COCCL_CODEC") or "none")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--delta", action="store_true",
                    help="also check the weight-difference all-gather (writes COCCL_POLICY)")
    args = ap.parse_args()
    codec = args.codec.split(":")[0]
    if args.codec != "none" and not os.environ.get("COCCL_CODEC"):
        os.environ["COCCL_CODEC"] = args.codec
    if not args.shim:
        codec = "none"
    tol = TOLERANCE.get(codec, 0.06)
    if args.delta:
        if tol == 0:
            print("FAILED: --delta needs --shim and a codec")
            return 1
        import tempfile
        policy = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        policy.write('{"rules": [{"collective": "allgather", "dtype": "float", "codec": "%s", '
                     '"delta": true}]}' % args.codec)
        policy.close()
        os.environ["COCCL_POLICY"] = policy.name
    if args.shim:
        os.environ["LD_PRELOAD"] = os.path.realpath(args.shim)  # for the spawned processes
    for var, val in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                     ("NVSHMEM_DISABLE_NVLS", "1"), ("NCCL_SOCKET_IFNAME", "lo"),
                     ("COCCL_SOCKET_IFNAME", "lo"), ("NCCL_DEBUG", "WARN"),
                     ("COCCL_DEBUG", "WARN")):
        os.environ.setdefault(var, val)
    os.environ.pop("COCCL_COMM_ID", None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.Manager().dict()
    mp.spawn(worker, args=(args.world, port, args.shim, tol, results, args.delta),
             nprocs=args.world)
    ok = True
    for rank in sorted(results.keys()):
        failures, errors, version = results[rank]
        print(f"rank {rank}: nccl version {version}; relL2 " +
              ", ".join(f"{k} {v:.3g}" for k, v in errors.items()))
        for f in failures:
            print(f"rank {rank}: FAIL {f}")
            ok = False
    lossy_errors = [v for r in results.values() for k, v in r[1].items()]
    if tol > 0 and lossy_errors and max(lossy_errors) == 0.0:
        print("NOTE: every compressible collective was exact: the compressed path was not taken "
              "(no coccl device path? see the shim's WARN line)")
    if len(results) != args.world:
        ok = False
        print("FAIL: not every rank reported")
    print(("OK" if ok else "FAILED") + f": codec {args.codec}, shim {args.shim or '(none)'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
