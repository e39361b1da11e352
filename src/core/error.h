// Internal error type. Every layer below the C boundary reports failure by throwing
// coccl::Error; src/api/ is the only place that catches it and turns it into a cocclResult_t
// (and the message into cocclGetLastError()).
#pragma once

#include <cstdarg>
#include <stdexcept>
#include <string>

#include "coccl.h"

namespace coccl {

class Error : public std::runtime_error {
 public:
  Error(cocclResult_t code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  cocclResult_t code() const { return code_; }

 private:
  cocclResult_t code_;
};

// printf-style formatting into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string vformat(const char* fmt, va_list ap);

// NCCL-style description of a result code (what cocclGetErrorString returns).
const char* resultString(cocclResult_t r);

[[noreturn]] void throwError(cocclResult_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

}  // namespace coccl

#define COCCL_THROW(code, ...) ::coccl::throwError((code), __VA_ARGS__)
#define COCCL_CHECK_ARG(cond, ...)                                         \
  do {                                                                     \
    if (!(cond)) ::coccl::throwError(cocclInvalidArgument, __VA_ARGS__);   \
  } while (0)
#define COCCL_CHECK_USAGE(cond, ...)                                       \
  do {                                                                     \
    if (!(cond)) ::coccl::throwError(cocclInvalidUsage, __VA_ARGS__);      \
  } while (0)
#define COCCL_CHECK_INTERNAL(cond, ...)                                    \
  do {                                                                     \
    if (!(cond)) ::coccl::throwError(cocclInternalError, __VA_ARGS__);     \
  } while (0)
