#!/usr/bin/env bash
# Per-rank wrapper for mpirun: gives each rank its own NCCL_HOSTID, so that the real NCCL
# accepts several ranks on one GPU of one host (it refuses duplicate GPUs on one "host"), then
# runs the program. The shim itself needs nothing per rank: its unique id travels over the
# program's own channel (MPI for nccl-tests) and COCCL_COMM_ID must stay unset.
# usage: mpirun ... mpi_rank.sh PROGRAM ARGS...
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}
export NCCL_HOSTID="coccl-shim-host${rank}"
exec "$@"
