// Environment, logging and errors of the shim; ncclGetErrorString, ncclGetLastError,
// ncclGetVersion, ncclResetDebugInit and the marker that tells the loader a library is a shim.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mutex>

#include "shim.h"

namespace shim {
namespace {

Env makeEnv() {
  Env e;
  // COCCL_SHIM_NO_NCCL as coccl's table reads it (the loader, shared with coccl, obeys it too).
  char no[32] = "";
  e.noNccl = cocclGetEnvValue("COCCL_SHIM_NO_NCCL", no, sizeof(no), nullptr) == cocclSuccess &&
             strcmp(no, "0") != 0;
  // The log level coccl itself uses (COCCL_DEBUG, in the spelling of coccl's table).
  char level[32] = "";
  if (cocclGetEnvValue("COCCL_DEBUG", level, sizeof(level), nullptr) == cocclSuccess)
    e.debug = strcmp(level, "WARN") == 0    ? 1
              : strcmp(level, "INFO") == 0  ? 2
              : strcmp(level, "TRACE") == 0 ? 3
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
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO and COCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO and COCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN and COCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN and COCCL_DEBUG=WARN for details)";
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
