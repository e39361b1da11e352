// Ranks of coccl_perf: threads of this process and/or processes started by a launcher, one
// communicator each, error handling, and the small exact collectives the tool uses to combine
// per-rank figures.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "coccl.h"

namespace cocclperf {

// An API error (message already holds cocclGetErrorString and cocclGetLastError) or a tool error.
struct PerfError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void checkCoccl(cocclResult_t r, const char* call, cocclComm_t comm, const char* file, int line);
#define CP_CHECK(call, comm) ::cocclperf::checkCoccl((call), #call, (comm), __FILE__, __LINE__)

// How this process was started.
struct Launch {
  bool processMode = false;  // more than one process, bootstrap through COCCL_COMM_ID
  int nProcs = 1;
  int proc = 0;
  std::string launcher = "threads";  // "threads", "mpirun", "pmi", "torchrun"
  std::string commId;                // COCCL_COMM_ID used in process mode
  std::string commIdSource;          // where commId came from
};

// Reads the launcher's environment; in process mode sets COCCL_COMM_ID when it is not set.
// Must run before any coccl call. False (with *err) when the bootstrap address cannot be found.
bool detectLaunch(Launch* l, std::string* err);

struct Rank {
  int rank = 0;
  int nranks = 1;
  int proc = 0;
  int nProcs = 1;
  int thread = 0;
  int nThreads = 1;
  int device = -1;  // --mem device: the CUDA device of this rank
  cocclComm_t comm = nullptr;
  bool printer() const { return rank == 0; }
  // AllGather of `local` (the same length on every rank): n * local.size() values, rank-major.
  std::vector<uint64_t> allGather(const std::vector<uint64_t>& local) const;
  // Every rank has arrived (an exact AllReduce of one int32).
  void barrier() const;
};

// Creates the communicators of this process's nThreads ranks and runs body(rank) on each, in its
// own thread. A rank that throws prints its error, aborts its communicator (so that peers fail
// fast) and makes the result non-zero. Returns the largest status any body returned, or 1.
// beforeInit (optional) runs on the rank's thread before cocclCommInitRank (--mem device: makes
// the rank's CUDA device current) and returns the device (-1 none).
int runRanks(const Launch& l, int nThreads, const std::function<int(Rank&)>& body,
             const std::function<int(const Rank&)>& beforeInit = nullptr);

// Rank-0-only output helper: printf to stdout (and flush) when r.printer().
void rprintf(const Rank& r, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Bit casts for packing doubles into the uint64 exchange.
uint64_t dbits(double d);
double bitsd(uint64_t u);

}  // namespace cocclperf
