#!/usr/bin/env python3
"""Builds the byte-level training corpus of perf/train from two offline sources of real text.

Sources (nothing is downloaded at training time):
  - CPython's standard-library sources: every *.py file under the running interpreter's stdlib
    directory (site-packages excluded), in sorted path order;
  - Debian's dict-gcide (the GNU Collaborative International Dictionary of English): the
    dictzip file gcide.dict.dz from the .deb (`apt-get download dict-gcide`, then
    `dpkg-deb -x dict-gcide_*.deb DIR`; never installed), SGML tags stripped, split into
    64 KiB documents.
Each source is capped (--mib-per-source). Documents go to the held-out validation split when
the CRC32 of their name is 0 mod --val-every (about 1 in 50), else to the training split; both
splits keep their documents in name order, separated by a NUL byte. Output: DIR/train.bin,
DIR/val.bin (raw bytes: a byte is a token) and DIR/corpus.json (sizes, sha256, sources).

usage: corpus.py --out DIR --gcide DIR_OR_DZ [--mib-per-source 16] [--val-every 50]
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import sysconfig
import zlib


def stdlib_docs(cap):
    root = sysconfig.get_paths()["stdlib"]
    paths = []
    for d, subdirs, files in os.walk(root):
        subdirs[:] = sorted(s for s in subdirs if s not in ("site-packages", "__pycache__"))
        paths += [os.path.join(d, f) for f in files if f.endswith(".py")]
    total = 0
    for p in sorted(paths):
        with open(p, "rb") as f:
            data = f.read()
        if total + len(data) > cap:
            break
        total += len(data)
        yield "stdlib/" + os.path.relpath(p, root), data


def gcide_docs(src, cap, doc_bytes=65536):
    if os.path.isdir(src):
        for d, _, files in os.walk(src):
            if "gcide.dict.dz" in files:
                src = os.path.join(d, "gcide.dict.dz")
                break
        else:
            raise SystemExit(f"corpus.py: no gcide.dict.dz under {src}")
    with gzip.open(src, "rb") as f:  # dictzip is gzip with an extra header field
        text = f.read().decode("latin-1")
    text = re.sub(r"<[^>]{0,80}>", "", text)
    text = re.sub(r"[ \t]+", " ", text)
    data = text.encode("utf-8")[:cap]
    for i in range(0, len(data), doc_bytes):
        yield f"gcide/{i // doc_bytes:06d}", data[i:i + doc_bytes]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--gcide", required=True, help="gcide.dict.dz or a folder holding it")
    ap.add_argument("--mib-per-source", type=float, default=16.0)
    ap.add_argument("--val-every", type=int, default=50)
    a = ap.parse_args()
    cap = int(a.mib_per_source * 2**20)
    splits = {"train": [], "val": []}
    counts = {}
    for source, docs in (("stdlib", stdlib_docs(cap)), ("gcide", gcide_docs(a.gcide, cap))):
        for name, data in docs:
            split = "val" if zlib.crc32(name.encode()) % a.val_every == 0 else "train"
            splits[split].append((name, data))
            counts[(source, split)] = counts.get((source, split), 0) + len(data)
    os.makedirs(a.out, exist_ok=True)
    meta = {"sources": {f"{s}/{p}": n for (s, p), n in sorted(counts.items())}}
    for split, docs in splits.items():
        blob = b"\0".join(d for _, d in sorted(docs))
        with open(os.path.join(a.out, f"{split}.bin"), "wb") as f:
            f.write(blob)
        meta[split] = {"bytes": len(blob), "documents": len(docs),
                       "sha256": hashlib.sha256(blob).hexdigest()}
    with open(os.path.join(a.out, "corpus.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
