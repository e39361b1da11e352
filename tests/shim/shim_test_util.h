// Shared by the shim's CPU tests: the shim opened with dlopen (as a program opens NCCL), its
// functions, and a thread-per-rank runner.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nccl_abi.h"

namespace shimtest {

struct Api {
  void* h = nullptr;
#define FN(name, ret, args) ret(*name) args = nullptr;
#include "shim_api.inc"
#undef FN
  const char* (*ncclCocclShimVersion)() = nullptr;
};

inline const Api& api() {
  static Api a = [] {
    Api x;
    x.h = dlopen(SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!x.h) {
      ADD_FAILURE() << "dlopen " << SHIM_PATH << ": " << dlerror();
      std::abort();
    }
#define FN(name, ret, args) x.name = reinterpret_cast<ret(*) args>(dlsym(x.h, #name));
#include "shim_api.inc"
#undef FN
    x.ncclCocclShimVersion = reinterpret_cast<const char* (*)()>(dlsym(x.h, "ncclCocclShimVersion"));
    return x;
  }();
  return a;
}

inline std::string lastError() { return api().ncclGetLastError(nullptr); }

// Runs body(rank) on n threads, each with its own communicator from one unique id.
inline void runRanks(int n, const std::function<void(int, ncclComm_t)>& body) {
  ncclUniqueId id;
  ASSERT_EQ(api().ncclGetUniqueId(&id), ncclSuccess) << lastError();
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      ncclComm_t comm = nullptr;
      ASSERT_EQ(api().ncclCommInitRank(&comm, n, id, r), ncclSuccess) << lastError();
      body(r, comm);
      EXPECT_EQ(api().ncclCommFinalize(comm), ncclSuccess) << lastError();
      EXPECT_EQ(api().ncclCommDestroy(comm), ncclSuccess) << lastError();
    });
  for (auto& t : ts) t.join();
}

inline std::vector<float> input(int rank, size_t n) {
  std::mt19937 g(1234 + rank);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Relative L2 error of `got` against `want`.
inline double relL2(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

// 256 KiB of fp32: above COCCL_COMPRESS_MIN_BYTES=1024 of the tests' environments.
constexpr size_t kCount = 1 << 16;

// Whether a launcher's rank variable is set: ranks as threads of one process then share it, so
// policy rules on world ranks cannot tell them apart (the Policy.* tests skip).
inline bool launcherRankSet() {
  for (const char* v : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (getenv(v) && *getenv(v)) return true;
  return false;
}

}  // namespace shimtest
