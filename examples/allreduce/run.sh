#!/usr/bin/env bash
# Runs each example on NRANKS processes of this host (the launch lines of their headers):
#   examples/allreduce/run.sh BUILD_DIR [NRANKS]   (default 4); exit status non-zero on a failure.
set -uo pipefail
bin=${1:?usage: run.sh BUILD_DIR [NRANKS]}
n=${2:-4}
status=0
run() {  # run NAME CMD...: NRANKS processes, each with RANK/WORLD_SIZE; all must succeed
  local name=$1 pids=() rc=0
  shift
  for ((r = 0; r < n; ++r)); do
    RANK=$r WORLD_SIZE=$n timeout 120 "$@" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc -eq 0 ] || { echo "$name FAILED" >&2; status=1; }
}
port() { echo $(( 20000 + (RANDOM % 20000) )); }
idfile=$(mktemp -u /tmp/coccl-example-id.XXXXXX)
run allreduce_file_id "$bin/allreduce_file_id" "$idfile"
COCCL_COMM_ID=127.0.0.1:$(port) run allreduce_comm_id "$bin/allreduce_comm_id"
COCCL_COMM_ID=127.0.0.1:$(port) run allreduce_codecs "$bin/allreduce_codecs"
rm -f "$idfile"
run allreduce_codecs_file_id "$bin/allreduce_codecs" --id-file "$idfile"
rm -f "$idfile"
exit $status
