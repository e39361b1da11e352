// Per-call host cost of coccl's API (no network: single-rank communicators, host buffers):
//   BM_AllReduce/bytes       one cocclAllReduce outside a group
//   BM_GroupOverComms/K      one cocclGroupStart/End with an AllReduce on each of K
//                            communicators driven by this thread (they run concurrently: the
//                            caller's thread and K-1 others)
// Public API only (coccl.h), so the binary also runs against an older libcoccl.so.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "coccl.h"

namespace {

cocclComm_t singleRankComm() {
  cocclUniqueId id;
  cocclComm_t c = nullptr;
  if (cocclGetUniqueId(&id) != cocclSuccess || cocclCommInitRank(&c, 1, id, 0) != cocclSuccess) {
    std::fprintf(stderr, "api_bench: init failed: %s\n", cocclGetLastError(nullptr));
    std::exit(1);
  }
  return c;
}

void BM_AllReduce(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0)) / sizeof(float);
  std::vector<float> in(n, 1.0f), out(n);
  cocclComm_t c = singleRankComm();
  for (auto _ : st) {
    if (cocclAllReduce(in.data(), out.data(), n, cocclFloat32, cocclSum, c, nullptr) !=
        cocclSuccess)
      st.SkipWithError("cocclAllReduce failed");
    benchmark::DoNotOptimize(out.data());
  }
  cocclCommDestroy(c);
}
BENCHMARK(BM_AllReduce)->Arg(8)->Arg(4096);

void BM_GroupOverComms(benchmark::State& st) {
  const int k = static_cast<int>(st.range(0));
  std::vector<cocclComm_t> comms;
  for (int i = 0; i < k; ++i) comms.push_back(singleRankComm());
  std::vector<float> in(2, 1.0f), out(2 * static_cast<size_t>(k));
  for (auto _ : st) {
    cocclGroupStart();
    for (int i = 0; i < k; ++i)
      cocclAllReduce(in.data(), out.data() + 2 * i, 2, cocclFloat32, cocclSum, comms[i], nullptr);
    if (cocclGroupEnd() != cocclSuccess) st.SkipWithError("cocclGroupEnd failed");
    benchmark::DoNotOptimize(out.data());
  }
  for (cocclComm_t c : comms) cocclCommDestroy(c);
}
BENCHMARK(BM_GroupOverComms)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
