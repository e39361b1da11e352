#!/usr/bin/env bash
# Checks the built libnccl.so.2 shim: SONAME libnccl.so.2 and the libnccl.so link beside it;
# every symbol of each list (one per line: what nccl-tests 2.19 and PyTorch 2.11 import, what
# NVIDIA's libnccl.so.2 2.28.9 exports) is exported; nothing but nccl*/pnccl* is exported; no
# nccl* symbol is imported and no libnccl is NEEDED (the real NCCL is dlopen'ed, never linked);
# no symbol versions of its own (NVIDIA's libnccl.so.2 has none either).
# usage: check_exports.sh LIBNCCL_SO_2 LIST...
set -euo pipefail
lib=$1
shift
fail=0
err() { echo "FAIL: $*"; fail=1; }

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = libnccl.so.2 ] || err "SONAME is '$soname', expected libnccl.so.2"
[ "$(basename "$lib")" = libnccl.so.2 ] || err "the file is $(basename "$lib"), expected libnccl.so.2"
link="$(dirname "$lib")/libnccl.so"
[ -L "$link" ] && [ "$(readlink "$link")" = libnccl.so.2 ] || err "$link is not a link to libnccl.so.2"

exported=$(nm -D --defined-only "$lib" | awk 'NF >= 3 {print $3}' | LC_ALL=C sort -u)
for list in "$@"; do
  n=0
  while read -r sym; do
    [ -z "$sym" ] && continue
    n=$((n + 1))
    grep -qxF "$sym" <<<"$exported" || err "$(basename "$list"): $sym is not exported"
  done <"$list"
  echo "$(basename "$list"): $n symbols checked"
done

bad=$(grep -vE '^p?nccl[A-Za-z0-9_]*$' <<<"$exported" || true)
[ -z "$bad" ] || err "symbols other than nccl*/pnccl* are exported: $(echo $bad)"
imported=$(nm -D --undefined-only "$lib" | awk '{print $NF}' | grep -E '^p?nccl' || true)
[ -z "$imported" ] || err "nccl symbols are imported: $(echo $imported)"
if readelf -d "$lib" | grep NEEDED | grep -q libnccl; then err "links a libnccl"; fi
if readelf -V "$lib" | grep -q 'Version definition'; then err "defines symbol versions"; fi
if grep -q '@' <<<"$exported"; then err "exports versioned symbols"; fi

echo "$(wc -l <<<"$exported") symbols exported"
[ $fail = 0 ] && echo PASS
exit $fail
