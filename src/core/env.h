// The one table of COCCL_* environment variables. Read once, on first use (thread-safe);
// README "Environment" mirrors kEnvTable. A variable set to an unparsable value is reported
// with a warning and the default is used.
#pragma once

#include <cstdint>
#include <string>

namespace coccl {

struct EnvEntry {
  const char* name;
  const char* defaultValue;
  const char* meaning;
};

// Every variable coccl reads, with its default and meaning.
extern const EnvEntry kEnvTable[];
extern const int kEnvTableSize;

struct Env {
  std::string debug;           // COCCL_DEBUG
  std::string debugSubsys;     // COCCL_DEBUG_SUBSYS
  std::string debugFile;       // COCCL_DEBUG_FILE
  std::string commId;          // COCCL_COMM_ID (host:port)
  std::string socketIfname;    // COCCL_SOCKET_IFNAME
  int64_t timeoutMs;           // COCCL_TIMEOUT_MS
  std::string codec;           // COCCL_CODEC
  std::string codecAllReduce;  // COCCL_CODEC_ALLREDUCE
  std::string codecReduceScatter;  // COCCL_CODEC_REDUCESCATTER
  std::string codecAllGather;  // COCCL_CODEC_ALLGATHER
  int64_t compressMinBytes;    // COCCL_COMPRESS_MIN_BYTES
  int64_t chunkBytes;          // COCCL_CHUNK_BYTES
  std::string algo;            // COCCL_ALGO (auto | two-shot | ring)
  int64_t ringMinRanks;        // COCCL_RING_MIN_RANKS
  std::string ncclLibrary;     // COCCL_NCCL_LIBRARY
  int64_t deviceStagingBytes;  // COCCL_DEVICE_STAGING_BYTES
  int64_t deviceBlocks;        // COCCL_DEVICE_BLOCKS (0: auto)
  std::string deviceTransport;  // COCCL_DEVICE_TRANSPORT (auto | cuda_ipc | nccl)
  std::string deviceExact;      // COCCL_DEVICE_EXACT (auto | coccl | nccl)
};

// The process-wide values (read at first call).
const Env& env();

// Re-reads the environment. For tests only (not thread-safe against concurrent env() users).
void reloadEnvForTesting();

}  // namespace coccl
