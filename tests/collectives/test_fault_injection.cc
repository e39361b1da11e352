// Fault injection on host buffers: 4 (or 8) host ranks as processes run 200 seeded mixed calls
// and one is SIGKILLed at a seeded point; the survivors must fail within COCCL_TIMEOUT_MS, close
// promptly and leave nothing behind (the run and its checks: fault_run.h; the device-buffer
// twin: tests/gpu/test_device_fault_injection.cc).
//
// The seeds (and rank counts) are the test's parameters; FAULT_SEED=<n> FAULT_RANKS=<r> runs
// one more (a replay).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "fault_run.h"

using namespace coccl::test;

namespace {

// Host buffers; a call has completed when it returns.
class HostMemory : public FaultMemory {
 public:
  void* alloc(size_t bytes) override {
    bufs_.emplace_back(new char[bytes ? bytes : 1]);
    return bufs_.back().get();
  }
  void release() override { bufs_.clear(); }
  void upload(void* dst, const void* host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void download(void* host, const void* src, size_t bytes) override {
    std::memcpy(host, src, bytes);
  }
  cocclStream_t stream() override { return nullptr; }
  cocclResult_t complete(cocclComm_t) override { return cocclSuccess; }

 private:
  std::vector<std::unique_ptr<char[]>> bufs_;
};

FaultRankSetup hostSetup() {
  FaultRankSetup s;
  s.memory = [] { return std::unique_ptr<FaultMemory>(new HostMemory); };
  return s;
}

// (seed, ranks)
class FaultInjection : public ::testing::TestWithParam<std::pair<uint64_t, int>> {};

TEST_P(FaultInjection, KillOneRank) {
  runFaultSeed(GetParam().first, GetParam().second, hostSetup());
}

INSTANTIATE_TEST_SUITE_P(Seeds, FaultInjection,
                         ::testing::Values(std::make_pair(1, 4), std::make_pair(2, 4),
                                           std::make_pair(3, 4), std::make_pair(4, 8)),
                         [](const ::testing::TestParamInfo<std::pair<uint64_t, int>>& i) {
                           return "seed" + std::to_string(i.param.first) + "_" +
                                  std::to_string(i.param.second) + "ranks";
                         });

// FAULT_SEED=<n> [FAULT_RANKS=<2..8>, default 4]: one more seed (a replay).
TEST(FaultInjectionReplay, FromEnvironment) {
  runFaultSeedFromEnvironment(hostSetup());
}

}  // namespace
