#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz (corpus/<target>/seed_*), small files. Re-run after
changing an input layout of a target; the fuzzers' own finds are not checked in."""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
random.seed(18)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed_" + name), "wb") as f:
        f.write(data)


# fuzz_codec_decode: [spec][dtype][count u16][p][self][avg] then payload bytes.
FP32, FP16, BF16, INT32, F64, F8 = 7, 6, 9, 2, 8, 10
for spec in range(16):
    for dt in (FP32, FP16, BF16):
        count = random.choice([1, 31, 128, 129, 300])
        head = bytes([spec, dt]) + struct.pack("<H", count) + bytes([random.randint(0, 3), random.randint(0, 3), spec & 1])
        codes = bytes(random.randint(0, 255) for _ in range(64))
        scales = b"".join(struct.pack("<f", v) for v in (1.0, 0.5, -2.0, 1e-3))
        write("fuzz_codec_decode", "s%02d_t%d" % (spec, dt), head + codes + scales)
for dt in (INT32, F64, F8, 0):
    write("fuzz_codec_decode", "none_t%d" % dt, bytes([0, dt]) + struct.pack("<H", 17) + bytes([2, 1, 0]) + bytes(range(40)))
write("fuzz_codec_decode", "nan_scales", bytes([1, FP32]) + struct.pack("<H", 128) + bytes([3, 0, 1]) + b"\x7f" * 8 + struct.pack("<f", float("nan")) + struct.pack("<f", float("inf")))
write("fuzz_codec_decode", "zero_count", bytes([8, FP16, 0, 0, 1, 0, 0]))

# fuzz_codec_spec: spec strings.
specs = ["none", "int8", "int8:block=64", "int8:rotate=0", "int8:rotate=1", "int8:rotate=auto",
         "int8:block=512,rotate=1", "fp8_ash_ds", "fp8_ash_ds:format=e5m2",
         "fp8_ash_ds:block=32,format=e4m3,lambda=1e-06,alpha_min=0.001,alpha_max=1000",
         " int8 : block = 128 ", "int8:block=128,block=128", "int8:", "int8:block", "int8:block=",
         "int8:=3", "int8:block=7", "fp8_ash_ds:lambda=-1", "fp8_ash_ds:lambda=nan",
         "fp8_ash_ds:alpha_min=10,alpha_max=1", "fp8_ash_ds:alpha_max=1e300", "unknown",
         "none:x=1", ":", "", "int8:block=0x80", "int8:block=128,,rotate=0", "a" * 100]
for i, s in enumerate(specs):
    write("fuzz_codec_spec", "%02d" % i, s.encode())

# fuzz_env: [row] then the value.
values = ["", "0", "1", "-1", "42", "4096", "1k", "64M", "2g", "0x1000", "010", "9223372036854775807",
          "99999999999999999999", "1kb", " 5", "auto", "AUTO", "two-shot", "ring", "direct",
          "cuda_ipc", "nccl", "coccl", "INFO", "WARN", "TRACE", "ALL", "int8", "fp8_ash_ds:block=64",
          "127.0.0.1:5000", "eth0", "^docker", "=lo"]
for row in range(24):
    for v in random.sample(values, 3):
        write("fuzz_env", "r%02d_%s" % (row, "".join(c if c.isalnum() else "_" for c in v) or "empty"),
              bytes([row]) + v.encode())

# fuzz_bootstrap_wire: [case] then its parameters and stream.
MAGIC = 0x0123456789ABCDEF
m = struct.pack("<Q", MAGIC)
# hello: magic, nranks-1, self, then [piece length][bytes]...: pieces of 16, 5, 3.
hello_ok = m + struct.pack("<ii", 1, 4)
write("fuzz_bootstrap_wire", "hello_ok", bytes([0]) + m + bytes([3, 0]) + bytes([15]) + hello_ok)
write("fuzz_bootstrap_wire", "hello_pieces", bytes([0]) + m + bytes([3, 2]) + bytes([4]) + hello_ok[:5] + bytes([63]) + hello_ok[5:])
write("fuzz_bootstrap_wire", "hello_badmagic", bytes([0]) + m + bytes([3, 0]) + bytes([15]) + struct.pack("<Q", 7) + struct.pack("<ii", 1, 4))
write("fuzz_bootstrap_wire", "hello_badrank", bytes([0]) + m + bytes([3, 0]) + bytes([15]) + m + struct.pack("<ii", 9, 4))
# registration: magic, then messages of 112 bytes (magic, rank, nranks, PeerInfo).
def reg(rank, nranks):
    info = struct.pack("<HH4s", 2, 0x1234, bytes([127, 0, 0, 1])) + bytes(20) + b"host\0".ljust(64, b"\0")
    return m + struct.pack("<ii", rank, nranks) + info.ljust(96, b"\0")
stream = b"".join(bytes([63]) + r[:64] + bytes([63]) + r[64:] for r in (reg(0, 2), reg(1, 2)))
write("fuzz_bootstrap_wire", "reg_two", bytes([1]) + m + stream)
write("fuzz_bootstrap_wire", "reg_dup", bytes([1]) + m + stream + bytes([63]) + reg(1, 2)[:64] + bytes([63]) + reg(1, 2)[64:])
write("fuzz_bootstrap_wire", "reg_bad", bytes([1]) + m + bytes([63]) + reg(-1, 0)[:64] + bytes([63]) + reg(-1, 0)[64:])
# frames: wanting, want tag, want bytes, then (selector, tag, selector, bytes)...
write("fuzz_bootstrap_wire", "frames", bytes([2, 1]) + struct.pack("<QQ", 3, 16) + bytes([1, 0]) + struct.pack("<Q", 2**64 - 1) + bytes([0]) + struct.pack("<QB", 5, 1))
# reply: magic, nranks-1, rank, then the reply bytes and two selectors.
write("fuzz_bootstrap_wire", "reply_ok", bytes([3]) + m + bytes([3, 1]) + m + struct.pack("<ii", 0, 4) + bytes([1, 1]))
write("fuzz_bootstrap_wire", "reply_rejected", bytes([3]) + m + bytes([3, 1]) + m + struct.pack("<ii", 2, 4) + bytes([1, 1]))
# address: its bytes, then selectors.
write("fuzz_bootstrap_wire", "addr_v4", bytes([4]) + struct.pack("<HH4s", 2, 0x5000, bytes([10, 0, 0, 1])) + bytes(24) + bytes([1]))
write("fuzz_bootstrap_wire", "addr_v6", bytes([4]) + struct.pack("<HH", 10, 0x5000) + bytes(4) + bytes(range(16)) + bytes(4) + bytes([0, 1]))
write("fuzz_bootstrap_wire", "addr_garbage", bytes([4]) + bytes(random.randint(0, 255) for _ in range(40)))

# fuzz_policy_file: policy files, good and bad (docs/policy.md).
with open(os.path.join(HERE, "..", "..", "perf", "policy", "3d-training.json"), "rb") as f:
    write("fuzz_policy_file", "3d_training", f.read())
policies = {
    "minimal": '{"rules": []}',
    "every_field": '{"rules": [{"name": "tp*", "nranks": 8, "stride": 1, "members": [0,1,2,3,4,5,6,7],\n'
                   '"collective": ["allreduce", "allgather"], "dtype": ["bf16", "half"],\n'
                   '"bytes": {"from": "64K", "below": 1073741824}, "codec": "fp8_ash_ds", "min_bytes": "1M"}]}',
    "hier": '{"rules": [{"collective": "reducescatter", "codec": "hier:intra=int8,inter=fp8_ash_ds"}]}',
    "sendrecv": '// comment\n{"rules": [{"collective": "sendrecv", "codec": "int8:block=64"}, /* c */ {"codec": "none"}]}',
    "shadowed": '{"rules": [{"codec": "none"}, {"collective": "allreduce", "codec": "int8"}]}',
    "syntax": '{"rules": [{"codec": "int8",}]}',
    "unknown_key": '{"rules": [{"colective": "allreduce", "codec": "int8"}]}',
    "dup_key": '{"rules": [{"codec": "int8", "codec": "none"}]}',
    "bad_bytes": '{"rules": [{"bytes": {"from": "1M", "below": "64K"}, "codec": "int8"}]}',
    "deep": '[' * 40,
    "delta": '{"rules": [{"collective": "allgather", "dtype": "float", "codec": "int8", "delta": true},\n'
             '{"collective": "reducescatter", "codec": "int8", "delta": true}]}',
}
for name, text in policies.items():
    write("fuzz_policy_file", name, text.encode())

# fuzz_plugin_decode: [spec][dtype: fp32, fp16, bf16][count u16][p][self][mode] then the bytes
# that fill every buffer. Specs 0-11 int4, 12-17 tah strict=0, 18-19 tah strict=1, 20 tah
# select=message (the list in
# fuzz_plugin_decode.cc). Counts around the blocks / rows of each spec; fill bytes that read as
# ordinary floats (and scale words), mixed with random bytes.
INT4_BLOCK = [128, 32, 2048, 128, 128, 32, 2048, 2048, 128, 32, 2048, 64]
TAH_ROW = [64, 128, 192, 1024, 4096, 64, 64, 256]
def floats(n, lo=-4.0, hi=4.0):
    return b"".join(struct.pack("<f", random.uniform(lo, hi)) for _ in range(n))
for spec in range(20):
    g = INT4_BLOCK[spec] if spec < 12 else TAH_ROW[spec - 12]
    for dt in range(3):
        count = random.choice([1, g - 1, g, g + 1, 2 * g + 3, 70 * 64 if spec >= 12 else 3 * g // 2])
        count = min(count, 4500)
        p = random.randint(0, 3)
        head = bytes([spec, dt]) + struct.pack("<H", count) + bytes([p, random.randint(0, p), random.randint(0, 7)])
        fill = floats(48) + bytes(random.randint(0, 255) for _ in range(64)) + floats(16, -1e-3, 1e-3)
        write("fuzz_plugin_decode", "s%02d_t%d" % (spec, dt), head + fill)
nonfinite = b"".join(struct.pack("<f", v) for v in (float("nan"), float("inf"), -float("inf"), 1.0, -0.0, 3e38))
write("fuzz_plugin_decode", "int4_nonfinite", bytes([4, 0]) + struct.pack("<H", 300) + bytes([3, 1, 1]) + nonfinite)
write("fuzz_plugin_decode", "tah_nonfinite", bytes([12, 0]) + struct.pack("<H", 2200) + bytes([3, 2, 0]) + nonfinite)
write("fuzz_plugin_decode", "tah_all_ones", bytes([13, 2]) + struct.pack("<H", 4500) + bytes([2, 0, 4]) + b"\xff" * 32)
write("fuzz_plugin_decode", "tah_strict_refused", bytes([18, 1]) + struct.pack("<H", 100) + bytes([1, 0, 0]) + floats(8))
write("fuzz_plugin_decode", "int4_zero_count", bytes([0, 0, 0, 0, 0, 0, 0]))
write("fuzz_plugin_decode", "int4_max_count", bytes([7, 1]) + struct.pack("<H", 4500) + bytes([3, 3, 1]) + floats(32))
# tah select=message (spec 20, row 128): 33 rows and a partial one, 3 payloads, the owner step
write("fuzz_plugin_decode", "tah_message", bytes([20, 2]) + struct.pack("<H", 33 * 128 + 5) + bytes([3, 1, 2]) + floats(64))
