#!/usr/bin/env bash
# Runs a program as N processes on this machine with torchrun-style variables (RANK, WORLD_SIZE,
# LOCAL_RANK=0: every rank on device 0, MASTER_ADDR/MASTER_PORT) and one NCCL_HOSTID per rank
# (so that the real NCCL takes ranks sharing one GPU). Rank 0's stdout/stderr are this script's;
# the others' stderr goes to stderr. Exit status: non-zero if any rank failed or ran past
# RANK_TIMEOUT seconds (default 600). For coccl_perf and coccl_tune.py's --launch, e.g.
#   perf/scripts/coccl_tune.py --launch "perf/scripts/local_ranks.sh 2" --mem device ...
# usage: local_ranks.sh N PROGRAM [ARGS...]
set -uo pipefail
n=${1:?usage: local_ranks.sh N PROGRAM [ARGS...]}
shift
# the bootstrap port: below Linux's ephemeral range (32768-60999, where NCCL's and earlier runs'
# sockets live) and free now (a port taken made rank 0's init fail with a system error)
port_free() {
  python3 -c 'import socket,sys; s=socket.socket(); s.bind(("", int(sys.argv[1])))' "$1" \
    2> /dev/null
}
for _ in $(seq 20); do
  port=$(( 20000 + (RANDOM % 12000) ))
  port_free "$port" && break
done
pids=()
for ((r = 1; r < n; ++r)); do
  NCCL_HOSTID=local-ranks-$$-$r RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=$port timeout "${RANK_TIMEOUT:-600}" "$@" > /dev/null &
  pids+=($!)
done
NCCL_HOSTID=local-ranks-$$-0 RANK=0 WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 \
  MASTER_PORT=$port timeout "${RANK_TIMEOUT:-600}" "$@"
rc=$?
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
