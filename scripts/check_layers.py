#!/usr/bin/env python3
"""Fails when a source file includes a header of a layer it may not see (DESIGN.md "Layers").

Run from anywhere: python3 scripts/check_layers.py [repo root]. CI runs it as the ctest
`layers`. A rule names, for each folder under src/ (longest prefix wins), the include prefixes
its files may use besides the public headers in include/ and the system's.
"""
import fnmatch
import pathlib
import re
import sys

_ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
ROOT = pathlib.Path(_ARGS[0] if _ARGS else pathlib.Path(__file__).parent.parent)

COMMON = ["coccl.h", "coccl_codec.h", "core/"]
# The headers every executor shares (request, executor interface, stats, shard layout, the
# per-call agreement descriptor) sit below the communicator: they see the context and the lower
# layers, never the communicator or policy.
SHARED = ["collectives/executor.h", "collectives/request.h", "collectives/stats.h",
          "collectives/layout.h", "collectives/call_desc.h", "collectives/p2p_header.h"]
BELOW_EXECUTORS = ["comm/", "mem/", "codecs/", "kernels/"]
# Executors receive a CommContext and the request; they never include the communicator, the
# policy, each other, or another executor's transport (no include runs upward inside
# src/collectives/).
EXECUTOR = COMMON + SHARED + BELOW_EXECUTORS
RULES = {
    "src/core/": COMMON,
    "src/mem/": COMMON + ["mem/"],
    "src/comm/": COMMON + ["comm/"],
    # The CUDA engine is instantiated from the codec list: src/kernels may include the list and
    # the codec folders' device headers (header-only tile families; nothing in src/kernels links
    # the codecs library, so codecs -> kernels holds for everything that links).
    "src/kernels/": COMMON + ["kernels/", "codecs/codec_list.h", "codecs/*/*.cuh"],
    "src/codecs/": COMMON + ["codecs/", "kernels/"],
    "src/transport/": COMMON + ["transport/", "mem/"],
    "src/collectives/": COMMON + ["collectives/", "comm/", "mem/", "codecs/", "kernels/",
                                  "transport/"],
    "src/collectives/executor.h": COMMON + SHARED + BELOW_EXECUTORS,
    "src/collectives/request.h": COMMON + SHARED + BELOW_EXECUTORS,
    "src/collectives/request.cc": COMMON + SHARED + BELOW_EXECUTORS,
    "src/collectives/stats.h": COMMON + SHARED + BELOW_EXECUTORS,
    "src/collectives/layout.h": COMMON + SHARED + BELOW_EXECUTORS,
    "src/collectives/call_desc.h": COMMON + SHARED + BELOW_EXECUTORS,
    "src/collectives/call_desc.cc": COMMON + SHARED + BELOW_EXECUTORS,
    "src/collectives/host/": EXECUTOR + ["collectives/host/", "transport/transport.h"],
    "src/collectives/cuda_ipc/": EXECUTOR + ["collectives/cuda_ipc/", "collectives/staged/",
                                             "transport/cuda_ipc/"],
    "src/collectives/nccl/": EXECUTOR + ["collectives/nccl/", "collectives/staged/",
                                         "transport/nccl/"],
    # The staged codec pipeline: shared by the device executors, below them (no transport).
    "src/collectives/staged/": EXECUTOR + ["collectives/staged/"],
    "src/api/": COMMON + ["api/", "collectives/", "comm/", "mem/", "codecs/", "kernels/",
                          "transport/"],
    # The shim sees coccl's public API, the NCCL loader with its function table and ABI, and
    # the dtype table only.
    "nccl-tests-shim/": ["coccl.h", "nccl_abi.h", "transport/nccl/nccl_library.h",
                         "transport/nccl/nccl_functions.inc", "transport/nccl/nccl_abi.h",
                         "core/dtype.h"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SUFFIXES = {".h", ".cc", ".cu", ".cuh", ".inc"}


def rule_for(rel):
    best = None
    for prefix in RULES:
        if rel.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


_last_bad = 0


def self_test():
    """The check must flag an upward include and pass a clean tree (ctest layers_selftest)."""
    import tempfile
    global ROOT
    with tempfile.TemporaryDirectory() as d:
        ROOT = pathlib.Path(d)
        (ROOT / "src/core").mkdir(parents=True)
        (ROOT / "src/collectives/host").mkdir(parents=True)
        (ROOT / "src/core/ok.cc").write_text('#include "core/ok.h"\n')
        (ROOT / "src/collectives/host/x.cc").write_text('#include "collectives/executor.h"\n')
        if main() != 0:
            print("self-test: a clean tree was flagged")
            return 1
        (ROOT / "src/core/bad.cc").write_text('#include "collectives/communicator.h"\n')
        (ROOT / "src/collectives/host/y.cc").write_text('#include "collectives/policy.h"\n'
                                                        '#include "transport/nccl/nccl_comm.h"\n')
        (ROOT / "src/collectives/request.h").write_text('#include "collectives/communicator.h"\n')
        (ROOT / "nccl-tests-shim").mkdir()
        (ROOT / "nccl-tests-shim/s.cc").write_text('#include "collectives/communicator.h"\n')
        bad_expected = 5
        if main() != 1 or _last_bad != bad_expected:
            print(f"self-test: expected {bad_expected} wrong includes, got {_last_bad}")
            return 1
    print("self-test passed")
    return 0


def main():
    bad = []
    checked = 0
    for path in sorted(ROOT.rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(ROOT).as_posix()
        prefix = rule_for(rel)
        if prefix is None:
            continue
        checked += 1
        here = path.parent
        for inc in INCLUDE.findall(path.read_text(errors="replace")):
            if (here / inc).is_file() and "/" not in inc:
                continue  # a file beside it
            if inc.startswith("src/"):
                inc = inc[4:]
            if not any(inc == a or (a.endswith("/") and inc.startswith(a)) or
                       ("*" in a and fnmatch.fnmatch(inc, a)) for a in RULES[prefix]):
                bad.append(f"{rel}: includes \"{inc}\" (layer {prefix} may use: "
                           f"{', '.join(RULES[prefix])})")
    global _last_bad
    _last_bad = len(bad)
    for line in bad:
        print(line)
    print(f"check_layers: {checked} files, {len(bad)} wrong includes")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(self_test() if "--self-test" in sys.argv else main())
