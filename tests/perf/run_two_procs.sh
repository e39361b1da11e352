#!/bin/sh
# run_two_procs.sh PERF: two coccl_perf processes started with torchrun-style variables
# (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) on a port derived from this shell's pid; both must
# exit 0. Runs an exact all_reduce sweep and a compressed all_gather.
perf=$1
port=$((20000 + $$ % 20000))
run() {
  RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$perf" "$@" >/dev/null 2>&1 &
  pid1=$!
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$perf" "$@"
  rc0=$?
  wait $pid1
  rc1=$?
  echo "rank 0 exit $rc0, rank 1 exit $rc1"
  [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]
}
run all_reduce -b 8 -e 1M -f 8 -n 2 || exit 1
port=$((port + 1))
run all_gather -t 2 -b 1K -e 1M -f 8 -n 2 --codec int8 -d bf16 || exit 1
