// Topology: local hwloc facts, thread-safe first load, and gatherTopology over the bootstrap.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "core/topology.h"
#include "core_test_util.h"

namespace coccl {
namespace {

TEST(Topology, LocalFacts) {
  // First use from several threads at once: hwloc is loaded exactly once.
  std::vector<LocalTopology> ts(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&, i] { ts[i] = localTopology(); });
  for (auto& t : threads) t.join();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  for (const auto& t : ts) {
    EXPECT_EQ(t.hostname, host);
    EXPECT_NE(t.hostHash, 0u);
    EXPECT_EQ(t.hostHash, ts[0].hostHash);
    EXPECT_GE(t.numaNodes, 1);
    EXPECT_GE(t.cores, 1);
    EXPECT_GE(t.numaNode, 0) << "hwloc should know the NUMA node of a running thread";
  }
}

TEST(Topology, HostHashIsEqualInAChildProcess) {
  const uint64_t mine = localTopology().hostHash;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10);
    uint64_t h = localTopology().hostHash;
    _exit(write(fds[1], &h, sizeof(h)) == sizeof(h) ? 0 : 1);
  }
  close(fds[1]);
  uint64_t theirs = 0;
  EXPECT_EQ(read(fds[0], &theirs, sizeof(theirs)), static_cast<ssize_t>(sizeof(theirs)));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(theirs, mine);
}

TEST(Topology, GatherOverBootstrap) {
  const int n = 3;
  test::runRanks(n, [n](Bootstrap& b) {
    CommTopology t = gatherTopology(b);
    ASSERT_EQ(static_cast<int>(t.ranks.size()), n);
    EXPECT_EQ(t.localRanks, n);
    EXPECT_EQ(t.localRank, b.rank());
    EXPECT_EQ(t.nodes, 1);
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(t.sameHost(r, b.rank()));
      EXPECT_FALSE(t.ranks[r].hostname.empty());
      EXPECT_GE(t.ranks[r].cores, 1);
    }
  });
}

}  // namespace
}  // namespace coccl
