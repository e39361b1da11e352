// The NCCL transport (src/transport/nccl) without a GPU:
//   FakeNccl.*  COCCL_NCCL_LIBRARY = a recording stand-in for libnccl.so.2 (fake_nccl.cc): one
//               unique id made on rank 0 reaches every rank over the bootstrap, grouped
//               sends/receives and collectives reach NCCL with their arguments, NCCL's errors
//               become coccl errors with NCCL's message, teardown finalizes and destroys.
//   NoNccl.*    COCCL_NCCL_LIBRARY = a missing file: every rank ends unusable with the reason.
//   ProgramsNccl.*  the program loaded the fake itself, no shim around: shared, not copied.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core_test_util.h"
#include "transport/nccl/nccl_library.h"
#include "transport/nccl/nccl_comm.h"

using namespace coccl;
using namespace coccl::test;

namespace {

struct FakeLog {
  int (*count)(const char*) = nullptr;
  const char* (*last)(const char*) = nullptr;
};

// The fake's record, through the instance the transport loaded.
const FakeLog& fakeLog() {
  static FakeLog f = [] {
    FakeLog x;
    void* h = dlopen(std::getenv("COCCL_NCCL_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    if (h) {
      x.count = reinterpret_cast<int (*)(const char*)>(dlsym(h, "fakeNcclCount"));
      x.last = reinterpret_cast<const char* (*)(const char*)>(dlsym(h, "fakeNcclLast"));
    }
    return x;
  }();
  return f;
}

std::string last(const std::string& prefix) { return fakeLog().last(prefix.c_str()); }
int count(const std::string& prefix) { return fakeLog().count(prefix.c_str()); }
std::string rk(const char* fn, int r) { return std::string(fn) + " rank=" + std::to_string(r); }

}  // namespace

TEST(FakeNccl, OneIdForwardingErrorsAndTeardown) {
  std::string why;
  const nccl::Library* lib = nccl::library(&why);
  ASSERT_NE(lib, nullptr) << why;
  EXPECT_EQ(lib->version, 22899);
  runRanks(2, [](Bootstrap& bs) {
    const int me = bs.rank(), peer = 1 - me;
    NcclComm t(bs);
    ASSERT_TRUE(t.usable()) << t.reason();
    EXPECT_EQ(t.version(), 22899);
    std::vector<char> buf(256);
    t.group([&] {
      t.send(buf.data(), 100, peer, nullptr);
      t.recv(buf.data() + 128, 100, peer, nullptr);
    });
    EXPECT_EQ(last(rk("ncclSend", me)),
              rk("ncclSend", me) + " peer=" + std::to_string(peer) + " count=100 group=1");
    EXPECT_EQ(last(rk("ncclRecv", me)),
              rk("ncclRecv", me) + " peer=" + std::to_string(peer) + " count=100 group=1");
    std::vector<float> x(64, 1.f), y(64);
    t.allReduce(x.data(), y.data(), 64, cocclBfloat16, cocclAvg, nullptr);
    EXPECT_EQ(last(rk("ncclAllReduce", me)), rk("ncclAllReduce", me) + " count=64 type=9 op=4 group=0");
    t.allGather(x.data(), y.data(), 32, cocclFloat32, nullptr);
    EXPECT_EQ(last(rk("ncclAllGather", me)), rk("ncclAllGather", me) + " count=32 type=7");
    t.broadcast(x.data(), x.data(), 8, cocclInt32, 1, nullptr);
    EXPECT_EQ(last(rk("ncclBroadcast", me)), rk("ncclBroadcast", me) + " count=8 root=1 inplace=1");
    std::string msg;
    EXPECT_EQ(codeOf([&] { t.reduce(x.data(), y.data(), 8, cocclFloat32, cocclSum, 0, nullptr); }, &msg),
              cocclInternalError);  // the fake's ncclReduce fails
    EXPECT_NE(msg.find("ncclReduce"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fake nccl error"), std::string::npos) << msg;
    EXPECT_EQ(t.asyncError(), cocclSuccess);
    // An error inside a group still ends the group (NCCL's group depth back to 0).
    const int ends = count("ncclGroupEnd");
    EXPECT_EQ(codeOf([&] {
                t.group([&] {
                  t.send(buf.data(), 8, peer, nullptr);
                  COCCL_THROW(cocclInvalidArgument, "posting failed");
                });
              }),
              cocclInvalidArgument);
    EXPECT_GE(count("ncclGroupEnd"), ends + 1);
  });
  // One id, made on rank 0, used by both ranks' inits.
  std::string i0 = last(rk("ncclCommInitRankConfig", 0)), i1 = last(rk("ncclCommInitRankConfig", 1));
  ASSERT_FALSE(i0.empty());
  EXPECT_EQ(i0.substr(i0.find("id=")), i1.substr(i1.find("id=")));
  EXPECT_EQ(count("ncclGetUniqueId"), 1);
  EXPECT_EQ(count(rk("ncclCommFinalize", 0)), 1);
  EXPECT_EQ(count(rk("ncclCommDestroy", 1)), 1);
}

TEST(FakeNccl, AbortStopsEverything) {
  runRanks(2, [](Bootstrap& bs) {
    NcclComm t(bs);
    ASSERT_TRUE(t.usable()) << t.reason();
    const int aborts = count(rk("ncclCommAbort", bs.rank()));
    t.abort();
    t.abort();  // once
    EXPECT_EQ(count(rk("ncclCommAbort", bs.rank())), aborts + 1);
    EXPECT_EQ(t.asyncError(), cocclInvalidUsage);
    char b[8];
    EXPECT_EQ(codeOf([&] { t.send(b, 8, 1 - bs.rank(), nullptr); }), cocclInvalidUsage);
  });
}

TEST(NoNccl, EveryRankUnusableWithTheReason) {
  runRanks(3, [](Bootstrap& bs) {
    NcclComm t(bs);
    EXPECT_FALSE(t.usable());
    EXPECT_NE(t.reason().find("COCCL_NCCL_LIBRARY"), std::string::npos) << t.reason();
    EXPECT_NE(t.reason().find("/nonexistent/libnccl.so.2"), std::string::npos) << t.reason();
  });
}

// The program loaded the real NCCL itself and no shim is around (e.g. PyTorch's NCCL and
// coccl's C API in one process): the transport shares that instance, no private copy.
// Its own process (ctest nccl_comm_programs).
TEST(ProgramsNccl, SharedWithoutAShim) {
  void* programs = dlopen(std::getenv("COCCL_NCCL_LIBRARY"), RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(programs, nullptr) << dlerror();
  auto programCount = reinterpret_cast<int (*)(const char*)>(dlsym(programs, "fakeNcclCount"));
  ASSERT_NE(programCount, nullptr);
  runRanks(2, [](Bootstrap& bs) {
    NcclComm t(bs);
    EXPECT_TRUE(t.usable()) << t.reason();
  });
  EXPECT_EQ(programCount("ncclCommInitRankConfig"), 2);
}
