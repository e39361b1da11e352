#include "core/env.h"

#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "core/log.h"

namespace coccl {

const EnvEntry kEnvTable[] = {
    {"COCCL_DEBUG", "(unset: silent)", "log level: VERSION, WARN, INFO or TRACE"},
    {"COCCL_DEBUG_SUBSYS", "ALL",
     "comma list of subsystems to log (ALL, INIT, COLL, CODEC, NET, BOOTSTRAP, TRANSPORT, ENV, "
     "ALLOC, CUDA); a leading ^ excludes them"},
    {"COCCL_DEBUG_FILE", "(stderr)", "write log lines to this file; %h = hostname, %p = pid"},
    {"COCCL_COMM_ID", "(unset)",
     "host:port of the bootstrap root; rank 0 starts it inside init, no unique id exchange"},
    {"COCCL_SOCKET_IFNAME", "(first up non-loopback interface, else lo)",
     "network interface(s) for the bootstrap: a name prefix, ^prefix to exclude, =name exact"},
    {"COCCL_TIMEOUT_MS", "300000", "timeout of every wait (bootstrap, transfers, peers), in ms"},
    {"COCCL_CODEC", "none", "default codec spec for compressed collectives (none, int8, fp8_ash_ds, "
     "with options as name:key=value,...)"},
    {"COCCL_CODEC_ALLREDUCE", "(COCCL_CODEC)", "codec spec for AllReduce"},
    {"COCCL_CODEC_REDUCESCATTER", "(COCCL_CODEC)", "codec spec for ReduceScatter"},
    {"COCCL_CODEC_ALLGATHER", "(COCCL_CODEC)", "codec spec for AllGather"},
    {"COCCL_COMPRESS_MIN_BYTES", "65536",
     "messages smaller than this many bytes (of input) take the uncompressed path"},
    {"COCCL_CHUNK_BYTES", "1048576", "pipeline chunk size in bytes of input data"},
    {"COCCL_ALGO", "auto",
     "AllReduce/ReduceScatter/AllGather algorithm on host buffers: auto, two-shot or ring"},
    {"COCCL_RING_MIN_RANKS", "16", "auto picks ring at or above this many ranks"},
    {"COCCL_NCCL_LIBRARY", "(search)", "path of the real libnccl.so.2 the NCCL transport loads"},
    {"COCCL_DEVICE_STAGING_BYTES", "67108864",
     "device path: bytes of peer-visible staging (CUDA IPC) per rank and communicator; a "
     "collective moves at most about half of it per rank per round (must be equal on all ranks)"},
    {"COCCL_DEVICE_BLOCKS", "0",
     "device path over CUDA IPC: most thread blocks (channels) of a collective kernel, 1..128, "
     "or 0 (auto: 128 when no two ranks share a GPU, else 32); a call uses about one per 256 KiB "
     "of message, at least 16 (must be equal on all ranks)"},
    {"COCCL_DEVICE_TRANSPORT", "auto",
     "device path: cuda_ipc (ranks of one host), nccl (the real NCCL's send/recv, any GPUs and "
     "hosts) or auto (cuda_ipc, else nccl when every rank has a GPU); equal on all ranks"},
    {"COCCL_DEVICE_EXACT", "auto",
     "device path over CUDA IPC: who runs the uncompressed collectives and send/recv: coccl "
     "(its own kernels), nccl (the real NCCL), or auto (nccl when every rank has its own GPU "
     "and NCCL loads: faster over NVLink; else coccl); equal on all ranks"},
};
const int kEnvTableSize = static_cast<int>(sizeof(kEnvTable) / sizeof(kEnvTable[0]));

namespace {

Env g_env;
std::once_flag g_once;

std::string getStr(const char* name, const char* def = "") {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string(def);
}

int64_t getInt(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 0);
  if (errno != 0 || end == v) {
    COCCL_WARN("%s=%s is not an integer; using the default %lld", name, v,
               static_cast<long long>(def));
    return def;
  }
  // Accept K/M/G suffixes (binary) like nccl-tests sizes.
  switch (*end) {
    case 'k': case 'K': x <<= 10; ++end; break;
    case 'm': case 'M': x <<= 20; ++end; break;
    case 'g': case 'G': x <<= 30; ++end; break;
    default: break;
  }
  if (*end != '\0') {
    COCCL_WARN("%s=%s has trailing characters; using the default %lld", name, v,
               static_cast<long long>(def));
    return def;
  }
  return x;
}

void readAll() {
  g_env.debug = getStr("COCCL_DEBUG");
  g_env.debugSubsys = getStr("COCCL_DEBUG_SUBSYS", "");
  g_env.debugFile = getStr("COCCL_DEBUG_FILE", "");
  g_env.commId = getStr("COCCL_COMM_ID");
  g_env.socketIfname = getStr("COCCL_SOCKET_IFNAME");
  g_env.codec = getStr("COCCL_CODEC");
  g_env.codecAllReduce = getStr("COCCL_CODEC_ALLREDUCE");
  g_env.codecReduceScatter = getStr("COCCL_CODEC_REDUCESCATTER");
  g_env.codecAllGather = getStr("COCCL_CODEC_ALLGATHER");
  g_env.algo = getStr("COCCL_ALGO", "auto");
  g_env.ncclLibrary = getStr("COCCL_NCCL_LIBRARY");
  // Integers last: their warnings may log, and logging reads the strings above.
  g_env.timeoutMs = getInt("COCCL_TIMEOUT_MS", 300000);
  if (g_env.timeoutMs <= 0) {
    COCCL_WARN("COCCL_TIMEOUT_MS must be > 0; using 300000");
    g_env.timeoutMs = 300000;
  }
  g_env.compressMinBytes = getInt("COCCL_COMPRESS_MIN_BYTES", 65536);
  g_env.chunkBytes = getInt("COCCL_CHUNK_BYTES", 1 << 20);
  if (g_env.chunkBytes < 4096) {
    COCCL_WARN("COCCL_CHUNK_BYTES=%lld is below 4096; using 4096",
               static_cast<long long>(g_env.chunkBytes));
    g_env.chunkBytes = 4096;
  }
  g_env.ringMinRanks = getInt("COCCL_RING_MIN_RANKS", 16);
  g_env.deviceStagingBytes = getInt("COCCL_DEVICE_STAGING_BYTES", int64_t{64} << 20);
  if (g_env.deviceStagingBytes < (int64_t{1} << 20)) {
    COCCL_WARN("COCCL_DEVICE_STAGING_BYTES=%lld is below 1 MiB; using 1 MiB",
               static_cast<long long>(g_env.deviceStagingBytes));
    g_env.deviceStagingBytes = int64_t{1} << 20;
  }
  g_env.deviceTransport = getStr("COCCL_DEVICE_TRANSPORT", "auto");
  if (g_env.deviceTransport != "auto" && g_env.deviceTransport != "cuda_ipc" &&
      g_env.deviceTransport != "nccl") {
    COCCL_WARN("COCCL_DEVICE_TRANSPORT=%s is not auto, cuda_ipc or nccl; using auto",
               g_env.deviceTransport.c_str());
    g_env.deviceTransport = "auto";
  }
  g_env.deviceExact = getStr("COCCL_DEVICE_EXACT", "auto");
  if (g_env.deviceExact != "auto" && g_env.deviceExact != "coccl" && g_env.deviceExact != "nccl") {
    COCCL_WARN("COCCL_DEVICE_EXACT=%s is not auto, coccl or nccl; using auto",
               g_env.deviceExact.c_str());
    g_env.deviceExact = "auto";
  }
  g_env.deviceBlocks = getInt("COCCL_DEVICE_BLOCKS", 0);
  if (g_env.deviceBlocks < 0 || g_env.deviceBlocks > 128) {
    COCCL_WARN("COCCL_DEVICE_BLOCKS=%lld is outside 0..128; using 0 (auto)",
               static_cast<long long>(g_env.deviceBlocks));
    g_env.deviceBlocks = 0;
  }
}

}  // namespace

const Env& env() {
  std::call_once(g_once, readAll);
  return g_env;
}

void reloadEnvForTesting() {
  env();
  readAll();
}

}  // namespace coccl
