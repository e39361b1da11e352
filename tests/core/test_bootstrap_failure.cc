// Bootstrap failure paths: timeouts, missing ranks, dead peers (forked processes that exit or
// are killed), abort from another thread, bad connections to the root, and fd/thread leaks.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "core_test_util.h"

namespace coccl {
namespace {

using test::codeOf;
using test::msSince;
using test::runRanks;
using Clock = std::chrono::steady_clock;

int countEntries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n - 1;  // the DIR's own fd (for /proc/self/fd; harmless for task)
}

// Builds bootstraps for ranks [0, n) concurrently.
std::vector<std::unique_ptr<Bootstrap>> makeRanks(int n, int64_t timeoutMs,
                                                  BootstrapHandle* handle = nullptr) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  if (handle) *handle = h;
  std::vector<std::unique_ptr<Bootstrap>> bs(n);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] { bs[r] = std::make_unique<Bootstrap>(h, r, n, timeoutMs); });
  for (auto& t : ts) t.join();
  return bs;
}

TEST(BootstrapFailure, RecvFromSilentPeerTimesOut) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  std::promise<void> done;
  std::shared_future<void> doneF = done.get_future().share();
  std::thread peer([&] {
    Bootstrap b(h, 1, 2, 300);
    doneF.wait();  // alive but silent until rank 0 gave up
  });
  {
    Bootstrap b(h, 0, 2, 300);
    auto t0 = Clock::now();
    int x;
    std::string msg;
    EXPECT_EQ(codeOf([&] { b.recv(1, 42, &x, sizeof(x)); }, &msg), cocclSystemError);
    double ms = msSince(t0);
    EXPECT_GE(ms, 280);
    EXPECT_LT(ms, 1500);
    EXPECT_NE(msg.find("timed out"), std::string::npos) << msg;
    done.set_value();
  }
  peer.join();
}

TEST(BootstrapFailure, InitWithMissingRankTimesOut) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  std::vector<cocclResult_t> codes(2);
  std::vector<double> ms(2);
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      auto t0 = Clock::now();
      codes[r] = codeOf([&] { Bootstrap b(h, r, 3, 300); });  // rank 2 never comes
      ms[r] = msSince(t0);
    });
  for (auto& t : ts) t.join();
  // The first rank to time out makes the root give up; the other may see that first.
  EXPECT_TRUE(codes[0] == cocclSystemError || codes[1] == cocclSystemError);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(codes[r] == cocclSystemError || codes[r] == cocclRemoteError) << codes[r];
    EXPECT_LT(ms[r], 2000);
  }
}

TEST(BootstrapFailure, WrongMagicHandleIsRejected) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  BootstrapHandle bad = h;
  bad.magic ^= 1;
  auto t0 = Clock::now();
  std::string msg;
  EXPECT_EQ(codeOf([&] { Bootstrap b(bad, 0, 1, 5000); }, &msg), cocclRemoteError);
  EXPECT_LT(msSince(t0), 2000);
  EXPECT_NE(msg.find("root"), std::string::npos) << msg;
  // Garbage, a connection that closes at once and one that stays silent: the root survives.
  Socket garbage = Socket::connect(h.root, Deadline(2000));
  std::vector<char> junk(sizeof(RootRegistration), 'x');
  garbage.sendAll(junk.data(), junk.size(), Deadline(2000));
  { Socket quick = Socket::connect(h.root, Deadline(2000)); }
  Socket silent = Socket::connect(h.root, Deadline(2000));
  // The same root still serves its communicator.
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      try {
        Bootstrap b(h, r, 2, 5000);
        b.barrier();
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : ts) t.join();
  char c;
  EXPECT_EQ(codeOf([&] { garbage.recvAll(&c, 1, Deadline(2000)); }), cocclRemoteError);
}

// A forked child (rank 1) exits mid-protocol: the parent's recv and checkPeers see it at once.
TEST(BootstrapFailure, DeadChildProcess) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);
    try {
      Bootstrap b(h, 1, 2, 10000);
      int v = 7;
      b.send(0, 1, &v, sizeof(v));
      b.recv(0, 2, &v, sizeof(v));
      _exit(v == 8 ? 0 : 2);  // without sending tag 3 and without destroying anything
    } catch (...) {
      _exit(3);
    }
  }
  Bootstrap b(h, 0, 2, 10000);
  int v = 0;
  b.recv(1, 1, &v, sizeof(v));
  EXPECT_EQ(v, 7);
  EXPECT_NO_THROW(b.checkPeers());
  v = 8;
  b.send(1, 2, &v, sizeof(v));
  auto t0 = Clock::now();
  std::string msg;
  EXPECT_EQ(codeOf([&] { b.recv(1, 3, &v, sizeof(v)); }, &msg), cocclRemoteError);
  EXPECT_LT(msSince(t0), 2000);
  EXPECT_NE(msg.find("closed its bootstrap connection"), std::string::npos) << msg;
  EXPECT_EQ(codeOf([&] { b.checkPeers(); }, &msg), cocclRemoteError);
  EXPECT_NE(msg.find("rank 1 ("), std::string::npos) << msg;
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Three ranks, rank 2 a forked child killed with SIGKILL while rank 0 (parent thread) is blocked
// in recv from it and rank 1 (parent thread) polls checkPeers.
TEST(BootstrapFailure, KilledChildProcess) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);
    try {
      Bootstrap b(h, 2, 3, 10000);
      b.barrier();
      for (;;) pause();
    } catch (...) {
      _exit(3);
    }
  }
  std::unique_ptr<Bootstrap> b0, b1;
  std::thread t1([&] {
    b1 = std::make_unique<Bootstrap>(h, 1, 3, 10000);
    b1->barrier();
  });
  b0 = std::make_unique<Bootstrap>(h, 0, 3, 10000);
  b0->barrier();
  t1.join();
  ASSERT_TRUE(b1);
  std::atomic<double> recvMs{-1}, checkMs{-1};
  cocclResult_t recvCode = cocclSuccess, checkCode = cocclSuccess;
  Clock::time_point killAt;
  std::thread waiter([&] {
    int v;
    recvCode = codeOf([&] { b0->recv(2, 5, &v, sizeof(v)); });
    recvMs = msSince(killAt);
  });
  std::thread checker([&] {
    auto t0 = Clock::now();
    checkCode = codeOf([&] {
      while (msSince(t0) < 5000) {
        b1->checkPeers();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    checkMs = msSince(killAt);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  killAt = Clock::now();
  kill(pid, SIGKILL);
  waiter.join();
  checker.join();
  EXPECT_EQ(recvCode, cocclRemoteError);
  EXPECT_EQ(checkCode, cocclRemoteError);
  EXPECT_LT(recvMs.load(), 2000);
  EXPECT_LT(checkMs.load(), 2000);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
}

TEST(BootstrapFailure, AbortUnblocksRecvAndPropagates) {
  auto bs = makeRanks(2, 20000);
  ASSERT_TRUE(bs[0] && bs[1]);
  cocclResult_t c0 = cocclSuccess, c1 = cocclSuccess;
  double ms0 = -1, ms1 = -1;
  Clock::time_point abortAt;
  std::thread r0([&] {
    int v;
    c0 = codeOf([&] { bs[0]->recv(1, 1, &v, sizeof(v)); });
    ms0 = msSince(abortAt);
  });
  std::thread r1([&] {
    int v;
    c1 = codeOf([&] { bs[1]->recv(0, 1, &v, sizeof(v)); });
    ms1 = msSince(abortAt);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  abortAt = Clock::now();
  bs[0]->abort();
  r0.join();
  r1.join();
  EXPECT_EQ(c0, cocclInvalidUsage);
  EXPECT_EQ(c1, cocclRemoteError);  // the peer sees the aborted rank's connections close
  EXPECT_LT(ms0, 1000);
  EXPECT_LT(ms1, 1000);
  EXPECT_TRUE(bs[0]->aborted());
  int v = 0;
  EXPECT_EQ(codeOf([&] { bs[0]->send(1, 1, &v, sizeof(v)); }), cocclInvalidUsage);
  EXPECT_EQ(codeOf([&] { bs[0]->checkPeers(); }), cocclInvalidUsage);
  EXPECT_EQ(codeOf([&] { bs[0]->barrier(); }), cocclInvalidUsage);
  EXPECT_EQ(codeOf([&] { bs[1]->checkPeers(); }), cocclRemoteError);
  bs[0]->abort();  // idempotent
}

// Listening TCP sockets of this process, by fd.
std::vector<int> listeningFds() {
  std::vector<int> fds;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      int fd = atoi(e->d_name), on = 0;
      socklen_t len = sizeof(on);
      if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on) fds.push_back(fd);
    }
    closedir(d);
  }
  return fds;
}

// Strangers connecting to a rank's listener (wrong magic, bad rank, silent) are dropped and
// do not disturb the lazy connections between ranks.
TEST(BootstrapFailure, RankListenerDropsStrangers) {
  const int n = 3;
  const std::vector<int> before = listeningFds();
  BootstrapHandle h;
  auto bs = makeRanks(n, 5000, &h);
  std::vector<SocketAddress> rankAddrs;
  for (int fd : listeningFds()) {
    if (std::find(before.begin(), before.end(), fd) != before.end()) continue;
    SocketAddress a;
    std::memset(&a, 0, sizeof(a));
    socklen_t len = sizeof(a.u);
    ASSERT_EQ(getsockname(fd, &a.u.sa, &len), 0);
    rankAddrs.push_back(a);
  }
  ASSERT_EQ(static_cast<int>(rankAddrs.size()), n);  // the root's listener is gone already
  std::vector<Socket> strangers;
  for (const auto& a : rankAddrs) {
    // (A hello with the right magic and a plausible rank is a rank as far as anyone can tell:
    // the magic is the only credential.)
    PeerHello wrongMagic{h.magic ^ 0x55, 0, n}, badRank{h.magic, 7, n}, badSize{h.magic, 1, n + 5};
    for (const PeerHello* hello : {&wrongMagic, &badRank, &badSize}) {
      strangers.push_back(Socket::connect(a, Deadline(2000)));
      strangers.back().sendAll(hello, sizeof(*hello), Deadline(2000));
    }
    strangers.push_back(Socket::connect(a, Deadline(2000)));  // silent
  }
  // All pairs talk (0 <-> 2 needs new connections, accepted behind the strangers').
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      try {
        Bootstrap& b = *bs[r];
        for (int p = 0; p < n; ++p) b.send(p, 11, &r, sizeof(r));
        for (int p = 0; p < n; ++p) {
          int v = -1;
          b.recv(p, 11, &v, sizeof(v));
          EXPECT_EQ(v, p);
        }
        b.checkPeers();
        b.barrier();
      } catch (const Error& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  for (auto& t : ts) t.join();
  // Every hello was answered by a close (the silent ones stay pending, harmlessly).
  for (size_t i = 0; i < strangers.size(); ++i) {
    if (i % 4 == 3) continue;
    char c;
    EXPECT_EQ(codeOf([&] { strangers[i].recvAll(&c, 1, Deadline(2000)); }), cocclRemoteError) << i;
  }
}

// A frame whose length field is absurd (2^62 bytes) allocates nothing of that size: a queued
// frame's buffer grows with the bytes that arrive. Of the wanted tag, it fails the receive with
// cocclInternalError at once (the buffer used to be allocated from the length field first:
// std::bad_alloc out of recv, an ASan abort).
TEST(BootstrapFailure, WantedFrameWithAbsurdLengthAllocatesNothing) {
  const int n = 3;
  const std::vector<int> before = listeningFds();
  BootstrapHandle h;
  auto bs = makeRanks(n, 5000, &h);
  std::vector<Socket> forged;
  for (int fd : listeningFds()) {
    if (std::find(before.begin(), before.end(), fd) != before.end()) continue;
    SocketAddress a;
    std::memset(&a, 0, sizeof(a));
    socklen_t len = sizeof(a.u);
    ASSERT_EQ(getsockname(fd, &a.u.sa, &len), 0);
    // Rank k has a connection from k-1 (the ring) only: of these three hellos the one that
    // claims k+1 is taken, the others are dropped.
    for (int claim = 0; claim < n; ++claim) {
      forged.push_back(Socket::connect(a, Deadline(2000)));
      const PeerHello hello{h.magic, claim, n};
      const uint64_t hdr[2] = {11, 1ull << 62};
      forged.back().sendAll(&hello, sizeof(hello), Deadline(2000));
      forged.back().sendAll(hdr, sizeof(hdr), Deadline(2000));
    }
  }
  ASSERT_EQ(forged.size(), static_cast<size_t>(n * n));
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      int v = 0;
      std::string msg;
      EXPECT_EQ(codeOf([&] { bs[r]->recv((r + 1) % n, 11, &v, sizeof(v)); }, &msg),
                cocclInternalError)
          << "rank " << r << ": " << msg;
      EXPECT_NE(msg.find("expected 4"), std::string::npos) << msg;
    });
  for (auto& t : ts) t.join();
}

TEST(BootstrapFailure, NoFdOrThreadLeak) {
  // Warm up process-wide state (interface lookup, hwloc-free paths) before the baseline.
  runRanks(2, [](Bootstrap& b) { b.barrier(); });
  auto settle = [](int baseFd, int baseTask) {
    auto t0 = Clock::now();
    while ((countEntries("/proc/self/fd") > baseFd || countEntries("/proc/self/task") > baseTask) &&
           msSince(t0) < 3000)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  settle(1 << 30, 1 << 30);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int fd0 = countEntries("/proc/self/fd"), task0 = countEntries("/proc/self/task");
  for (int i = 0; i < 50; ++i) {
    const int n = 1 + i % 3;
    runRanks(n, [i](Bootstrap& b) {
      int v = i;
      b.send((b.rank() + 1) % b.nranks(), 3, &v, sizeof(v));
      b.recv((b.rank() + b.nranks() - 1) % b.nranks(), 3, &v, sizeof(v));
      b.barrier();
    });
  }
  // One failing init too (a rank missing): its root gives up and exits.
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  EXPECT_NE(codeOf([&] { Bootstrap b(h, 0, 2, 100); }), cocclSuccess);
  settle(fd0, task0);
  EXPECT_EQ(countEntries("/proc/self/fd"), fd0);
  EXPECT_EQ(countEntries("/proc/self/task"), task0);
}

}  // namespace
}  // namespace coccl
