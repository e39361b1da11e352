// The bootstrap against strangers: processes that connect to the root's or a rank's listening
// socket while a communicator is being created (wrong magic, garbage, a half-sent message then
// silence, a connection held open without a byte, connections that reset, a flood of idle
// connections, a registration whose nranks would size a huge table). None may crash a rank,
// make init hang past its timeout, allocate by a length field, or join the communicator: the
// real ranks' init succeeds, and only a stranger that holds the magic (the one credential:
// README "Threat model") can make it fail, cleanly and within the timeout.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <cstring>
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
using Clock = std::chrono::steady_clock;

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

SocketAddress addressOf(int fd) {
  SocketAddress a;
  std::memset(&a, 0, sizeof(a));
  socklen_t len = sizeof(a.u);
  EXPECT_EQ(getsockname(fd, &a.u.sa, &len), 0);
  return a;
}

// Sends what it can of `bytes` without blocking (a stranger does not care whether it is read).
void sendSome(const Socket& s, const void* data, size_t bytes) {
  (void)!::send(s.fd(), data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
}

// The strangers of one listening address; `magic` is the communicator's (used only to build a
// half-sent message, whose first bytes a stranger could have guessed at best).
struct Strangers {
  std::vector<Socket> kept;  // connections held open
  void visit(const SocketAddress& a, uint64_t magic, size_t wholeMessage) {
    const Deadline dl(2000);
    // Wrong magic followed by a MiB of garbage.
    std::vector<char> junk(1 << 20);
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>(i * 131 + 7);
    kept.push_back(Socket::connect(a, dl));
    sendSome(kept.back(), junk.data(), junk.size());
    // Three bytes (not even a whole magic), then silence.
    kept.push_back(Socket::connect(a, dl));
    sendSome(kept.back(), &magic, 3);
    // The right magic and half the message, then silence.
    std::vector<char> half(wholeMessage / 2, 0);
    std::memcpy(half.data(), &magic, sizeof(magic));
    kept.push_back(Socket::connect(a, dl));
    sendSome(kept.back(), half.data(), half.size());
    // Held open, not a byte.
    kept.push_back(Socket::connect(a, dl));
    // Connects and closes at once; connects, sends garbage and resets.
    { Socket quick = Socket::connect(a, dl); }
    {
      Socket reset = Socket::connect(a, dl);
      sendSome(reset, junk.data(), 5);
      linger l{1, 0};
      ::setsockopt(reset.fd(), SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
  }
};

// Runs Bootstrap init on ranks [0, n) as threads; rank `late` starts after `beforeLate()`.
void initRanks(const BootstrapHandle& h, int n, int64_t timeoutMs,
               std::vector<std::unique_ptr<Bootstrap>>* bs, std::vector<std::string>* errs,
               int late = -1, const std::function<void()>& beforeLate = nullptr) {
  bs->clear();
  bs->resize(static_cast<size_t>(n));
  errs->assign(n, "");
  std::vector<std::thread> ts;
  auto one = [&, timeoutMs](int r) {
    try {
      (*bs)[r] = std::make_unique<Bootstrap>(h, r, n, timeoutMs);
    } catch (const Error& e) {
      (*errs)[r] = e.what();
    }
  };
  for (int r = 0; r < n; ++r)
    if (r != late) ts.emplace_back(one, r);
  if (late >= 0) {
    if (beforeLate) beforeLate();
    ts.emplace_back(one, late);
  }
  for (auto& t : ts) t.join();
}

// Every pair talks, then a barrier: the communicator is whole and nobody else is in it.
void checkWorks(std::vector<std::unique_ptr<Bootstrap>>& bs) {
  const int n = static_cast<int>(bs.size());
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      try {
        Bootstrap& b = *bs[r];
        for (int p = 0; p < n; ++p) b.send(p, 5, &r, sizeof(r));
        for (int p = 0; p < n; ++p) {
          int v = -1;
          b.recv(p, 5, &v, sizeof(v));
          EXPECT_EQ(v, p);
        }
        b.checkPeers();
        b.barrier();
      } catch (const Error& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  for (auto& t : ts) t.join();
}

TEST(BootstrapStrangers, RootServesItsRanksDespiteStrangers) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  Strangers s;
  s.visit(h.root, h.magic, sizeof(RootRegistration));
  const auto t0 = Clock::now();
  std::vector<std::unique_ptr<Bootstrap>> bs;
  std::vector<std::string> errs;
  initRanks(h, 3, 5000, &bs, &errs);
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(bs[r]) << "rank " << r << ": " << errs[r];
  EXPECT_LT(msSince(t0), 2500);
  checkWorks(bs);
  // The root closed every stranger when it finished (or at once: the wrong magic).
  for (size_t i = 0; i < s.kept.size(); ++i) {
    char c;
    EXPECT_EQ(codeOf([&] { s.kept[i].recvAll(&c, 1, Deadline(3000)); }), cocclRemoteError) << i;
  }
}

TEST(BootstrapStrangers, RankListenersDuringInit) {
  const int n = 3;
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  const std::vector<int> before = listeningFds();  // the root's included
  Strangers s;
  std::vector<std::unique_ptr<Bootstrap>> bs;
  std::vector<std::string> errs;
  const auto t0 = Clock::now();
  // Ranks 0 and 1 listen and wait for rank 2 at the root; the strangers reach their listeners
  // (and sit in the backlog until the ring connections are accepted behind them).
  initRanks(h, n, 5000, &bs, &errs, 2, [&] {
    std::vector<int> fresh;
    while (fresh.size() < 2 && msSince(t0) < 3000) {
      fresh.clear();
      for (int fd : listeningFds())
        if (std::find(before.begin(), before.end(), fd) == before.end()) fresh.push_back(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(fresh.size(), 2u);
    for (int fd : fresh) s.visit(addressOf(fd), h.magic, sizeof(PeerHello));
  });
  for (int r = 0; r < n; ++r) ASSERT_TRUE(bs[r]) << "rank " << r << ": " << errs[r];
  EXPECT_LT(msSince(t0), 4000);
  checkWorks(bs);
  // The wrong magic was dropped at once; the others wait harmlessly until the ranks go.
  char c;
  EXPECT_EQ(codeOf([&] { s.kept[0].recvAll(&c, 1, Deadline(2000)); }), cocclRemoteError);
  EXPECT_EQ(codeOf([&] { s.kept[4].recvAll(&c, 1, Deadline(2000)); }), cocclRemoteError);
  bs.clear();
  for (size_t i = 0; i < s.kept.size(); ++i)
    EXPECT_EQ(codeOf([&] { s.kept[i].recvAll(&c, 1, Deadline(2000)); }), cocclRemoteError) << i;
}

int openFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// A process that opens `count` idle connections to `a`, says so through the pipe and waits to
// be killed (its descriptors are not this process's).
pid_t floodFrom(const SocketAddress& a, int count) {
  int p[2];
  if (pipe(p) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    std::vector<int> fds;
    for (int i = 0; i < count; ++i) {
      int fd = ::socket(a.u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0 || ::connect(fd, &a.u.sa, a.length()) != 0) _exit(2);
      fds.push_back(fd);
    }
    char c = 1;
    (void)!::write(p[1], &c, 1);
    for (;;) pause();
  }
  close(p[1]);
  char c = 0;
  const bool ok = ::read(p[0], &c, 1) == 1;
  close(p[0]);
  if (!ok) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

// A flood of idle connections (more than the root keeps) neither exhausts the root's
// descriptors nor starves the ranks: the root keeps a bounded number of unidentified
// connections and closes the oldest silent ones to let the newcomers in.
TEST(BootstrapStrangers, FloodOfIdleConnectionsAtTheRoot) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  const int fd0 = openFds();
  const pid_t flood = floodFrom(h.root, 1500);
  ASSERT_GT(flood, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the root accepts what it keeps
  const int held = openFds() - fd0;
  EXPECT_LE(held, 1024 + 8) << "the root holds a descriptor per stranger";
  EXPECT_GE(held, 100);  // (it did accept them)
  const auto t0 = Clock::now();
  std::vector<std::unique_ptr<Bootstrap>> bs;
  std::vector<std::string> errs;
  initRanks(h, 2, 5000, &bs, &errs);
  const double ms = msSince(t0);
  kill(flood, SIGKILL);
  waitpid(flood, nullptr, 0);
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(bs[r]) << "rank " << r << ": " << errs[r];
  EXPECT_LT(ms, 3000);
  checkWorks(bs);
}

// The same at a rank's listener during init (it keeps fewer: a rank expects nranks - 1).
TEST(BootstrapStrangers, FloodOfIdleConnectionsAtARank) {
  const int n = 3;
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  const std::vector<int> before = listeningFds();
  std::vector<std::unique_ptr<Bootstrap>> bs;
  std::vector<std::string> errs;
  pid_t flood = -1;
  const int fd0 = openFds();
  const auto t0 = Clock::now();
  initRanks(h, n, 5000, &bs, &errs, 2, [&] {
    std::vector<int> fresh;
    while (fresh.size() < 2 && msSince(t0) < 3000) {
      fresh.clear();
      for (int fd : listeningFds())
        if (std::find(before.begin(), before.end(), fd) == before.end()) fresh.push_back(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(fresh.size(), 2u);
    // Rank 1's listener: its ring connection from rank 0 comes after the flood.
    flood = floodFrom(addressOf(fresh[1]), 600);
  });
  // The ranks' own sockets and at most 256 strangers pending at rank 1.
  const int held = openFds() - fd0;
  if (flood > 0) {
    kill(flood, SIGKILL);
    waitpid(flood, nullptr, 0);
  }
  ASSERT_GT(flood, 0);
  EXPECT_LE(held, 256 + 40) << "a rank holds a descriptor per stranger";
  for (int r = 0; r < n; ++r) ASSERT_TRUE(bs[r]) << "rank " << r << ": " << errs[r];
  EXPECT_LT(msSince(t0), 4000);
  checkWorks(bs);
}

// CPU time (user + system) of process `pid` in clock ticks.
long cpuTicks(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return -1;
  char buf[1024] = {0};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const char* p = std::strrchr(buf, ')');
  if (!p || n == 0) return -1;
  long utime = 0, stime = 0;
  // Fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt
  // cmajflt utime stime.
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime,
                  &stime) != 2)
    return -1;
  return utime + stime;
}

// A root out of descriptors (a low RLIMIT_NOFILE in its own process, flooded by another)
// closes silent strangers to let the ranks in, and does not spin while it cannot accept.
TEST(BootstrapStrangers, RootOutOfDescriptors) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the root's process starts its thread after fork (TSan does not support it)";
#endif
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t rootPid = fork();
  ASSERT_GE(rootPid, 0);
  if (rootPid == 0) {
    close(p[0]);
    rlimit lim;
    getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = static_cast<rlim_t>(openFds() + 40);
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(2);
    BootstrapHandle h;
    try {
      bootstrapCreateRoot(&h);
    } catch (...) {
      _exit(3);
    }
    (void)!::write(p[1], &h, sizeof(h));
    sleep(20);
    _exit(0);
  }
  close(p[1]);
  BootstrapHandle h;
  ASSERT_EQ(::read(p[0], &h, sizeof(h)), static_cast<ssize_t>(sizeof(h)));
  close(p[0]);
  const pid_t flood = floodFrom(h.root, 200);  // the kernel backlog takes what the root cannot
  ASSERT_GT(flood, 0);
  const long cpu0 = cpuTicks(rootPid);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // out of descriptors by now
  const auto t0 = Clock::now();
  std::vector<std::unique_ptr<Bootstrap>> bs;
  std::vector<std::string> errs;
  initRanks(h, 2, 5000, &bs, &errs);
  const double ms = msSince(t0);
  const long cpu1 = cpuTicks(rootPid);
  kill(flood, SIGKILL);
  kill(rootPid, SIGKILL);
  waitpid(flood, nullptr, 0);
  waitpid(rootPid, nullptr, 0);
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(bs[r]) << "rank " << r << ": " << errs[r];
  // The ranks queue behind 200 strangers, let in ~40 at a time as they go stale (500 ms).
  EXPECT_LT(ms, 4500);
  checkWorks(bs);
  // Busy-polling would burn about one tick per 10 ms of wall time.
  const double wallMs = 300 + ms;
  EXPECT_LT(static_cast<double>(cpu1 - cpu0), 0.3 * wallMs / 10.0)
      << "the root used " << (cpu1 - cpu0) << " ticks in " << wallMs << " ms";
}

// A registration with the right magic is a rank as far as the root can tell. One that claims
// an absurd communicator size (2^30 ranks) must not make the root allocate a table for it:
// the real ranks are refused (their nranks differs) with a clear error, promptly.
TEST(BootstrapStrangers, ForgedHugeNranksAllocatesNothing) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  RootRegistration reg;
  std::memset(&reg, 0, sizeof(reg));
  reg.magic = h.magic;
  reg.rank = 5;
  reg.nranks = 1 << 30;
  Socket forged = Socket::connect(h.root, Deadline(2000));
  forged.sendAll(&reg, sizeof(reg), Deadline(2000));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = Clock::now();
  std::vector<std::unique_ptr<Bootstrap>> bs;
  std::vector<std::string> errs;
  initRanks(h, 2, 3000, &bs, &errs);
  EXPECT_LT(msSince(t0), 2500);
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(bs[r]) << "rank " << r << " joined a communicator of 2^30 ranks";
    EXPECT_NE(errs[r].find("nranks differs"), std::string::npos) << errs[r];
  }
}

}  // namespace
}  // namespace coccl
