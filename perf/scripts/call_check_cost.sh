#!/usr/bin/env bash
# What the per-call agreement over the NCCL transport costs (README "Agreement",
# COCCL_NCCL_CALL_CHECK): coccl_perf on device buffers with COCCL_DEVICE_TRANSPORT=nccl, each
# rank a process with its own NCCL_HOSTID (perf/scripts/local_ranks.sh), with the check off (0)
# and on (1, or the levels in LEVELS), interleaved for ROUNDS rounds, then the median time per
# call of each level and its ratio to level 0, out of place and in place.
# usage: perf/scripts/call_check_cost.sh COCCL_PERF [OUT_FILE]
# env: RANKS (default "2 3"), COLLS (default all_reduce), LEVELS (default "0 1"), ROUNDS
#   (default 4), DTYPE (bfloat16), CODEC (fp8_ash_ds), SIZES (coccl_perf -b/-e/-f, default
#   "-b 64K -e 16M -f 4"), ITERS (30). Start MPS first where processes share a GPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
perf=${1:?usage: call_check_cost.sh COCCL_PERF [OUT_FILE]}
out=${2:-call_check_cost.txt}
export COCCL_DEVICE_TRANSPORT=nccl NCCL_NVLS_ENABLE=0
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} COCCL_SOCKET_IFNAME=${COCCL_SOCKET_IFNAME:-lo}
: >"$out"
for r in $(seq 1 "${ROUNDS:-4}"); do
  for c in ${COLLS:-all_reduce}; do for np in ${RANKS:-2 3}; do for m in ${LEVELS:-0 1}; do
    echo "## np=$np check=$m $c round $r" >>"$out"
    # shellcheck disable=SC2086
    COCCL_NCCL_CALL_CHECK=$m timeout 120 "$here/local_ranks.sh" "$np" "$perf" "$c" --mem device \
      -d "${DTYPE:-bfloat16}" ${SIZES:--b 64K -e 16M -f 4} -n "${ITERS:-30}" -w 5 -c 0 \
      --codec "${CODEC:-fp8_ash_ds}" 2>&1 | grep -E '^ +[0-9]|Identical|Out of bounds|rror' >>"$out"
  done; done; done
done
python3 - "$out" <<'PY'
import collections, re, statistics, sys
cur, t = None, collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"## np=(\d+) check=(\d) (\w+) round", line)
    if m:
        cur = m.groups()
        continue
    f = line.split()
    if cur and len(f) > 9 and f[0].isdigit():
        t[(cur[2], cur[0], cur[1], int(f[0]))].append((float(f[5]), float(f[9])))
med = lambda xs, i: statistics.median(x[i] for x in xs)
print("# coll ranks level size(B) n  oop_us ratio  ip_us ratio   (ratio: to level 0)")
order = lambda kv: (kv[0][0], int(kv[0][1]), kv[0][2], kv[0][3])
for (c, np_, lv, size), xs in sorted(t.items(), key=order):
    base = t.get((c, np_, "0", size))
    if not base:
        continue
    print(f"{c} {np_} {lv} {size} {len(xs)} {med(xs, 0):.1f} {med(xs, 0) / med(base, 0):.3f} "
          f"{med(xs, 1):.1f} {med(xs, 1) / med(base, 1):.3f}")
PY
