#!/bin/sh
# check_realdata.sh PERF MAX_MEDIAN MAX_MAX ARGS...: runs PERF ARGS (real-data mode) and fails
# unless it succeeds with median relL2 <= MAX_MEDIAN, max relL2 <= MAX_MAX and #wrong 0 over
# every case.
perf=$1 med=$2 max=$3
shift 3
out=$("$perf" "$@") || { echo "$out"; echo "coccl_perf failed"; exit 1; }
echo "$out"
echo "$out" | awk -v med="$med" -v max="$max" '
  /^# relL2 over/ { found = 1
    for (i = 1; i < NF; i++) { if ($i == "median") m = $(i + 1); if ($i == "max") x = $(i + 1) }
    if (m + 0 > med + 0 || x + 0 > max + 0) {
      printf "relL2 median %s (limit %s) max %s (limit %s): FAILED\n", m, med, x, max
      bad = 1; exit 1 }
    printf "relL2 median %s <= %s, max %s <= %s: OK\n", m, med, x, max }
  /^# #wrong over/ { wfound = 1
    if ($NF != "0") { printf "#wrong %s: FAILED\n", $NF; bad = 1; exit 1 }
    print "#wrong 0: OK" }
  END { if (bad) exit 1; if (!found || !wfound) { print "no summary line"; exit 1 } }'
