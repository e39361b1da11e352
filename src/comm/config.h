// A communicator's configuration: every COCCL_* variable and cocclConfig_t field that shapes a
// communicator, resolved once at init (src/api/comm_api.cc makeConfig) and never read from the
// environment again during a call. Plain values only: every layer below the API may read it.
#pragma once

#include <cstdint>
#include <string>

namespace coccl {

// Which codec each compressed collective uses (specs as in README "Codecs") and from which
// message size compression is tried.
struct PolicyConfig {
  std::string codec;  // default spec ("" or "none": uncompressed)
  std::string codecAllReduce, codecReduceScatter, codecAllGather;  // "" = use codec
  int64_t compressMinBytes = 65536;
};

struct CommConfig {
  int64_t timeoutMs = 300000;  // every wait (bootstrap, transfers, peers, device flags)
  int64_t chunkBytes = 1 << 20;  // host pipeline chunk; NCCL executor slot size
  std::string algo = "auto";     // host reduce algorithm: auto | two-shot | ring
  int ringMinRanks = 16;
  std::string name;
  PolicyConfig policy;
  // Device executors (COCCL_DEVICE_*; every rank must pass the same values).
  std::string deviceTransport = "auto";  // auto | cuda_ipc | nccl
  std::string deviceExact = "auto";      // auto | coccl | nccl
  int64_t deviceBlocks = 0;              // CUDA IPC channels, 0 = auto
  int64_t deviceStagingBytes = int64_t{64} << 20;  // CUDA IPC region per rank
  // CUDA device current on the thread that called cocclCommInitRank (-1: none / CUDA not in use
  // by the process); the device executors use it (deferred group inits run on other threads).
  int cudaDevice = -1;
};

}  // namespace coccl
