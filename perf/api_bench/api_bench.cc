// Per-call host cost of coccl's API (no network: single-rank communicators, host buffers):
//   BM_AllReduce/bytes       one cocclAllReduce outside a group
//   BM_GroupOverComms/K      one cocclGroupStart/End with an AllReduce on each of K
//                            communicators driven by this thread (they run concurrently: the
//                            caller's thread and K-1 others)
//   BM_CommCount/threads:T   cocclCommCount on T threads at once, each on its own
//                            communicator: the cost of the live-handle registry's check
//                            (src/api/handles.cc: one process-wide mutex, taken on entry and
//                            exit of every call) and how it holds up when threads contend
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

std::vector<cocclComm_t> g_countComms;

void BM_CommCount(benchmark::State& st) {
  if (st.thread_index() == 0)
    for (int i = 0; i < st.threads(); ++i) g_countComms.push_back(singleRankComm());
  int n = 0;
  for (auto _ : st) {  // every thread starts here after thread 0's set-up
    if (cocclCommCount(g_countComms[static_cast<size_t>(st.thread_index())], &n) != cocclSuccess)
      st.SkipWithError("cocclCommCount failed");
    benchmark::DoNotOptimize(n);
  }
  if (st.thread_index() == 0) {  // every thread has left the loop
    for (cocclComm_t c : g_countComms) cocclCommDestroy(c);
    g_countComms.clear();
  }
}
BENCHMARK(BM_CommCount)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
