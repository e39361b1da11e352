#!/usr/bin/env bash
# Host AllReduce, compressed vs uncompressed, side by side (issue: host speed figures).
# For each UCX transport set and dtype, runs coccl_perf all_reduce on 4 host ranks (threads) with
# the codecs none, fp8_ash_ds and int8 one after the other, and prints one table per
# (transport, dtype): out-of-place time (us) and busbw (GB/s) per size, the speedup of each codec
# over none, and the smallest size from which a codec is faster at every larger size.
# usage: perf/scripts/host_sweep.sh [BUILD_DIR]   env: TLS="default tcp" TYPES="bfloat16 float"
#        MIN=1M MAX=256M ITERS=3 RANKS=4
set -euo pipefail
B=${1:-build}
P=$B/perf/coccl_perf/coccl_perf
[ -x "$P" ] || { echo "no $P (build first)" >&2; exit 1; }
TLS=${TLS:-default tcp}
TYPES=${TYPES:-bfloat16 float}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# host_sweep: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
for tls in $TLS; do
  case $tls in
    default) env=() ;;
    tcp) env=(UCX_TLS=tcp,self) ;;
    *) env=("UCX_TLS=$tls") ;;
  esac
  for dt in $TYPES; do
    for codec in none fp8_ash_ds int8; do
      env "${env[@]}" "$P" all_reduce -t "${RANKS:-4}" -b "${MIN:-1M}" -e "${MAX:-256M}" -f 4 \
        -n "${ITERS:-3}" -w 1 -d "$dt" -c 0 --codec "$codec" 2>&1 |
        awk '/^ +[0-9]+ +[0-9]+ / {print $1, $6, $8}' > "$tmp/$codec"
    done
    echo
    echo "### UCX ${tls}, $dt, ${RANKS:-4} ranks: out-of-place time (us) / busbw (GB/s); speedup = none time / codec time"
    echo "| size | none | fp8_ash_ds | speedup | int8 | speedup |"
    echo "|---|---|---|---|---|---|"
    paste -d' ' "$tmp/none" "$tmp/fp8_ash_ds" "$tmp/int8" | awk '
      { printf "| %s | %s / %s | %s / %s | %.2fx | %s / %s | %.2fx |\n", $1, $2, $3, $5, $6, $2 / $5, $8, $9, $2 / $8
        s[NR] = $1; f[NR] = $2 / $5; i[NR] = $2 / $8; n = NR }
      END {
        cf = "none"; ci = "none"
        for (k = n; k >= 1 && f[k] > 1; --k) cf = s[k]
        for (k = n; k >= 1 && i[k] > 1; --k) ci = s[k]
        printf "\ncompression pays from (bytes): fp8_ash_ds %s, int8 %s\n", cf, ci }'
  done
done
