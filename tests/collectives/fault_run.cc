// The fault-injection run (fault_run.h): the plan, the calls over a FaultMemory, a rank's body
// and the parent's checks of what every rank reported.
#include "fault_run.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fault_util.h"

namespace coccl::test {
namespace {

constexpr int kMaxRanks = 8;
constexpr int kCalls = 200;
constexpr int kTimeoutMs = kFaultTimeoutMs;
constexpr int kMaxOutputLines = 2;  // what a survivor may print (none of it UCX's)
// Marks of UCX's own output (its log lines name their source file: ucp_*.c, uct_*.c, mm_*.c;
// "shmat" is the SysV error the issue saw in the survivors). A survivor prints none of it:
// coccl closes its UCX workers quietly after an abort (issue 18's finding: 94 lines in an
// 8-rank run before).
const char* const kUcxMarks[] = {"UCX", "ucp_", "uct_", "mm_sysv", "mm_posix", "shmat"};

enum Kind {
  kArExact,
  kArPolicy,
  kArCodec,
  kRsPolicy,
  kRsCodec,
  kAgExact,
  kAgCodec,
  kBcast,
  kSendRecv,
  kKinds
};
const char* kindName(int k) {
  static const char* n[] = {"allreduce-exact",      "allreduce-policy",    "allreduce-codec",
                            "reducescatter-policy", "reducescatter-codec", "allgather-exact",
                            "allgather-codec",      "broadcast",           "sendrecv"};
  return n[k];
}

struct Call {
  int kind;
  size_t count;  // elements (per rank block for ReduceScatter / AllGather)
  int root;
  int codec;  // per-call codec index
};

struct Plan {
  uint64_t seed;
  int nranks;
  int victim;
  int killCall;     // the victim arms its killer when it enters this call
  int killDelayUs;  // and dies this long after
  std::vector<Call> calls;
};

Plan makePlan(uint64_t seed, int nranks) {
  std::mt19937_64 g(seed);
  Plan p;
  p.seed = seed;
  p.nranks = nranks;
  p.victim = static_cast<int>(g() % static_cast<uint64_t>(nranks));
  p.killCall = static_cast<int>(g() % kCalls);
  p.killDelayUs = static_cast<int>(g() % 4000);
  for (int i = 0; i < kCalls; ++i) {
    Call c;
    c.kind = static_cast<int>(g() % kKinds);
    // Sizes from one element to 256 Ki: both sides of COCCL_COMPRESS_MIN_BYTES (4096), UCX's
    // eager and rendezvous protocols, one and several pipeline chunks (COCCL_CHUNK_BYTES 64 KiB).
    const uint64_t range[] = {64, 2048, 64 * 1024, 256 * 1024};
    c.count = 1 + static_cast<size_t>(g() % range[g() % 4]);
    c.root = static_cast<int>(g() % static_cast<uint64_t>(nranks));
    c.codec = static_cast<int>(g() % 2);
    p.calls.push_back(c);
  }
  return p;
}

float inputF(int rank, int call, size_t i) {
  return std::sin(0.37f * static_cast<float>(i) + static_cast<float>(rank * 13 + call)) +
         0.01f * static_cast<float>(rank);
}
int32_t inputI(int rank, int call, size_t i) {
  return static_cast<int32_t>((rank + 1) * 1000 + call * 7 + static_cast<int>(i % 97));
}

double relL2(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Buffers of one call on a FaultMemory, released when the call ends.
class CallBuffers {
 public:
  explicit CallBuffers(FaultMemory& m) : m_(m) {}
  ~CallBuffers() { m_.release(); }
  CallBuffers(const CallBuffers&) = delete;
  CallBuffers& operator=(const CallBuffers&) = delete;
  template <typename T>
  T* put(const std::vector<T>& v) {
    void* p = m_.alloc(v.size() * sizeof(T));
    m_.upload(p, v.data(), v.size() * sizeof(T));
    return static_cast<T*>(p);
  }
  template <typename T>
  std::vector<T> get(const T* p, size_t n) {
    std::vector<T> v(n);
    m_.download(v.data(), p, n * sizeof(T));
    return v;
  }

 private:
  FaultMemory& m_;
};

// Runs call `idx` of the plan on `mem`'s buffers; on success checks the result (a wrong one
// returns cocclInternalError with *why set, which the test reports as a failure).
cocclResult_t runCall(const Plan& plan, int idx, int rank, cocclComm_t comm, cocclCodec_t codecs[2],
                      FaultMemory& mem, std::string* why) {
  const Call& c = plan.calls[static_cast<size_t>(idx)];
  const int n = plan.nranks;
  const size_t cnt = c.count;
  const size_t un = static_cast<size_t>(n);
  cocclStream_t st = mem.stream();
  CallBuffers b(mem);
  auto wrong = [&](const std::string& w) {
    *why = std::string(kindName(c.kind)) + ": " + w;
    return cocclInternalError;
  };
  // The enqueue's result, else the call's outcome.
  auto done = [&](cocclResult_t enq) { return enq != cocclSuccess ? enq : mem.complete(comm); };
  switch (c.kind) {
    case kArExact: {
      std::vector<int32_t> in(cnt);
      for (size_t i = 0; i < cnt; ++i) in[i] = inputI(rank, idx, i);
      int32_t* dIn = b.put(in);
      int32_t* dOut = b.put(std::vector<int32_t>(cnt, -1));
      const cocclResult_t r = done(cocclAllReduce(dIn, dOut, cnt, cocclInt32, cocclSum, comm, st));
      if (r != cocclSuccess) return r;
      const std::vector<int32_t> out = b.get(dOut, cnt);
      for (size_t i = 0; i < cnt; ++i) {
        int32_t want = 0;
        for (int q = 0; q < n; ++q) want += inputI(q, idx, i);
        if (out[i] != want) return wrong("element " + std::to_string(i));
      }
      return r;
    }
    case kArPolicy:
    case kArCodec: {
      std::vector<float> in(cnt);
      std::vector<double> want(cnt, 0.0);
      for (size_t i = 0; i < cnt; ++i) {
        in[i] = inputF(rank, idx, i);
        for (int q = 0; q < n; ++q) want[i] += inputF(q, idx, i);
      }
      float* dIn = b.put(in);
      float* dOut = b.put(std::vector<float>(cnt, 0.0f));
      const cocclResult_t r = done(
          c.kind == kArPolicy ? cocclAllReduce(dIn, dOut, cnt, cocclFloat32, cocclSum, comm, st)
                              : cocclAllReduceCodec(dIn, dOut, cnt, cocclFloat32, cocclSum,
                                                    codecs[c.codec], comm, st));
      if (r != cocclSuccess) return r;
      const double e = relL2(b.get(dOut, cnt), want);
      if (!(e < 0.1)) return wrong("relative L2 " + std::to_string(e));
      return r;
    }
    case kRsPolicy:
    case kRsCodec: {
      std::vector<float> in(cnt * un);
      std::vector<double> want(cnt, 0.0);
      for (size_t i = 0; i < cnt * un; ++i) in[i] = inputF(rank, idx, i);
      for (size_t i = 0; i < cnt; ++i)
        for (int q = 0; q < n; ++q) want[i] += inputF(q, idx, static_cast<size_t>(rank) * cnt + i);
      float* dIn = b.put(in);
      float* dOut = b.put(std::vector<float>(cnt, 0.0f));
      const cocclResult_t r = done(
          c.kind == kRsPolicy ? cocclReduceScatter(dIn, dOut, cnt, cocclFloat32, cocclSum, comm, st)
                              : cocclReduceScatterCodec(dIn, dOut, cnt, cocclFloat32, cocclSum,
                                                        codecs[c.codec], comm, st));
      if (r != cocclSuccess) return r;
      const double e = relL2(b.get(dOut, cnt), want);
      if (!(e < 0.1)) return wrong("relative L2 " + std::to_string(e));
      return r;
    }
    case kAgExact: {
      std::vector<int32_t> in(cnt);
      for (size_t i = 0; i < cnt; ++i) in[i] = inputI(rank, idx, i);
      int32_t* dIn = b.put(in);
      int32_t* dOut = b.put(std::vector<int32_t>(cnt * un, -1));
      const cocclResult_t r = done(cocclAllGather(dIn, dOut, cnt, cocclInt32, comm, st));
      if (r != cocclSuccess) return r;
      const std::vector<int32_t> out = b.get(dOut, cnt * un);
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < cnt; ++i)
          if (out[static_cast<size_t>(q) * cnt + i] != inputI(q, idx, i))
            return wrong("element " + std::to_string(i));
      return r;
    }
    case kAgCodec: {
      std::vector<float> in(cnt);
      std::vector<double> want(cnt * un);
      for (size_t i = 0; i < cnt; ++i) in[i] = inputF(rank, idx, i);
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < cnt; ++i) want[static_cast<size_t>(q) * cnt + i] = inputF(q, idx, i);
      float* dIn = b.put(in);
      float* dOut = b.put(std::vector<float>(cnt * un, 0.0f));
      const cocclResult_t r =
          done(cocclAllGatherCodec(dIn, dOut, cnt, cocclFloat32, codecs[c.codec], comm, st));
      if (r != cocclSuccess) return r;
      const double e = relL2(b.get(dOut, cnt * un), want);
      if (!(e < 0.1)) return wrong("relative L2 " + std::to_string(e));
      return r;
    }
    case kBcast: {
      std::vector<int32_t> buf(cnt, -1);
      if (rank == c.root)
        for (size_t i = 0; i < cnt; ++i) buf[i] = inputI(rank, idx, i);
      int32_t* d = b.put(buf);
      const cocclResult_t r = done(cocclBroadcast(d, d, cnt, cocclInt32, c.root, comm, st));
      if (r != cocclSuccess) return r;
      const std::vector<int32_t> out = b.get(d, cnt);
      for (size_t i = 0; i < cnt; ++i)
        if (out[i] != inputI(c.root, idx, i)) return wrong("element " + std::to_string(i));
      return r;
    }
    case kSendRecv: {  // a ring shift, grouped
      std::vector<int32_t> in(cnt);
      for (size_t i = 0; i < cnt; ++i) in[i] = inputI(rank, idx, i);
      int32_t* dIn = b.put(in);
      int32_t* dOut = b.put(std::vector<int32_t>(cnt, -1));
      const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
      cocclGroupStart();
      cocclSend(dIn, cnt, cocclInt32, next, comm, st);
      cocclRecv(dOut, cnt, cocclInt32, prev, comm, st);
      const cocclResult_t r = done(cocclGroupEnd());
      if (r != cocclSuccess) return r;
      const std::vector<int32_t> out = b.get(dOut, cnt);
      for (size_t i = 0; i < cnt; ++i)
        if (out[i] != inputI(prev, idx, i)) return wrong("element " + std::to_string(i));
      return r;
    }
    default:
      return cocclInternalError;
  }
}

// The call a survivor makes when all of the plan succeeded: an AllReduce that needs the dead
// rank. Its outcome.
cocclResult_t runFinalCall(cocclComm_t comm, FaultMemory& mem) {
  CallBuffers b(mem);
  int32_t* d = b.put(std::vector<int32_t>(16, 1));
  const cocclResult_t r = cocclAllReduce(d, d, 16, cocclInt32, cocclSum, comm, mem.stream());
  return r != cocclSuccess ? r : mem.complete(comm);
}

// What a rank writes into its result file (one line, parsed by the parent).
struct Report {
  int rank = -1;
  int firstErr = 0;   // result of the first failed call (0: none failed)
  int errCall = -1;   // its index (kCalls: the final check)
  int64_t errNs = 0;  // when it returned
  int async = 0;      // cocclCommGetAsyncError afterwards
  int after = 0;      // a further call's result
  int closeKind = 0;  // 0 abort, 1 destroy
  int closeRes = -1;
  int64_t closeMs = -1;
  int64_t killNs = 0;  // victim only: when it killed itself
};

void writeReport(const std::string& path, const Report& r, const std::string& msg) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "%d %d %d %" PRId64 " %d %d %d %d %" PRId64 " %" PRId64 "\n%s\n", r.rank,
               r.firstErr, r.errCall, r.errNs, r.async, r.after, r.closeKind, r.closeRes, r.closeMs,
               r.killNs, msg.c_str());
  std::fclose(f);
}

bool readReport(const std::string& path, Report* r, std::string* msg) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return false;
  const int got = std::fscanf(f, "%d %d %d %" SCNd64 " %d %d %d %d %" SCNd64 " %" SCNd64, &r->rank,
                              &r->firstErr, &r->errCall, &r->errNs, &r->async, &r->after,
                              &r->closeKind, &r->closeRes, &r->closeMs, &r->killNs);
  char line[4096] = {0};
  if (std::fgetc(f) != EOF && std::fgets(line, sizeof(line), f)) *msg = line;
  while (!msg->empty() && msg->back() == '\n') msg->pop_back();
  std::fclose(f);
  return got == 10;
}

// The body of one rank (a forked child); ends with _exit.
[[noreturn]] void rankMain(const Plan& plan, int rank, int idFd, int* idOut,
                           const std::string& reportPath, const FaultRankSetup& setup) {
  setenv("COCCL_TIMEOUT_MS", std::to_string(kTimeoutMs).c_str(), 1);
  setenv("COCCL_CODEC", "fp8_ash_ds", 1);
  setenv("COCCL_COMPRESS_MIN_BYTES", "4096", 1);
  setenv("COCCL_CHUNK_BYTES", "65536", 1);
  if (setup.beforeInit) setup.beforeInit(rank);
  cocclUniqueId id;
  if (rank == 0) {
    if (cocclGetUniqueId(&id) != cocclSuccess) _exit(10);
    for (int q = 1; q < plan.nranks; ++q)
      if (write(idOut[q], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) _exit(11);
  } else if (read(idFd, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) {
    _exit(12);
  }
  cocclComm_t comm = nullptr;
  if (cocclCommInitRank(&comm, plan.nranks, id, rank) != cocclSuccess) {
    std::printf("rank %d: init failed: %s\n", rank, cocclGetLastError(nullptr));
    _exit(13);
  }
  cocclCodec_t codecs[2] = {nullptr, nullptr};
  if (cocclCodecCreate("int8", &codecs[0]) != cocclSuccess ||
      cocclCodecCreate("fp8_ash_ds:block=64", &codecs[1]) != cocclSuccess)
    _exit(14);
  std::unique_ptr<FaultMemory> mem = setup.memory();
  if (!mem) _exit(15);
  Report rep;
  rep.rank = rank;
  std::string msg;
  for (int i = 0; i < kCalls; ++i) {
    if (rank == plan.victim && i == plan.killCall) {
      std::thread([&plan, reportPath] {
        std::this_thread::sleep_for(std::chrono::microseconds(plan.killDelayUs));
        Report v;
        v.rank = plan.victim;
        v.killNs = monoNs();
        writeReport(reportPath, v, "killed");
        kill(getpid(), SIGKILL);
      }).detach();
    }
    std::string why;
    const cocclResult_t r = runCall(plan, i, rank, comm, codecs, *mem, &why);
    if (r != cocclSuccess) {
      rep.firstErr = r;
      rep.errCall = i;
      rep.errNs = monoNs();
      msg = why.empty() ? cocclGetLastError(comm) : why;
      break;
    }
  }
  if (rank == plan.victim)
    for (;;) pause();     // its killer fires
  if (rep.errCall < 0) {  // every call succeeded: one more, which needs the dead rank
    const cocclResult_t r = runFinalCall(comm, *mem);
    rep.firstErr = r;
    rep.errCall = kCalls;
    rep.errNs = monoNs();
    msg = r == cocclSuccess ? "the final AllReduce succeeded" : cocclGetLastError(comm);
  }
  cocclResult_t async = cocclSuccess;
  cocclCommGetAsyncError(comm, &async);
  rep.async = async;
  std::vector<float> y(16, 1.0f);
  {
    CallBuffers b(*mem);
    float* d = b.put(y);
    rep.after = cocclAllReduce(d, d, y.size(), cocclFloat32, cocclSum, comm, mem->stream());
  }
  // A device error arrives asynchronously, without a message of its own: the later call's
  // ("communicator is broken by an earlier error (...)") names it.
  if (msg.empty()) msg = cocclGetLastError(comm);
  mem.reset();
  rep.closeKind = static_cast<int>((plan.seed + static_cast<uint64_t>(rank)) % 2);
  const int64_t t0 = monoNs();
  rep.closeRes = rep.closeKind == 0 ? cocclCommAbort(comm) : cocclCommDestroy(comm);
  rep.closeMs = (monoNs() - t0) / 1000000;
  cocclCodecDestroy(codecs[0]);
  cocclCodecDestroy(codecs[1]);
  for (auto& ch : msg)
    if (ch == '\n') ch = ' ';
  writeReport(reportPath, rep, msg);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(0);
}

}  // namespace

void runFaultSeed(uint64_t seed, int nranks, const FaultRankSetup& setup) {
  ASSERT_TRUE(nranks >= 2 && nranks <= kMaxRanks) << nranks;
  const Plan plan = makePlan(seed, nranks);
  std::printf("fault injection seed %" PRIu64
              ", %d ranks: rank %d killed %d us into call %d (%s)\n",
              seed, nranks, plan.victim, plan.killDelayUs, plan.killCall,
              kindName(plan.calls[static_cast<size_t>(plan.killCall)].kind));
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  char dirTmpl[] = "/tmp/coccl_fault_XXXXXX";
  ASSERT_NE(mkdtemp(dirTmpl), nullptr);
  const std::string dir = dirTmpl;
  becomeSubreaper();
  const std::set<std::string> shmBefore = devShmEntries();

  const int n = plan.nranks;
  int pipes[kMaxRanks][2];
  int idOut[kMaxRanks];
  for (int q = 0; q < kMaxRanks; ++q) idOut[q] = -1;
  for (int q = 1; q < n; ++q) {
    ASSERT_EQ(pipe(pipes[q]), 0);
    idOut[q] = pipes[q][1];
  }
  std::vector<Child> kids;
  for (int r = 0; r < n; ++r) {
    const std::string base = dir + "/rank" + std::to_string(r);
    kids.push_back(forkChild(base + ".out", [&, r, base] {
      for (int q = 1; q < n; ++q) {
        if (q != r) close(pipes[q][0]);
        if (r != 0) close(pipes[q][1]);
      }
      rankMain(plan, r, r ? pipes[r][0] : -1, idOut, base + ".report", setup);
    }));
    ASSERT_GT(kids.back().pid, 0);
  }
  for (int q = 1; q < n; ++q) {
    close(pipes[q][0]);
    close(pipes[q][1]);
  }
  std::vector<int> hung;
  waitChildren(kids, setup.hangLimitMs, &hung);
  for (int r : hung)
    ADD_FAILURE() << "rank " << r << " hung: killed after " << setup.hangLimitMs << " ms";

  Report victim;
  std::string vmsg;
  const bool victimReported =
      readReport(dir + "/rank" + std::to_string(plan.victim) + ".report", &victim, &vmsg);
  for (int r = 0; r < n; ++r) {
    const Child& k = kids[static_cast<size_t>(r)];
    const std::vector<std::string> out = readLines(k.outPath);
    std::string text;
    for (const auto& l : out) text += "    | " + l + "\n";
    if (r == plan.victim) {
      EXPECT_TRUE(WIFSIGNALED(k.status) && WTERMSIG(k.status) == SIGKILL)
          << "the victim (rank " << r << ") did not die by its SIGKILL: status " << k.status << "\n"
          << text;
      EXPECT_TRUE(victimReported) << "the victim did not record its death";
      continue;
    }
    EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0)
        << "survivor rank " << r << " crashed or failed: status " << k.status << "\n"
        << text;
    Report rep;
    std::string msg;
    if (!readReport(dir + "/rank" + std::to_string(r) + ".report", &rep, &msg)) {
      ADD_FAILURE() << "survivor rank " << r << " wrote no report\n" << text;
      continue;
    }
    const double afterDeathMs = victimReported ? (rep.errNs - victim.killNs) / 1e6 : 0;
    std::printf("  rank %d: %s at call %d, %.0f ms after the death: %s; then %s %s in %" PRId64
                " ms; %zu output lines\n",
                r, cocclGetErrorString(static_cast<cocclResult_t>(rep.firstErr)), rep.errCall,
                afterDeathMs, msg.c_str(), rep.closeKind ? "destroy" : "abort",
                cocclGetErrorString(static_cast<cocclResult_t>(rep.closeRes)), rep.closeMs,
                out.size());
    if (!out.empty()) std::printf("%s", text.c_str());
    const bool anError = rep.firstErr == cocclRemoteError || rep.firstErr == cocclSystemError ||
                         rep.firstErr == cocclInvalidUsage;
    EXPECT_TRUE(anError) << "survivor rank " << r << " got "
                         << cocclGetErrorString(static_cast<cocclResult_t>(rep.firstErr))
                         << " at call " << rep.errCall << ": " << msg;
    if (victimReported) {
      EXPECT_GE(rep.errNs, victim.killNs)
          << "survivor rank " << r << " failed before the victim died: " << msg;
      EXPECT_LT(afterDeathMs, kTimeoutMs + setup.noticeSlackMs)
          << "survivor rank " << r << " noticed the death only after " << afterDeathMs << " ms";
    }
    EXPECT_NE(rep.async, cocclSuccess) << "rank " << r << ": no async error after the failure";
    EXPECT_EQ(rep.after, cocclInvalidUsage) << "rank " << r << ": a call after the failure";
    EXPECT_EQ(rep.closeRes, cocclSuccess) << "rank " << r << ": close failed";
    EXPECT_LT(rep.closeMs, 5000) << "rank " << r << ": close took " << rep.closeMs << " ms";
    EXPECT_LE(out.size(), static_cast<size_t>(kMaxOutputLines))
        << "survivor rank " << r << " printed " << out.size() << " lines:\n"
        << text;
    for (const auto& l : out)
      for (const char* mark : kUcxMarks)
        EXPECT_EQ(l.find(mark), std::string::npos)
            << "survivor rank " << r << " printed UCX's teardown noise: " << l;
  }
  std::vector<pid_t> pids;
  for (const auto& k : kids) pids.push_back(k.pid);
  const std::vector<pid_t> left = leftoverDescendants();
  EXPECT_TRUE(left.empty()) << left.size() << " descendant processes left behind";
  for (pid_t p : left) kill(p, SIGKILL);
  for (const auto& s : leakedSysvShm(pids)) ADD_FAILURE() << "SysV segment left: " << s;
  for (const auto& s : leakedDevShm(shmBefore, 500)) ADD_FAILURE() << "/dev/shm/" << s << " left";
  if (!::testing::Test::HasFailure()) {
    for (int r = 0; r < n; ++r) {
      const std::string base = dir + "/rank" + std::to_string(r);
      std::remove((base + ".out").c_str());
      std::remove((base + ".report").c_str());
    }
    rmdir(dir.c_str());
  } else {
    std::printf("rank outputs kept in %s (replay: FAULT_SEED=%" PRIu64 " FAULT_RANKS=%d)\n",
                dir.c_str(), seed, nranks);
  }
}

void runFaultSeedFromEnvironment(const FaultRankSetup& setup) {
  const char* s = std::getenv("FAULT_SEED");
  if (!s) GTEST_SKIP() << "set FAULT_SEED=<n> (and FAULT_RANKS) to replay a seed";
  const char* n = std::getenv("FAULT_RANKS");
  runFaultSeed(std::strtoull(s, nullptr, 0), n ? std::atoi(n) : 4, setup);
}

}  // namespace coccl::test
