// Environment, logging and errors of the shim; ncclGetErrorString, ncclGetLastError,
// ncclGetVersion, ncclResetDebugInit and the marker that tells the loader a library is a shim.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <mutex>

#include "shim.h"

namespace shim {
namespace {

std::string getStr(const char* name) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string();
}

// A byte count as coccl reads its variables: an integer with an optional binary K/M/G suffix.
bool parseBytes(const std::string& s, long long* out) {
  char* end = nullptr;
  errno = 0;
  long long v = strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || v < 0) return false;
  const int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20
                    : *end == 'g' || *end == 'G' ? 30 : 0;
  if (shift) ++end;
  if (*end != '\0' || v > (LLONG_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

bool compresses(const std::string& perColl, const std::string& def) {
  const std::string& spec = perColl.empty() ? def : perColl;
  return !spec.empty() && spec != "none";
}

Env makeEnv() {
  Env e;
  std::string no = getStr("COCCL_SHIM_NO_NCCL");
  e.noNccl = !no.empty() && no != "0";
  e.codec = getStr("COCCL_CODEC");
  e.codecAllReduce = getStr("COCCL_CODEC_ALLREDUCE");
  e.codecReduceScatter = getStr("COCCL_CODEC_REDUCESCATTER");
  e.codecAllGather = getStr("COCCL_CODEC_ALLGATHER");
  std::string mb = getStr("COCCL_COMPRESS_MIN_BYTES");
  if (!mb.empty()) {
    long long v = 0;
    if (parseBytes(mb, &v))
      e.compressMinBytes = v;
    else
      fprintf(stderr, "coccl shim: COCCL_COMPRESS_MIN_BYTES=%s is not a byte count (digits, "
              "optionally K, M or G); using %lld\n", mb.c_str(), e.compressMinBytes);
  }
  e.compressAllReduce = compresses(e.codecAllReduce, e.codec);
  e.compressReduceScatter = compresses(e.codecReduceScatter, e.codec);
  e.compressAllGather = compresses(e.codecAllGather, e.codec);
  std::string d = getStr("COCCL_DEBUG");
  e.debug = d.empty()                       ? 0
            : strcasecmp(d.c_str(), "WARN") == 0 ? 1
            : strcasecmp(d.c_str(), "INFO") == 0 ? 2
            : strcasecmp(d.c_str(), "TRACE") == 0 ? 3
                                                  : 0;
  return e;
}

std::mutex g_errMutex;
std::string g_lastError;
std::atomic<int> g_errSource{0};  // 0: none, 1: the shim (and coccl), 2: the real NCCL

std::string vformat(const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

}  // namespace

const Env& env() {
  static const Env e = makeEnv();
  return e;
}

void logf(int level, const char* fmt, ...) {
  if (env().debug < level) return;
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  fprintf(stderr, "%s:%d [coccl-shim] %s %s\n", host, static_cast<int>(getpid()),
          level <= 1 ? "WARN" : level == 2 ? "INFO" : "TRACE", msg.c_str());
}

ncclResult_t fail(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  {
    std::lock_guard<std::mutex> lock(g_errMutex);
    g_lastError = msg;
    g_errSource = 1;
  }
  logf(1, "%s", msg.c_str());
  return code;
}

ncclResult_t fromCoccl(cocclResult_t r, const char* fn) {
  if (r == cocclSuccess || r == cocclInProgress) return static_cast<ncclResult_t>(r);
  return fail(static_cast<ncclResult_t>(r), "%s (coccl): %s", fn, cocclGetLastError(nullptr));
}

ncclResult_t fromReal(ncclResult_t r) {
  if (r != ncclSuccess && r != ncclInProgress) g_errSource = 2;
  return r;
}

}  // namespace shim

using namespace shim;

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

// Like NCCL's, process-wide: `comm` is not looked at (it may be stale or NULL after a failure).
NCCL_API(const char*, ncclGetLastError, ncclComm_t) {
  if (g_errSource.load() == 2) {
    const Real* r = real();
    if (r && r->ncclGetLastError) {
      const char* m = r->ncclGetLastError(nullptr);
      return m ? m : "";
    }
  }
  thread_local std::string copy;
  std::lock_guard<std::mutex> lock(g_errMutex);
  copy = g_lastError;
  return copy.c_str();
}

// The forwarded NCCL's version (PyTorch and nccl-tests pick code paths by it); the version of
// the ABI the shim implements when there is none.
NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  const Real* r = real();
  *version = r && r->version ? r->version : NCCL_VERSION_CODE;
  return ncclSuccess;
}

NCCL_API(void, ncclResetDebugInit, void) {
  const Real* r = real();
  if (r && r->ncclResetDebugInit) r->ncclResetDebugInit();
}

// Exported by NCCL 2.28 too (without a pncclX twin).
SHIM_EXPORT void ncclResetDebugInitInternal(void) { pncclResetDebugInit(); }

// Marks this library as the coccl shim: the loader never takes a library that exports it for
// the real NCCL (which would forward every call to itself).
SHIM_EXPORT const char* ncclCocclShimVersion(void) {
  return "coccl libnccl.so.2 shim " COCCL_SHIM_VERSION_STRING;
}
