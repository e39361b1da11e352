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

COMMON = ["coccl.h", "core/"]
# Executors receive a CommContext and the request; they never include the communicator, the
# policy or each other (no include runs upward inside src/collectives/).
EXECUTOR_SHARED = ["collectives/executor.h", "collectives/request.h", "collectives/stats.h",
                   "collectives/layout.h", "comm/", "mem/", "codecs/", "kernels/", "transport/"]
RULES = {
    "src/core/": COMMON,
    "src/mem/": COMMON + ["mem/"],
    "src/comm/": COMMON + ["comm/"],
    "src/kernels/": COMMON + ["kernels/"],
    "src/codecs/": COMMON + ["codecs/", "kernels/"],
    "src/transport/": COMMON + ["transport/", "mem/"],
    "src/collectives/": COMMON + ["collectives/", "comm/", "mem/", "codecs/", "kernels/",
                                  "transport/"],
    "src/collectives/host/": COMMON + EXECUTOR_SHARED + ["collectives/host/"],
    "src/collectives/cuda_ipc/": COMMON + EXECUTOR_SHARED + ["collectives/cuda_ipc/"],
    "src/collectives/nccl/": COMMON + EXECUTOR_SHARED + ["collectives/nccl/"],
    "src/api/": COMMON + ["api/", "collectives/", "comm/", "mem/", "codecs/", "kernels/",
                          "transport/"],
    # The shim sees coccl's public API, the NCCL function table and the dtype table only.
    "nccl-tests-shim/": ["coccl.h", "nccl_abi.h", "transport/nccl/", "core/dtype.h"],
}
# The CUDA engine is instantiated from the codec list: src/kernels may include the list and the
# codec folders' device headers (header-only tile families; nothing in src/kernels links the
# codecs library, so codecs -> kernels holds for everything that links).
RULES["src/kernels/"] = RULES["src/kernels/"] + ["codecs/codec_list.h", "codecs/*/*.cuh"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SUFFIXES = {".h", ".cc", ".cu", ".cuh", ".inc"}


def rule_for(rel):
    best = None
    for prefix in RULES:
        if rel.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


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
        (ROOT / "src/collectives/host/y.cc").write_text('#include "collectives/policy.h"\n')
        if main() != 1:
            print("self-test: upward includes were not flagged")
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
    for line in bad:
        print(line)
    print(f"check_layers: {checked} files, {len(bad)} wrong includes")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(self_test() if "--self-test" in sys.argv else main())
