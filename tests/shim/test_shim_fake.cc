// The shim's forwarding, against a recording stand-in for the real NCCL (fake_nccl.cc, loaded
// through COCCL_NCCL_LIBRARY) with COCCL_CODEC=int8: which calls reach the real NCCL and which
// coccl, the real unique id broadcast over coccl, groups, simulation, split and shrink.
#include <atomic>

#include "shim_test_util.h"

using namespace shimtest;

namespace {

struct Fake {
  int (*count)(const char*);
  const char* (*last)(const char*);
};

const Fake& fake() {
  static Fake f = [] {
    int v = 0;
    api().ncclGetVersion(&v);  // the shim loads the fake
    void* h = dlopen(getenv("COCCL_NCCL_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    if (!h) std::abort();
    return Fake{reinterpret_cast<int (*)(const char*)>(dlsym(h, "fakeNcclCount")),
                reinterpret_cast<const char* (*)(const char*)>(dlsym(h, "fakeNcclLast"))};
  }();
  return f;
}

int count(const std::string& prefix) { return fake().count(prefix.c_str()); }
std::string last(const std::string& prefix) { return fake().last(prefix.c_str()); }
std::string rk(const char* fn, int r) { return std::string(fn) + " rank=" + std::to_string(r); }

}  // namespace

TEST(FakeNccl, VersionAndTheRealIdTravelsOverCoccl) {
  int v = 0;
  ASSERT_EQ(api().ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, 22899);
  int ids = count("ncclGetUniqueId");
  runRanks(2, [&](int r, ncclComm_t comm) {
    int dev = -1;
    EXPECT_EQ(api().ncclCommCuDevice(comm, &dev), ncclSuccess);
    EXPECT_EQ(dev, 5);  // the real communicator's
  });
  EXPECT_EQ(count("ncclGetUniqueId"), ids + 1);  // made on rank 0 only
  std::string i0 = last(rk("ncclCommInitRankConfig", 0)), i1 = last(rk("ncclCommInitRankConfig", 1));
  ASSERT_FALSE(i0.empty());
  ASSERT_FALSE(i1.empty());
  EXPECT_EQ(i0.substr(i0.find("id=")), i1.substr(i1.find("id=")));
  EXPECT_NE(i0.find("n=2"), std::string::npos);
  EXPECT_EQ(count(rk("ncclCommFinalize", 1)), 1);
  EXPECT_GE(count(rk("ncclCommDestroy", 0)), 1);
}

TEST(FakeNccl, DispatchGroupsAndSimulation) {
  std::atomic<int> turn{0};
  std::vector<float> in[2] = {input(0, kCount), input(1, kCount)};
  std::vector<double> sum(kCount);
  for (size_t i = 0; i < kCount; ++i) sum[i] = double(in[0][i]) + in[1][i];
  runRanks(2, [&](int r, ncclComm_t comm) {
    const Api& a = api();
    const std::string ar = rk("ncclAllReduce", r);
    std::vector<float> y(kCount, 0.f);
    ASSERT_EQ(a.ncclAllReduce(in[r].data(), y.data(), kCount, ncclFloat32, ncclSum, comm, nullptr),
              ncclSuccess) << lastError();
    EXPECT_EQ(count(ar), 0) << "a compressible allreduce reached NCCL";
    EXPECT_LT(relL2(y, sum), 0.02);
    // Not compressible: forwarded unchanged.
    EXPECT_EQ(a.ncclAllReduce(y.data(), y.data(), kCount, ncclFloat32, ncclMax, comm, nullptr), ncclSuccess);
    EXPECT_EQ(last(ar), ar + " count=65536 type=7 op=2 group=0");
    EXPECT_EQ(a.ncclAllReduce(y.data(), y.data(), 16, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    EXPECT_EQ(last(ar), ar + " count=16 type=7 op=0 group=0");
    // COCCL_COMPRESS_MIN_BYTES=1K (ctest environment; the suffix is read): 2 KiB is compressed.
    EXPECT_EQ(a.ncclAllReduce(y.data(), y.data(), 512, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    EXPECT_EQ(last(ar), ar + " count=16 type=7 op=0 group=0") << "a 2 KiB allreduce reached NCCL";
    EXPECT_EQ(a.ncclAllReduce(y.data(), y.data(), kCount, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
    EXPECT_EQ(last(ar), ar + " count=65536 type=2 op=0 group=0");
    ncclRedOp_t pre;
    float scale = 0.5f;
    ASSERT_EQ(a.ncclRedOpCreatePreMulSum(&pre, &scale, ncclFloat32, ncclScalarHostImmediate, comm), ncclSuccess);
    EXPECT_EQ(a.ncclAllReduce(y.data(), y.data(), kCount, ncclFloat32, pre, comm, nullptr), ncclSuccess);
    EXPECT_EQ(last(ar), ar + " count=65536 type=7 op=5 group=0");
    std::vector<int8_t> bytes(kCount * 2);
    EXPECT_EQ(a.ncclAllGather(bytes.data(), bytes.data(), kCount, ncclInt8, comm, nullptr), ncclSuccess);
    EXPECT_EQ(count(rk("ncclAllGather", r)), 1);
    EXPECT_EQ(a.ncclBroadcast(in[r].data(), y.data(), 8, ncclFloat32, 0, comm, nullptr), ncclSuccess);
    EXPECT_EQ(last(rk("ncclBroadcast", r)), rk("ncclBroadcast", r) + " count=8 root=0 inplace=0");
    EXPECT_EQ(a.ncclBcast(y.data(), 8, ncclFloat32, 1, comm, nullptr), ncclSuccess);
    EXPECT_EQ(last(rk("ncclBroadcast", r)), rk("ncclBroadcast", r) + " count=8 root=1 inplace=1");
    // ncclGetLastError is process-wide: the ranks (threads) take turns for the error checks.
    while (turn.load() != r) std::this_thread::yield();
    EXPECT_EQ(a.ncclReduce(y.data(), y.data(), 8, ncclFloat32, ncclSum, 0, comm, nullptr), ncclInternalError);
    EXPECT_EQ(lastError(), "fake nccl error");  // the real NCCL's message for its failure
    ncclWindow_t win;
    EXPECT_EQ(a.ncclCommWindowRegister(comm, y.data(), 64, &win, 0), ncclInvalidUsage);
    EXPECT_NE(lastError().find("does not have it"), std::string::npos) << lastError();
    turn.store(r + 1);
    while (turn.load() != 2) std::this_thread::yield();  // both checked: go on
    void* mem = nullptr;
    EXPECT_EQ(a.ncclMemAlloc(&mem, 100), ncclSuccess);
    EXPECT_EQ(a.ncclMemFree(mem), ncclSuccess);

    // A group: forwarded calls inside a real group, the compressed one after it.
    std::vector<float> z(kCount, 0.f);
    ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(a.ncclAllReduce(in[r].data(), z.data(), kCount, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    ASSERT_EQ(a.ncclSend(y.data(), 4, ncclFloat32, 1 - r, comm, nullptr), ncclSuccess);
    ASSERT_EQ(a.ncclRecv(y.data(), 4, ncclFloat32, 1 - r, comm, nullptr), ncclSuccess);
    EXPECT_EQ(z[0], 0.f);
    ASSERT_EQ(a.ncclGroupEnd(), ncclSuccess) << lastError();
    EXPECT_EQ(last(rk("ncclSend", r)), rk("ncclSend", r) + " peer=" + std::to_string(1 - r) + " count=4 group=1");
    EXPECT_LT(relL2(z, sum), 0.02);
    // A simulation runs nothing: the compressed call is shown to the real NCCL's simulator.
    std::vector<float> w(kCount, 0.f);
    ncclSimInfo_t sim = {sizeof(ncclSimInfo_t), NCCL_SIM_INFO_MAGIC, NCCL_VERSION_CODE, NCCL_UNDEF_FLOAT};
    ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(a.ncclAllReduce(in[r].data(), w.data(), kCount, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    ASSERT_EQ(a.ncclGroupSimulateEnd(&sim), ncclSuccess) << lastError();
    EXPECT_EQ(sim.estimatedTime, 42.f);
    EXPECT_EQ(last(ar), ar + " count=65536 type=7 op=0 group=1");
    EXPECT_EQ(w[0], 0.f);
  });
}

TEST(FakeNccl, SplitShrinkAndGroupedInits) {
  runRanks(2, [&](int r, ncclComm_t comm) {
    const Api& a = api();
    ncclComm_t child = nullptr;
    ASSERT_EQ(a.ncclCommSplit(comm, 3, -r, &child, nullptr), ncclSuccess) << lastError();
    EXPECT_EQ(last(rk("ncclCommSplit", r)), rk("ncclCommSplit", r) + " color=3 key=" + std::to_string(-r));
    int crk = -1, dev = -1;
    EXPECT_EQ(a.ncclCommUserRank(child, &crk), ncclSuccess);
    EXPECT_EQ(crk, 1 - r);
    EXPECT_EQ(a.ncclCommCuDevice(child, &dev), ncclSuccess);
    EXPECT_EQ(dev, 5);
    std::vector<float> x(kCount, 1.f), y(kCount);
    ASSERT_EQ(a.ncclAllReduce(x.data(), y.data(), kCount, ncclFloat32, ncclSum, child, nullptr), ncclSuccess);
    EXPECT_NEAR(y[0], 2.f, 0.05f);
    EXPECT_EQ(a.ncclCommRevoke(child, 0), ncclInvalidUsage);  // the fake has no ncclCommRevoke
    EXPECT_EQ(a.ncclCommDestroy(child), ncclSuccess);
    // A split inside a group happens at its end.
    ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(a.ncclCommSplit(comm, 1, r, &child, nullptr), ncclSuccess) << lastError();
    ASSERT_EQ(a.ncclGroupEnd(), ncclSuccess) << lastError();
    EXPECT_EQ(a.ncclCommUserRank(child, &crk), ncclSuccess);
    EXPECT_EQ(crk, r);
    ASSERT_EQ(a.ncclAllReduce(x.data(), y.data(), kCount, ncclFloat32, ncclSum, child, nullptr), ncclSuccess);
    EXPECT_NEAR(y[0], 2.f, 0.05f);
    EXPECT_EQ(a.ncclCommDestroy(child), ncclSuccess);
    int excl[1] = {1};
    ncclComm_t shrunk = nullptr;
    ASSERT_EQ(a.ncclCommShrink(comm, excl, 1, &shrunk, nullptr, 1), ncclSuccess) << lastError();
    EXPECT_EQ(shrunk == nullptr, r == 1);
    if (shrunk) {
      EXPECT_EQ(last(rk("ncclCommShrink", 0)), rk("ncclCommShrink", 0) + " excluded=1 flags=1");
      EXPECT_EQ(a.ncclCommAbort(shrunk), ncclSuccess);
    }
  });
  // One thread, two ranks, one group (as nccl-tests creates its communicators); non-blocking.
  const Api& a = api();
  ncclUniqueId id;
  ASSERT_EQ(a.ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.commName = "grouped";
  ncclComm_t comms[2];
  int starts = count("ncclGroupStart");
  ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(a.ncclCommInitRankConfig(&comms[r], 2, id, r, &cfg), ncclSuccess);
  ASSERT_EQ(a.ncclGroupEnd(), ncclSuccess) << lastError();
  EXPECT_EQ(count("ncclGroupStart"), starts + 1);
  EXPECT_NE(last(rk("ncclCommInitRankConfig", 1)).find("name=grouped"), std::string::npos);
  for (auto c : comms) {
    ncclResult_t st = ncclInProgress;
    EXPECT_EQ(a.ncclCommGetAsyncError(c, &st), ncclSuccess);
    EXPECT_EQ(st, ncclSuccess);
  }
  for (auto c : comms) EXPECT_EQ(a.ncclCommAbort(c), ncclSuccess);
  ncclResult_t st;
  EXPECT_EQ(a.ncclCommGetAsyncError(comms[0], &st), ncclInvalidArgument);  // aborted
}

// PyTorch loads its wheel's libnccl.so.2 by path before any NCCL call: that instance binds its
// internal calls of its own exported nccl* functions to the shim (first in the global scope).
// The shim must not forward to that instance (every forwarded call failed with
// ncclInvalidArgument) but to a private copy. Runs in its own process, before anything loads
// the real NCCL (ctest: shim_cpu_preloaded_nccl).
TEST(PreloadedNccl, ForwardedCallsBindInsideTheRealNccl) {
  void* global = dlopen(SHIM_PATH, RTLD_NOW | RTLD_GLOBAL);  // as LD_PRELOAD puts it
  ASSERT_NE(global, nullptr) << dlerror();
  void* programs = dlopen(getenv("COCCL_NCCL_LIBRARY"), RTLD_NOW);  // the program's own copy
  ASSERT_NE(programs, nullptr) << dlerror();
  auto programCount = reinterpret_cast<int (*)(const char*)>(dlsym(programs, "fakeNcclCount"));
  ASSERT_NE(programCount, nullptr);
  runRanks(2, [&](int r, ncclComm_t comm) {
    std::vector<int64_t> x(2, r);
    EXPECT_EQ(api().ncclAllGather(x.data() + r, x.data(), 1, ncclInt64, comm, nullptr), ncclSuccess)
        << lastError();
  });
  EXPECT_EQ(programCount("ncclCommInitRankConfig"), 0) << "the shim used the program's instance";
  EXPECT_EQ(programCount("ncclAllGather"), 0);
  EXPECT_EQ(count("ncclAllGather"), 0);  // count() opens the path again: the program's instance
}
