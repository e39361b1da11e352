#include "core/worker_pool.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/log.h"

namespace coccl {
namespace {

// How long a worker that finished a job, and a caller waiting for its batch, poll (yielding the
// core) before they sleep on a condition variable: back-to-back grouped calls then hand jobs
// over without a futex wake-up, which costs tens of microseconds on a VM whose cores went idle.
constexpr std::chrono::microseconds kSpin{100};

template <class Done>
bool spinUntil(Done done) {
  const auto end = std::chrono::steady_clock::now() + kSpin;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

// One worker: waits for a job, runs it, counts the batch down. `job` (non-null while the worker
// is busy) and `pending` are written with the pool's mutex held and also polled without it.
struct Worker {
  std::thread thread;
  std::atomic<const std::function<void()>*> job{nullptr};
  std::atomic<size_t>* pending = nullptr;  // the batch's count of unfinished jobs
  std::condition_variable* batchDone = nullptr;
};

class Pool {
 public:
  void run(const std::function<void()>* jobs, size_t n) {
    if (n == 0) return;
    std::atomic<size_t> pending{n - 1};
    std::condition_variable done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Every worker first, then the jobs: a thread that cannot be created throws before any
      // job is handed out.
      std::vector<Worker*> picked;
      picked.reserve(n - 1);
      for (auto& w : workers_)
        if (!w->job.load() && picked.size() < n - 1) picked.push_back(w.get());
      while (picked.size() < n - 1) picked.push_back(&newWorker());
      for (size_t i = 1; i < n; ++i) {
        Worker& w = *picked[i - 1];
        w.pending = &pending;
        w.batchDone = &done;
        w.job.store(&jobs[i]);
      }
    }
    wake_.notify_all();
    // The workers hold pointers to `pending` and `done`: wait for them even if jobs[0] throws.
    std::exception_ptr thrown;
    try {
      jobs[0]();
    } catch (...) {
      thrown = std::current_exception();
    }
    spinUntil([&] { return pending.load() == 0; });
    // Taking the mutex also waits out the last worker's notify (it counts down and notifies
    // with the mutex held): `done` may be destroyed after this.
    std::unique_lock<std::mutex> lock(mu_);
    done.wait(lock, [&] { return pending.load() == 0; });
    lock.unlock();
    if (thrown) std::rethrow_exception(thrown);
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return workers_.size();
  }

 private:
  // With mu_ held: a new idle worker with its thread.
  Worker& newWorker() {
    workers_.reserve(workers_.size() + 1);  // so that push_back below cannot throw
    auto w = std::make_unique<Worker>();
    Worker* raw = w.get();
    raw->thread = std::thread([this, raw] { loop(*raw); });
    workers_.push_back(std::move(w));
    return *raw;
  }

  void loop(Worker& w) {
    for (;;) {
      spinUntil([&] { return w.job.load() != nullptr; });
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return w.job.load() != nullptr; });
      const std::function<void()>* job = w.job.load();
      lock.unlock();
      (*job)();
      setLogRank(-1);  // a job's log prefix (an init sets its rank) stays with that job
      lock.lock();
      w.job.store(nullptr);
      if (--*w.pending == 0) w.batchDone->notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

// The pool of this process. Never destroyed: idle workers wait on a condition variable and end
// with the process (no join at exit, so no order of static destructors to get wrong). A child of
// fork() has none of its parent's threads, and perhaps a mutex that one of them held: the
// pthread_atfork handler drops the parent's pool and lock there (leaked, never touched) and the
// child makes its own on first use.
std::mutex* g_mu = nullptr;
Pool* g_pool = nullptr;

void resetInChild() {
  g_mu = new std::mutex;
  g_pool = nullptr;
}

Pool& pool() {
  static const bool once = [] {
    g_mu = new std::mutex;
    pthread_atfork(nullptr, nullptr, resetInChild);
    return true;
  }();
  (void)once;
  std::lock_guard<std::mutex> lock(*g_mu);
  if (!g_pool) g_pool = new Pool();
  return *g_pool;
}

}  // namespace

void runTogether(const std::function<void()>* jobs, size_t n) {
  pool().run(jobs, n);
}

size_t workerPoolSize() {
  return pool().size();
}

}  // namespace coccl
