// Multi-rank test harness: runs a body on N ranks, either as threads of this process or as
// forked processes, each rank with its own communicator created from one unique id (the
// bootstrap runs over loopback). Used by every multi-rank test.
//
// In process mode a child reports failure through its exit status (gtest failures inside the
// child print there and make it exit 1); the parent checks every child and kills them all if
// one hangs past the harness timeout.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "coccl.h"

namespace coccl::test {

enum class Mode { Threads, Processes };
inline const char* modeName(Mode m) { return m == Mode::Threads ? "threads" : "processes"; }

struct Rank {
  int rank;
  int nranks;
  cocclComm_t comm;
};

struct RunOptions {
  cocclConfig_t config = COCCL_CONFIG_INITIALIZER;
  bool destroyComm = true;      // the harness destroys the comm after the body
  int harnessTimeoutS = 240;    // kill everything after this long (processes)
  std::vector<int> expectKilled;  // ranks expected to die by a signal (processes)
  // When set, init's result and cocclGetLastError text go here instead of a success assertion,
  // and the body runs only if init succeeded (tests of init failures).
  std::function<void(int rank, cocclResult_t res, const std::string& lastError)> initCheck;
  // When set, called on each rank's copy of `config` before its init (per-rank fields such as
  // worldRank or the policy file).
  std::function<void(int rank, cocclConfig_t* config)> configure;
};

// Runs body(rank) on n ranks. Failures inside the body are gtest failures.
void runRanks(int n, Mode mode, const std::function<void(Rank&)>& body,
              const RunOptions& opts = RunOptions());

// Convenience: fills a config with a short timeout.
// Processes only: each child runs setup(rank) (may be null) before any coccl call, e.g. to set
// COCCL_* variables or pick a CUDA device; then init, body and destroy as runRanks.
void runProcessRanks(int n, const std::function<void(int)>& setup,
                     const std::function<void(Rank&)>& body, const RunOptions& opts = RunOptions());

cocclConfig_t configWithTimeout(int timeoutMs);


}  // namespace coccl::test
