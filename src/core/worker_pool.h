// A process-wide pool of worker threads that run a batch of jobs concurrently, each job on its
// own thread, and return when all have finished. Used where jobs must progress together (the
// operations of several communicators in one cocclGroupEnd: their ranks wait on each other), so
// every job gets a thread; the caller's thread runs the first job. Threads are created on first
// need and kept for later batches (a grouped call per training step pays no thread creation);
// idle ones end with the process. Batches from different caller threads take disjoint workers.
#pragma once

#include <cstddef>
#include <functional>

namespace coccl {

// Runs jobs[0..n) concurrently: jobs[0] on the calling thread, the others on pool workers;
// returns when every job has returned. Jobs must not throw (wrap them; see group.cc): an
// exception from a worker ends the process; one from jobs[0] is rethrown after the others end.
void runTogether(const std::function<void()>* jobs, size_t n);

// Workers created so far (for tests).
size_t workerPoolSize();

}  // namespace coccl
