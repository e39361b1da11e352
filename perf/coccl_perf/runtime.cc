// Ranks, launchers and error handling of coccl_perf (see runtime.h).
#include "runtime.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace cocclperf {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool envInt(const char* name, int* out) {
  const char* v = env(name);
  if (!v) return false;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end) return false;
  *out = static_cast<int>(x);
  return true;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// After a rank failed: give the others time to notice (their peers' connections close), then
// stop the process if something still hangs.
void startWatchdog() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(60));
      std::fprintf(stderr, "coccl_perf: ranks still running 60 s after an error; exiting\n");
      std::fflush(stderr);
      std::_Exit(1);
    }).detach();
  });
}

}  // namespace

void checkCoccl(cocclResult_t r, const char* call, cocclComm_t comm, const char* file, int line) {
  if (r == cocclSuccess) return;
  const char* base = std::strrchr(file, '/');
  char buf[2048];
  std::snprintf(buf, sizeof(buf), "%s failed (%s:%d): %s (%d): %s", call, base ? base + 1 : file,
                line, cocclGetErrorString(r), static_cast<int>(r), cocclGetLastError(comm));
  throw PerfError(buf);
}

bool detectLaunch(Launch* l, std::string* err) {
  int size = 0, rank = 0, localSize = -1;
  if (env("OMPI_COMM_WORLD_SIZE")) {
    l->launcher = "mpirun";
    envInt("OMPI_COMM_WORLD_SIZE", &size);
    envInt("OMPI_COMM_WORLD_RANK", &rank);
    envInt("OMPI_COMM_WORLD_LOCAL_SIZE", &localSize);
  } else if (env("PMI_SIZE")) {
    l->launcher = "pmi";
    envInt("PMI_SIZE", &size);
    envInt("PMI_RANK", &rank);
    envInt("MPI_LOCALNRANKS", &localSize);
  } else if (env("WORLD_SIZE") && env("RANK")) {
    l->launcher = "torchrun";
    envInt("WORLD_SIZE", &size);
    envInt("RANK", &rank);
    envInt("LOCAL_WORLD_SIZE", &localSize);
  } else {
    return true;
  }
  if (size < 1 || rank < 0 || rank >= size) {
    *err = "launcher environment (" + l->launcher + ") gives rank " + std::to_string(rank) +
           " of " + std::to_string(size);
    return false;
  }
  if (size == 1) return true;  // one process: the threads get a unique id from this process
  l->processMode = true;
  l->nProcs = size;
  l->proc = rank;
  if (const char* id = env("COCCL_COMM_ID")) {
    l->commId = id;
    l->commIdSource = "COCCL_COMM_ID";
  } else if (env("MASTER_ADDR") && env("MASTER_PORT")) {
    l->commId = std::string(env("MASTER_ADDR")) + ":" + env("MASTER_PORT");
    l->commIdSource = "MASTER_ADDR:MASTER_PORT";
  } else if (l->launcher != "torchrun" && localSize == size) {
    // All ranks on this node: a loopback port derived from an id every rank shares.
    std::string job;
    const char* vars[] = {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID"};
    for (const char* v : vars)
      if (env(v)) {
        job = std::string(v) + "=" + env(v) + (env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : "");
        break;
      }
    if (job.empty()) {
      *err = "process mode under " + l->launcher +
             " found no job id (OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE, SLURM_JOB_ID) to "
             "derive a bootstrap port from; set COCCL_COMM_ID=<rank 0 host>:<free port>";
      return false;
    }
    l->commId = "127.0.0.1:" + std::to_string(20000 + fnv1a(job) % 20000);
    l->commIdSource = "derived from " + job;
  } else {
    *err = "process mode (" + l->launcher + ", " + std::to_string(size) +
           " ranks) needs a bootstrap address: set COCCL_COMM_ID=<rank 0 host>:<free port> "
           "(or MASTER_ADDR and MASTER_PORT)";
    return false;
  }
  if (!env("COCCL_COMM_ID")) setenv("COCCL_COMM_ID", l->commId.c_str(), 1);
  return true;
}

std::vector<uint64_t> Rank::allGather(const std::vector<uint64_t>& local) const {
  std::vector<uint64_t> all(local.size() * static_cast<size_t>(nranks));
  CP_CHECK(cocclAllGather(local.data(), all.data(), local.size(), cocclUint64, comm, nullptr),
           comm);
  return all;
}

void Rank::barrier() const {
  int32_t one = 1, sum = 0;
  CP_CHECK(cocclAllReduce(&one, &sum, 1, cocclInt32, cocclSum, comm, nullptr), comm);
  if (sum != nranks)
    throw PerfError("barrier AllReduce(int32 sum of 1) returned " + std::to_string(sum) +
                    ", expected " + std::to_string(nranks));
}

int runRanks(const Launch& l, int nThreads, const std::function<int(Rank&)>& body,
             const std::function<int(const Rank&)>& beforeInit) {
  const int nranks = l.nProcs * nThreads;
  cocclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (!l.processMode) {
    const cocclResult_t r = cocclGetUniqueId(&id);
    if (r != cocclSuccess) {
      std::fprintf(stderr, "coccl_perf: cocclGetUniqueId failed: %s: %s\n",
                   cocclGetErrorString(r), cocclGetLastError(nullptr));
      return 1;
    }
  }
  std::atomic<int> status{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < nThreads; ++t) {
    threads.emplace_back([&, t] {
      Rank rk;
      rk.rank = l.proc * nThreads + t;
      rk.nranks = nranks;
      rk.proc = l.proc;
      rk.nProcs = l.nProcs;
      rk.thread = t;
      rk.nThreads = nThreads;
      int st = 1;
      bool joined = false;
      try {
        if (beforeInit) rk.device = beforeInit(rk);
        CP_CHECK(cocclCommInitRank(&rk.comm, nranks, id, rk.rank), nullptr);
        joined = true;
        st = body(rk);
        CP_CHECK(cocclCommFinalize(rk.comm), rk.comm);
        cocclComm_t c = rk.comm;
        rk.comm = nullptr;
        CP_CHECK(cocclCommDestroy(c), nullptr);
      } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "coccl_perf: rank %d: error: %s\n", rk.rank, e.what());
        // The address hint only where the bootstrap itself failed (not, e.g., ranks whose
        // configurations disagree).
        const bool bootstrapFailed = std::strstr(e.what(), "bootstrap") != nullptr ||
                                     std::strstr(e.what(), "connect") != nullptr;
        if (l.processMode && !joined && bootstrapFailed)
          std::fprintf(stderr,
                       "coccl_perf: rank %d: bootstrap address COCCL_COMM_ID=%s (%s); under "
                       "torchrun, whose store owns MASTER_PORT, set COCCL_COMM_ID to a free "
                       "port\n",
                       rk.rank, l.commId.c_str(), l.commIdSource.c_str());
        std::fflush(stderr);
        if (rk.comm) cocclCommAbort(rk.comm);
        startWatchdog();
        st = 1;
      }
      int cur = status.load();
      while (st > cur && !status.compare_exchange_weak(cur, st)) {
      }
    });
  }
  for (auto& th : threads) th.join();
  return status.load();
}

void rprintf(const Rank& r, const char* fmt, ...) {
  if (!r.printer()) return;
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
  std::fflush(stdout);
}

uint64_t dbits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
double bitsd(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

}  // namespace cocclperf
