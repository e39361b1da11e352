#include "core/error.h"

#include <cstdio>
#include <vector>

namespace coccl {

std::string vformat(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = vsnprintf(small, sizeof(small), fmt, ap2);
  va_end(ap2);
  if (n < 0) return fmt;
  if (static_cast<size_t>(n) < sizeof(small)) return std::string(small, static_cast<size_t>(n));
  std::vector<char> big(static_cast<size_t>(n) + 1);
  vsnprintf(big.data(), big.size(), fmt, ap);
  return std::string(big.data(), static_cast<size_t>(n));
}

std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

const char* resultString(cocclResult_t r) {
  switch (r) {
    case cocclSuccess: return "no error";
    case cocclUnhandledCudaError: return "unhandled cuda error (run with COCCL_DEBUG=INFO for details)";
    case cocclSystemError: return "unhandled system error (run with COCCL_DEBUG=INFO for details)";
    case cocclInternalError: return "internal error - please report this issue to the coccl developers";
    case cocclInvalidArgument: return "invalid argument (run with COCCL_DEBUG=WARN for details)";
    case cocclInvalidUsage: return "invalid usage (run with COCCL_DEBUG=WARN for details)";
    case cocclRemoteError: return "remote process exited or there was a network error";
    case cocclInProgress: return "operation in progress";
    default: return "unknown result code";
  }
}

void throwError(cocclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  throw Error(code, s);
}

}  // namespace coccl
