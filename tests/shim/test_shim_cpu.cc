// The libnccl.so.2 shim on a machine without a GPU, loaded with dlopen as a program would load
// NCCL. Each suite runs in its own process with its own environment (tests/shim/CMakeLists.txt):
//   NoNccl.*      COCCL_SHIM_NO_NCCL=1 COCCL_CODEC=int8: the compressed collectives run on
//                 coccl's host path through the shim; forwarded calls fail cleanly.
//   RealNccl.*    COCCL_NCCL_LIBRARY=<a real libnccl.so.2>: version forwarded; creating a
//                 communicator without a GPU fails with a clean error and a message.
//   MissingNccl.* COCCL_NCCL_LIBRARY=/nonexistent: ncclSystemError with a message.
//   Policy.*      COCCL_SHIM_NO_NCCL=1 COCCL_POLICY=policy_split_groups.json: Send/Recv and
//                 split communicators compressed or forwarded as the policy file says (and
//                 the weight-difference AllGather: test_shim_delta.cc, same executable).
#include <atomic>

#include "shim_test_util.h"

using namespace shimtest;

// ---- COCCL_SHIM_NO_NCCL=1, COCCL_CODEC=int8 -----------------------------------------------
TEST(NoNccl, LibraryBasics) {
  const Api& a = api();
  ASSERT_NE(a.ncclCocclShimVersion, nullptr);
  EXPECT_NE(std::string(a.ncclCocclShimVersion()).find("coccl"), std::string::npos);
  int v = 0;
  ASSERT_EQ(a.ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, NCCL_VERSION_CODE);  // no real NCCL: the ABI version the shim implements
  EXPECT_EQ(a.ncclGetVersion(nullptr), ncclInvalidArgument);
  EXPECT_FALSE(lastError().empty());
  EXPECT_STRNE(a.ncclGetErrorString(ncclInvalidUsage), "");
  EXPECT_EQ(a.ncclGroupEnd(), ncclInvalidUsage);
  void* p = nullptr;
  EXPECT_EQ(a.ncclMemAlloc(&p, 1024), ncclInvalidUsage);
  EXPECT_NE(lastError().find("COCCL_SHIM_NO_NCCL"), std::string::npos) << lastError();
}

TEST(NoNccl, CompressedCollectivesOnHostBuffers) {
  const int n = 2;
  std::vector<std::vector<float>> in(n), out(n), rs(n), ag(n);
  std::vector<double> sum(kCount, 0.0);
  for (int r = 0; r < n; ++r) {
    in[r] = input(r, kCount);
    for (size_t i = 0; i < kCount; ++i) sum[i] += in[r][i];
  }
  runRanks(n, [&](int r, ncclComm_t comm) {
    const Api& a = api();
    int cnt = 0, rk = -1, dev = -2;
    ncclResult_t ae = ncclInternalError;
    EXPECT_EQ(a.ncclCommCount(comm, &cnt), ncclSuccess);
    EXPECT_EQ(a.ncclCommUserRank(comm, &rk), ncclSuccess);
    EXPECT_EQ(a.ncclCommCuDevice(comm, &dev), ncclSuccess);
    EXPECT_EQ(a.ncclCommGetAsyncError(comm, &ae), ncclSuccess);
    EXPECT_EQ(cnt, n);
    EXPECT_EQ(rk, r);
    EXPECT_EQ(ae, ncclSuccess);
    out[r].assign(kCount, 0.f);
    ASSERT_EQ(a.ncclAllReduce(in[r].data(), out[r].data(), kCount, ncclFloat32, ncclSum, comm,
                              nullptr), ncclSuccess) << lastError();
    std::vector<float> avg(in[r]);  // in place, AVG
    ASSERT_EQ(a.ncclAllReduce(avg.data(), avg.data(), kCount, ncclFloat32, ncclAvg, comm, nullptr),
              ncclSuccess) << lastError();
    std::vector<double> half(sum);
    for (auto& x : half) x /= n;
    EXPECT_LT(relL2(avg, half), 0.02);
    rs[r].assign(kCount / n, 0.f);
    ASSERT_EQ(a.ncclReduceScatter(in[r].data(), rs[r].data(), kCount / n, ncclFloat32, ncclSum,
                                  comm, nullptr), ncclSuccess) << lastError();
    ag[r].assign(kCount * n, 0.f);
    ASSERT_EQ(a.ncclAllGather(in[r].data(), ag[r].data(), kCount, ncclFloat32, comm, nullptr),
              ncclSuccess) << lastError();
  });
  double e = relL2(out[0], sum);
  EXPECT_LT(e, 0.02) << "int8 allreduce error";
  EXPECT_GT(e, 0.0) << "exact: the compressed path was not taken";
  EXPECT_EQ(out[0], out[1]) << "ranks disagree";
  for (int r = 0; r < n; ++r) {
    std::vector<double> want(sum.begin() + r * (kCount / n), sum.begin() + (r + 1) * (kCount / n));
    EXPECT_LT(relL2(rs[r], want), 0.02);
    std::vector<double> all;
    for (int q = 0; q < n; ++q) all.insert(all.end(), in[q].begin(), in[q].end());
    EXPECT_LT(relL2(ag[r], all), 0.02);
  }
  EXPECT_EQ(ag[0], ag[1]);
}

TEST(NoNccl, ForwardedCallsFailCleanly) {
  // ncclGetLastError is process-wide (as NCCL's): the ranks, threads here, take turns so that
  // the other's failures do not overwrite the message being checked.
  std::atomic<int> turn{0};
  runRanks(2, [&](int r, ncclComm_t comm) {
    const Api& a = api();
    std::vector<float> buf(kCount, 1.f);
    std::vector<int32_t> ibuf(kCount, 1);
    while (turn.load() != r) std::this_thread::yield();
    EXPECT_EQ(a.ncclBroadcast(buf.data(), buf.data(), kCount, ncclFloat32, 0, comm, nullptr),
              ncclInvalidUsage);
    EXPECT_NE(lastError().find("ncclBroadcast"), std::string::npos) << lastError();
    turn.store(r + 1);
    while (turn.load() != 2) std::this_thread::yield();  // both checked: go on
    // Not compressible: MAX, int32, below the threshold. All go to the (absent) real NCCL.
    EXPECT_EQ(a.ncclAllReduce(buf.data(), buf.data(), kCount, ncclFloat32, ncclMax, comm, nullptr),
              ncclInvalidUsage);
    EXPECT_EQ(a.ncclAllReduce(ibuf.data(), ibuf.data(), kCount, ncclInt32, ncclSum, comm, nullptr),
              ncclInvalidUsage);
    EXPECT_EQ(a.ncclAllReduce(buf.data(), buf.data(), 16, ncclFloat32, ncclSum, comm, nullptr),
              ncclInvalidUsage);
    EXPECT_EQ(a.ncclSend(buf.data(), 16, ncclFloat32, 1 - r, comm, nullptr), ncclInvalidUsage);
    EXPECT_EQ(a.ncclAllReduce(buf.data(), buf.data(), 16, ncclFloat32, ncclSum, nullptr, nullptr),
              ncclInvalidArgument);
  });
}

TEST(NoNccl, GroupsInitAndCollectivesFromOneThread) {
  const Api& a = api();
  ncclUniqueId id;
  ASSERT_EQ(a.ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[2] = {nullptr, nullptr};
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.commName = "grouped";
  cfg.blocking = 0;
  ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(a.ncclCommInitRankConfig(&comms[r], 2, id, r, &cfg), ncclSuccess) << lastError();
  ncclResult_t ae = ncclSuccess;
  EXPECT_EQ(a.ncclCommGetAsyncError(comms[0], &ae), ncclSuccess);
  EXPECT_EQ(ae, ncclInProgress);  // created at the outermost GroupEnd
  ASSERT_EQ(a.ncclGroupEnd(), ncclSuccess) << lastError();
  EXPECT_EQ(a.ncclCommGetAsyncError(comms[1], &ae), ncclSuccess);
  EXPECT_EQ(ae, ncclSuccess);

  std::vector<float> x0 = input(0, kCount), x1 = input(1, kCount);
  std::vector<float> y0(kCount, 0.f), y1(kCount, 0.f);
  ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);  // nested
  ASSERT_EQ(a.ncclAllReduce(x0.data(), y0.data(), kCount, ncclFloat32, ncclSum, comms[0], nullptr),
            ncclSuccess);
  ASSERT_EQ(a.ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(y0[0], 0.f);  // queued until the outermost end
  ASSERT_EQ(a.ncclAllReduce(x1.data(), y1.data(), kCount, ncclFloat32, ncclSum, comms[1], nullptr),
            ncclSuccess);
  ASSERT_EQ(a.ncclGroupEnd(), ncclSuccess) << lastError();
  EXPECT_EQ(y0, y1);
  std::vector<double> sum(kCount);
  for (size_t i = 0; i < kCount; ++i) sum[i] = double(x0[i]) + x1[i];
  EXPECT_LT(relL2(y0, sum), 0.02);

  // A simulated group runs nothing; without a real NCCL the estimate stays unset.
  std::vector<float> z0(kCount, 0.f), z1(kCount, 0.f);
  ncclSimInfo_t sim = {sizeof(ncclSimInfo_t), NCCL_SIM_INFO_MAGIC, NCCL_VERSION_CODE,
                       NCCL_UNDEF_FLOAT};
  ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(a.ncclAllReduce(x0.data(), z0.data(), kCount, ncclFloat32, ncclSum, comms[0], nullptr),
            ncclSuccess);
  ASSERT_EQ(a.ncclAllReduce(x1.data(), z1.data(), kCount, ncclFloat32, ncclSum, comms[1], nullptr),
            ncclSuccess);
  ASSERT_EQ(a.ncclGroupSimulateEnd(&sim), ncclSuccess) << lastError();
  EXPECT_EQ(sim.estimatedTime, NCCL_UNDEF_FLOAT);
  EXPECT_EQ(z0, std::vector<float>(kCount, 0.f));
  for (auto c : comms) EXPECT_EQ(a.ncclCommDestroy(c), ncclSuccess);
}

TEST(NoNccl, ConfigsOfAnyVersion) {
  const Api& a = api();
  ncclUniqueId id;
  ASSERT_EQ(a.ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(a.ncclCommInitRankConfig(&comm, 1, id, 0, &bad), ncclInvalidArgument);
  EXPECT_NE(lastError().find("config"), std::string::npos);
  ncclConfig_t old = NCCL_CONFIG_INITIALIZER;  // an NCCL 2.14 header's config: up to netName
  old.size = offsetof(ncclConfig_t, splitShare);
  ASSERT_EQ(a.ncclCommInitRankConfig(&comm, 1, id, 0, &old), ncclSuccess) << lastError();
  EXPECT_EQ(a.ncclCommDestroy(comm), ncclSuccess);
  ASSERT_EQ(a.ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t all[3];
  ASSERT_EQ(a.ncclCommInitAll(all, 3, nullptr), ncclSuccess) << lastError();
  for (int r = 0; r < 3; ++r) {
    int rk = -1;
    EXPECT_EQ(a.ncclCommUserRank(all[r], &rk), ncclSuccess);
    EXPECT_EQ(rk, r);
    EXPECT_EQ(a.ncclCommDestroy(all[r]), ncclSuccess);
  }
}

TEST(NoNccl, SplitAndShrink) {
  runRanks(3, [&](int r, ncclComm_t comm) {
    const Api& a = api();
    // All in one color, keys reversed: the new ranks are reversed.
    ncclComm_t rev = nullptr;
    ASSERT_EQ(a.ncclCommSplit(comm, 7, -r, &rev, nullptr), ncclSuccess) << lastError();
    int rk = -1, cnt = 0;
    EXPECT_EQ(a.ncclCommUserRank(rev, &rk), ncclSuccess);
    EXPECT_EQ(a.ncclCommCount(rev, &cnt), ncclSuccess);
    EXPECT_EQ(rk, 2 - r);
    EXPECT_EQ(cnt, 3);
    std::vector<float> x(kCount, float(r + 1)), y(kCount);
    ASSERT_EQ(a.ncclAllReduce(x.data(), y.data(), kCount, ncclFloat32, ncclSum, rev, nullptr),
              ncclSuccess) << lastError();
    EXPECT_NEAR(y[0], 6.f, 0.1f);
    EXPECT_EQ(a.ncclCommDestroy(rev), ncclSuccess);
    // Rank 2 sits out; ranks 0 and 1 form a pair.
    ncclComm_t pair = nullptr;
    ASSERT_EQ(a.ncclCommSplit(comm, r == 2 ? NCCL_SPLIT_NOCOLOR : 0, r, &pair, nullptr),
              ncclSuccess) << lastError();
    EXPECT_EQ(pair == nullptr, r == 2);
    if (pair) {
      EXPECT_EQ(a.ncclCommCount(pair, &cnt), ncclSuccess);
      EXPECT_EQ(cnt, 2);
      ASSERT_EQ(a.ncclAllReduce(x.data(), y.data(), kCount, ncclFloat32, ncclSum, pair, nullptr),
                ncclSuccess) << lastError();
      EXPECT_NEAR(y[0], 3.f, 0.1f);
      EXPECT_EQ(a.ncclCommDestroy(pair), ncclSuccess);
    }
    // Shrink without rank 1: ranks 0 and 2 become 0 and 1.
    int excl[1] = {1};
    ncclComm_t shrunk = nullptr;
    ASSERT_EQ(a.ncclCommShrink(comm, excl, 1, &shrunk, nullptr, 0), ncclSuccess) << lastError();
    EXPECT_EQ(shrunk == nullptr, r == 1);
    if (shrunk) {
      EXPECT_EQ(a.ncclCommUserRank(shrunk, &rk), ncclSuccess);
      EXPECT_EQ(rk, r / 2);
      ASSERT_EQ(a.ncclAllReduce(x.data(), y.data(), kCount, ncclFloat32, ncclAvg, shrunk, nullptr),
                ncclSuccess) << lastError();
      EXPECT_NEAR(y[0], 2.f, 0.1f);
      EXPECT_EQ(a.ncclCommDestroy(shrunk), ncclSuccess);
    }
  });
}

// ---- COCCL_SHIM_NO_NCCL=1, COCCL_POLICY=policy_split_groups.json -----------------------------
// Which calls the shim hands coccl is the policy's choice per communicator: a call coccl does
// not compress is forwarded, and forwarded calls fail here (no real NCCL), so success tells
// that coccl ran it.
namespace {
// A ring exchange of kCount floats in one group: rank r sends to r+1 and receives from r-1.
ncclResult_t ring(ncclComm_t comm, int r, int n, std::vector<float>* got) {
  const Api& a = api();
  std::vector<float> mine = input(r, kCount);
  got->assign(kCount, 0.f);
  if (a.ncclGroupStart() != ncclSuccess) return ncclInternalError;
  ncclResult_t s = a.ncclSend(mine.data(), kCount, ncclFloat32, (r + 1) % n, comm, nullptr);
  ncclResult_t v = a.ncclRecv(got->data(), kCount, ncclFloat32, (r + n - 1) % n, comm, nullptr);
  ncclResult_t e = a.ncclGroupEnd();
  return s != ncclSuccess ? s : v != ncclSuccess ? v : e;
}
}  // namespace

TEST(Policy, SendRecvAndSplitGroupsFollowThePolicyFile) {
  if (launcherRankSet()) GTEST_SKIP() << "a launcher's RANK is set: the threads share it";
  const int n = 4;
  runRanks(n, [&](int r, ncclComm_t world) {
    const Api& a = api();
    // The world communicator has no name: its Send/Recv are not compressed, so forwarded.
    std::vector<float> got;
    EXPECT_EQ(ring(world, r, n, &got), ncclInvalidUsage);
    // A split named "pp0": the pp* rule compresses Send/Recv (int8), through cocclSend/Recv.
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.commName = "pp0";
    ncclComm_t pp = nullptr;
    ASSERT_EQ(a.ncclCommSplit(world, 0, r, &pp, &cfg), ncclSuccess) << lastError();
    ASSERT_EQ(ring(pp, r, n, &got), ncclSuccess) << lastError();
    const std::vector<float> want = input((r + n - 1) % n, kCount);
    EXPECT_LT(relL2(got, std::vector<double>(want.begin(), want.end())), 0.02);
    // Below the rule's min_bytes (1 KiB): forwarded.
    std::vector<float> small(16, 1.f);
    EXPECT_EQ(a.ncclSend(small.data(), 16, ncclFloat32, (r + 1) % n, pp, nullptr),
              ncclInvalidUsage);
    EXPECT_EQ(a.ncclCommDestroy(pp), ncclSuccess);
    // Pairs: both have new ranks 0 and 1; only their members' world ranks tell them apart.
    std::vector<float> x(kCount, float(r + 1)), y(kCount, 0.f);
    ncclComm_t dp = nullptr, tp = nullptr;
    ASSERT_EQ(a.ncclCommSplit(world, r % 2, r, &dp, nullptr), ncclSuccess) << lastError();
    ASSERT_EQ(a.ncclAllReduce(x.data(), y.data(), kCount, ncclFloat32, ncclSum, dp, nullptr),
              ncclSuccess) << lastError();
    EXPECT_NEAR(y[0], float(r % 2 == 0 ? 1 + 3 : 2 + 4), 0.1f);
    ASSERT_EQ(a.ncclCommSplit(world, r / 2, r, &tp, nullptr), ncclSuccess) << lastError();
    EXPECT_EQ(a.ncclAllReduce(x.data(), y.data(), kCount, ncclFloat32, ncclSum, tp, nullptr),
              ncclInvalidUsage);
    EXPECT_EQ(a.ncclCommDestroy(dp), ncclSuccess);
    EXPECT_EQ(a.ncclCommDestroy(tp), ncclSuccess);
  });
}

// ---- COCCL_NCCL_LIBRARY=<a real libnccl.so.2>, no GPU ---------------------------------------
TEST(RealNccl, VersionIsTheRealOnesAndInitFailsCleanly) {
  const Api& a = api();
  const char* path = getenv("COCCL_NCCL_LIBRARY");
  ASSERT_NE(path, nullptr);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto realVersion = reinterpret_cast<ncclResult_t (*)(int*)>(dlsym(h, "ncclGetVersion"));
  int want = 0, got = 0;
  ASSERT_EQ(realVersion(&want), ncclSuccess);
  ASSERT_EQ(a.ncclGetVersion(&got), ncclSuccess);
  EXPECT_EQ(got, want);
  ncclUniqueId id;
  ASSERT_EQ(a.ncclGetUniqueId(&id), ncclSuccess) << lastError();
  ncclComm_t comm = nullptr;
  ncclResult_t r = a.ncclCommInitRank(&comm, 1, id, 0);
  if (r == ncclSuccess) {  // a machine with a GPU
    EXPECT_EQ(a.ncclCommDestroy(comm), ncclSuccess);
  } else {
    EXPECT_EQ(comm, nullptr);
    EXPECT_TRUE(r == ncclUnhandledCudaError || r == ncclSystemError || r == ncclInternalError ||
                r == ncclInvalidUsage || r == ncclInvalidArgument) << r;
    EXPECT_FALSE(lastError().empty());
    std::printf("ncclCommInitRank without a GPU: %s: %s\n", a.ncclGetErrorString(r),
                lastError().c_str());
  }
}

// ---- COCCL_NCCL_LIBRARY=/nonexistent -----------------------------------------------------------
TEST(MissingNccl, ForwardedCallsReportTheLibrary) {
  const Api& a = api();
  int v = 0;
  ASSERT_EQ(a.ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  void* p = nullptr;
  EXPECT_EQ(a.ncclMemAlloc(&p, 64), ncclSystemError);
  EXPECT_NE(lastError().find("COCCL_NCCL_LIBRARY"), std::string::npos) << lastError();
  ncclUniqueId id;
  ASSERT_EQ(a.ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(a.ncclCommInitRank(&comm, 1, id, 0), ncclSystemError);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(lastError().find("libnccl"), std::string::npos) << lastError();
}

// ---- COCCL_NCCL_LIBRARY=<the shim itself>, or (SHIM_TEST_COPY=1) a copy of it ----------------
TEST(SelfLoad, NeverForwardsToItself) {
  std::string dir;
  if (getenv("SHIM_TEST_COPY")) {  // before the shim reads its environment
    char tmpl[] = "/tmp/coccl-shim-copy-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    std::string copy = dir + "/libnccl.so.2";
    ASSERT_EQ(std::system(("cp '" + std::string(SHIM_PATH) + "' '" + copy + "'").c_str()), 0);
    setenv("COCCL_NCCL_LIBRARY", copy.c_str(), 1);
  }
  const Api& a = api();
  void* p = nullptr;
  EXPECT_EQ(a.ncclMemAlloc(&p, 64), ncclSystemError);
  EXPECT_NE(lastError().find("shim"), std::string::npos) << lastError();
  int v = 0;
  EXPECT_EQ(a.ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  if (!dir.empty()) (void)!std::system(("rm -rf '" + dir + "'").c_str());
}
