#include "harness/harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace coccl::test {
namespace {

void runOne(int rank, int n, const cocclUniqueId& id, const RunOptions& opts,
            const std::function<void(Rank&)>& body) {
  Rank r{rank, n, nullptr};
  cocclConfig_t cfg = opts.config;
  if (opts.configure) opts.configure(rank, &cfg);
  cocclResult_t res = cocclCommInitRankConfig(&r.comm, n, id, rank, &cfg);
  if (opts.initCheck) {
    const char* e = cocclGetLastError(res == cocclSuccess ? r.comm : nullptr);
    opts.initCheck(rank, res, e ? e : "");
    if (res != cocclSuccess) return;
  } else {
    ASSERT_EQ(res, cocclSuccess) << "rank " << rank << ": " << cocclGetLastError(nullptr);
  }
  body(r);
  if (opts.destroyComm && r.comm) {
    EXPECT_EQ(cocclCommDestroy(r.comm), cocclSuccess);
  }
}

}  // namespace

void runRanks(int n, Mode mode, const std::function<void(Rank&)>& body, const RunOptions& opts) {
  cocclUniqueId id;
  if (mode == Mode::Threads) {
    ASSERT_EQ(cocclGetUniqueId(&id), cocclSuccess) << cocclGetLastError(nullptr);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { runOne(r, n, id, opts, body); });
    for (auto& t : threads) t.join();
    return;
  }
  runProcessRanks(n, nullptr, body, opts);
}

void runProcessRanks(int n, const std::function<void(int)>& setup,
                     const std::function<void(Rank&)>& body, const RunOptions& opts) {
  cocclUniqueId id;
  // Fork first, then rank 0 creates the unique id (and its root thread) and hands it to the
  // others through pipes. Forking while a thread of this process is running (the root's) could
  // hand a child a lock held mid-call by that thread (e.g. UCX's memory-hook lock around mmap)
  // and deadlock it; and a child's setup (environment) must come before its first coccl call,
  // which reads the COCCL_* table once.
  std::vector<int> pipeFds(2 * n, -1);
  for (int r = 1; r < n; ++r) ASSERT_EQ(pipe(&pipeFds[2 * r]), 0);
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      if (setup) setup(r);
      if (r == 0) {
        if (cocclGetUniqueId(&id) != cocclSuccess) _exit(3);
        for (int q = 1; q < n; ++q)
          if (write(pipeFds[2 * q + 1], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id)))
            _exit(4);
      } else if (read(pipeFds[2 * r], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) {
        _exit(5);
      }
      for (int fd : pipeFds)
        if (fd >= 0) close(fd);
      runOne(r, n, id, opts, body);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    pids.push_back(pid);
  }
  for (int fd : pipeFds)
    if (fd >= 0) close(fd);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts.harnessTimeoutS);
  std::vector<int> status(n, -1);
  int left = n;
  while (left > 0) {
    for (int r = 0; r < n; ++r) {
      if (status[r] != -1) continue;
      int st = 0;
      pid_t w = waitpid(pids[r], &st, WNOHANG);
      if (w == pids[r]) {
        status[r] = st;
        --left;
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < n; ++r)
        if (status[r] == -1) kill(pids[r], SIGKILL);
      ADD_FAILURE() << "ranks still running after " << opts.harnessTimeoutS << " s: killed (hang)";
      for (int r = 0; r < n; ++r)
        if (status[r] == -1) waitpid(pids[r], &status[r], 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int r = 0; r < n; ++r) {
    bool killedOk = false;
    for (int k : opts.expectKilled) killedOk |= k == r;
    if (killedOk) {
      EXPECT_TRUE(WIFSIGNALED(status[r])) << "rank " << r << " was expected to die";
      continue;
    }
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << "rank " << r << " (process) failed: status " << status[r];
  }
}

cocclConfig_t configWithTimeout(int timeoutMs) {
  cocclConfig_t c = COCCL_CONFIG_INITIALIZER;
  c.timeoutMs = timeoutMs;
  return c;
}

}  // namespace coccl::test
