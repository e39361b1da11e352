#include "core/worker_pool.h"

#include <pthread.h>

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace coccl {
namespace {

// One worker: waits for a job, runs it, counts the batch down.
struct Worker {
  std::thread thread;
  const std::function<void()>* job = nullptr;  // set while busy
  size_t* pending = nullptr;                   // the batch's count of unfinished jobs
  std::condition_variable* batchDone = nullptr;
  bool busy = false;
};

class Pool {
 public:
  void run(const std::function<void()>* jobs, size_t n) {
    if (n == 0) return;
    size_t pending = n - 1;
    std::condition_variable done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Every worker first, then the jobs: a thread that cannot be created throws before any
      // job is handed out.
      std::vector<Worker*> picked;
      picked.reserve(n - 1);
      for (auto& w : workers_)
        if (!w->busy && picked.size() < n - 1) picked.push_back(w.get());
      while (picked.size() < n - 1) picked.push_back(&newWorker());
      for (size_t i = 1; i < n; ++i) {
        Worker& w = *picked[i - 1];
        w.job = &jobs[i];
        w.pending = &pending;
        w.batchDone = &done;
        w.busy = true;
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
    std::unique_lock<std::mutex> lock(mu_);
    done.wait(lock, [&] { return pending == 0; });
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
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return w.job != nullptr; });
      const std::function<void()>* job = w.job;
      lock.unlock();
      (*job)();
      lock.lock();
      w.job = nullptr;
      w.busy = false;
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
