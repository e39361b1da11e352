#!/usr/bin/env bash
# Host collectives, compressed vs uncompressed, side by side (issue: host speed figures).
# For each UCX transport set, collective and dtype, runs coccl_perf on RANKS host ranks (threads)
# with the codec none and each of CODECS one after the other, and prints one table per
# (transport, collective, dtype): out-of-place time (us) and busbw (GB/s) per size, the speedup
# of each codec over none, and the smallest size from which a codec is faster at every larger
# size. A plug-in codec (e.g. int4) needs COCCL_CODEC_PLUGIN in the environment.
# usage: perf/scripts/host_sweep.sh [BUILD_DIR]   env: TLS="default tcp" TYPES="bfloat16 float"
#        COLLS=all_reduce CODECS="fp8_ash_ds int8" MIN=1M MAX=256M ITERS=3 RANKS=4
set -euo pipefail
B=${1:-build}
P=$B/perf/coccl_perf/coccl_perf
[ -x "$P" ] || { echo "no $P (build first)" >&2; exit 1; }
TLS=${TLS:-default tcp}
TYPES=${TYPES:-bfloat16 float}
COLLS=${COLLS:-all_reduce}
CODECS=${CODECS:-fp8_ash_ds int8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# host_sweep: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
for tls in $TLS; do
  case $tls in
    default) env=() ;;
    tcp) env=(UCX_TLS=tcp,self) ;;
    *) env=("UCX_TLS=$tls") ;;
  esac
  for coll in $COLLS; do
    for dt in $TYPES; do
      for codec in none $CODECS; do
        env "${env[@]}" "$P" "$coll" -t "${RANKS:-4}" -b "${MIN:-1M}" -e "${MAX:-256M}" -f 4 \
          -n "${ITERS:-3}" -w 1 -d "$dt" -c 0 --codec "$codec" 2>&1 |
          awk '/^ +[0-9]+ +[0-9]+ / {print $1, $6, $8}' > "$tmp/$codec"
      done
      echo
      echo "### UCX ${tls}, $coll, $dt, ${RANKS:-4} ranks: out-of-place time (us) / busbw (GB/s); speedup = none time / codec time"
      head="| size | none |"; sep="|---|---|"
      for c in $CODECS; do head+=" $c | speedup |"; sep+="---|---|"; done
      echo "$head"; echo "$sep"
      files=("$tmp/none"); for c in $CODECS; do files+=("$tmp/$c"); done
      paste -d' ' "${files[@]}" | awk -v names="$CODECS" '
        BEGIN { k = split(names, name, " ") }
        { line = sprintf("| %s | %s / %s |", $1, $2, $3)
          for (c = 1; c <= k; ++c) { t = $(3 * c + 2); line = line sprintf(" %s / %s | %.2fx |", t, $(3 * c + 3), $2 / t); f[c, NR] = $2 / t }
          print line; s[NR] = $1; n = NR }
        END {
          out = "compression pays from (bytes):"
          for (c = 1; c <= k; ++c) { from = "none"; for (r = n; r >= 1 && f[c, r] > 1; --r) from = s[r]; out = out " " name[c] " " from }
          print "\n" out }'
    done
  done
done
