// The worker pool behind cocclGroupEnd's concurrent communicators (src/core/worker_pool.h).
// WorkerPoolThreads has "Threads" in its name: scripts/sanitize.sh runs it under TSan.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "core/worker_pool.h"

namespace coccl {
namespace {

// n jobs that each wait until all n have started: they finish only if they run at once.
std::vector<std::function<void()>> rendezvous(size_t n, std::atomic<size_t>& arrived,
                                              std::atomic<bool>& timedOut) {
  std::vector<std::function<void()>> jobs;
  for (size_t i = 0; i < n; ++i)
    jobs.emplace_back([n, &arrived, &timedOut] {
      arrived.fetch_add(1);
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (arrived.load() < n) {
        if (std::chrono::steady_clock::now() > end) {
          timedOut = true;
          return;
        }
        std::this_thread::yield();  // more jobs than cores here
      }
    });
  return jobs;
}

TEST(WorkerPoolThreads, JobsRunTogetherAndWorkersAreReused) {
  for (size_t n : {1u, 2u, 5u}) {
    std::atomic<size_t> arrived{0};
    std::atomic<bool> timedOut{false};
    auto jobs = rendezvous(n, arrived, timedOut);
    runTogether(jobs.data(), jobs.size());
    EXPECT_EQ(arrived.load(), n);
    EXPECT_FALSE(timedOut.load()) << n << " jobs did not run at the same time";
  }
  const size_t workers = workerPoolSize();
  EXPECT_GE(workers, 4u);
  for (int round = 0; round < 50; ++round) {
    std::atomic<size_t> arrived{0};
    std::atomic<bool> timedOut{false};
    auto jobs = rendezvous(5, arrived, timedOut);
    runTogether(jobs.data(), jobs.size());
    ASSERT_FALSE(timedOut.load());
  }
  EXPECT_EQ(workerPoolSize(), workers) << "later batches must reuse the workers";
}

TEST(WorkerPoolThreads, BatchesFromSeveralThreadsTakeDisjointWorkers) {
  // Two callers at once, each a batch of 3 that must meet: a worker given to both would
  // deadlock one batch (it would time out).
  std::atomic<bool> bad{false};
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        std::atomic<size_t> arrived{0};
        std::atomic<bool> timedOut{false};
        auto jobs = rendezvous(3, arrived, timedOut);
        runTogether(jobs.data(), jobs.size());
        if (timedOut || arrived.load() != 3) bad = true;
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_FALSE(bad.load());
}

// Not a "Threads" suite: TSan does not support starting threads in the child of a process that
// had several (it dies at the child's first thread), so scripts/sanitize.sh must not pick it.
TEST(WorkerPoolFork, ForkedChildGetsItsOwnWorkers) {
  std::atomic<size_t> arrived{0};
  std::atomic<bool> timedOut{false};
  auto jobs = rendezvous(3, arrived, timedOut);
  runTogether(jobs.data(), jobs.size());  // the parent's pool has workers now
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::atomic<size_t> a{0};
    std::atomic<bool> t{false};
    auto js = rendezvous(3, a, t);
    runTogether(js.data(), js.size());  // the parent's workers do not exist here
    _exit(t.load() || a.load() != 3 ? 1 : 0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

}  // namespace
}  // namespace coccl
