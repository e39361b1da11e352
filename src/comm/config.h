// A communicator's configuration: every COCCL_* variable and cocclConfig_t field that shapes a
// communicator, resolved once at init (src/api/comm_api.cc makeConfig) and never read from the
// environment again during a call. Plain values only: every layer below the API may read it.
#pragma once

#include <cstdint>
#include <string>

#include "core/env.h"

namespace coccl {

// Which codec each compressed collective (and Send/Recv) uses (specs as in README "Codecs") and
// from which message size compression is tried.
struct PolicyConfig {
  std::string codec;  // default spec ("" or "none": uncompressed)
  std::string codecAllReduce, codecReduceScatter, codecAllGather;  // "" = use codec
  std::string codecSendRecv;  // "" = none (does not inherit `codec`)
  int64_t compressMinBytes = env_default::compressMinBytes;
  // A policy file whose rules come before these entries (cocclConfig_t.policy, else
  // COCCL_POLICY; "": none). Read at init (collectives/policy_init.h).
  std::string file;
};

struct CommConfig {
  int64_t timeoutMs = env_default::timeoutMs;  // every wait (bootstrap, transfers, peers, device flags)
  int64_t chunkBytes = env_default::chunkBytes;  // host pipeline chunk; NCCL executor slot size
  std::string algo = env_default::algo;  // auto | two-shot (= direct) | ring | one-shot
  int ringMinRanks = static_cast<int>(env_default::ringMinRanks);
  // Ranks per node of the two-level codecs (COCCL_RANKS_PER_NODE; 0: from the hosts). Resolved
  // by CommContext::ranksPerNode().
  int64_t ranksPerNode = env_default::ranksPerNode;
  std::string name;  // cocclConfig_t.commName ("" when not given)
  // This rank's world rank (cocclConfig_t.worldRank, else the launcher's RANK,
  // OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; -1: none of them, then its rank in this
  // communicator). Exchanged at init for the policy's members and stride.
  int worldRank = -1;
  PolicyConfig policy;
  // Device executors (COCCL_DEVICE_*; every rank must pass the same values).
  std::string deviceTransport = env_default::deviceTransport;  // auto | cuda_ipc | nccl
  std::string deviceExact = env_default::deviceExact;          // auto | coccl | nccl
  int64_t deviceBlocks = env_default::deviceBlocks;  // CUDA IPC channels, 0 = auto
  int64_t deviceStagingBytes = env_default::deviceStagingBytes;  // CUDA IPC region per rank
  int ncclCallCheck = static_cast<int>(env_default::ncclCallCheck);  // agreement over NCCL: 0-2
  bool stagedCallCheck = env_default::stagedCallCheck != 0;  // ... of the staged pipeline (IPC)
  bool phaseTimes = env_default::phaseTimes != 0;  // COCCL_PHASE_TIMES (cocclCommGetPhaseTimes)
  bool deviceCodecRings = env_default::deviceCodecRings != 0;    // COCCL_DEVICE_CODEC_RINGS
  bool twoLevelPipeline = env_default::twoLevelPipeline != 0;    // device hier: pieces overlap
  // CUDA device current on the thread that called cocclCommInitRank (-1: none / CUDA not in use
  // by the process); the device executors use it (deferred group inits run on other threads).
  int cudaDevice = -1;
};

}  // namespace coccl
