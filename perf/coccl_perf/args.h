// Command line of coccl_perf: nccl-tests' flags (same letters, same meanings) plus coccl's own.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "coccl.h"

namespace cocclperf {

enum class Coll { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, SendRecv };

const char* collName(Coll c);           // "all_reduce", ...
bool collHasOp(Coll c);                 // all_reduce, reduce_scatter, reduce
bool collHasRoot(Coll c);               // broadcast, reduce
bool collTakesCodec(Coll c);            // all_reduce, reduce_scatter, all_gather
const char* opName(cocclRedOp_t op);    // "sum", ...

// How the collectives that take a codec are called.
enum class CodecMode {
  None,      // coccl*Codec with the "none" codec: the exact path whatever the environment says
  Explicit,  // coccl*Codec with cocclCodecCreate(spec)
  Policy     // plain coccl* calls: the COCCL_CODEC* policy of the communicator decides
};

struct Options {
  Coll coll = Coll::AllReduce;
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  size_t stepFactor = 1;
  int iters = 20;
  int warmup = 1;
  int check = 1;
  int root = 0;  // -1: every root in turn
  int nThreads = 1;
  bool threadsGiven = false;
  int nGpus = 1;
  int blocking = 0;
  int average = 1;
  int aggIters = 1;
  std::vector<cocclDataType_t> types;
  std::vector<cocclRedOp_t> ops;
  std::string mem = "host";
  std::string data = "auto";         // auto (normal for lossy calls, else exact integers) or zero
  std::string alloc = "cudaMalloc";  // --mem device: cudaMalloc or ncclMemAlloc (nccl-tests')
  std::string codec = "none";
  CodecMode codecMode = CodecMode::None;
  std::string jsonFile;
  std::string input;
  bool phases = false;  // --phases: the CUDA IPC kernels' phase times (cocclCommGetPhaseTimes)
  std::string commandLine;
};

// Fills `o` from argv. Returns -1 to go on, or the exit status (0 after --help).
int parseArgs(int argc, char** argv, Options* o);

// "64M" -> 67108864. K, M, G are powers of 1024 (nccl-tests). False on junk.
bool parseSize(const std::string& s, size_t* bytes);

}  // namespace cocclperf
