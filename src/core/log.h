// Logging in NCCL's line format:  host:pid:tid [rank] COCCL INFO message
// Controlled by COCCL_DEBUG=VERSION|WARN|INFO|TRACE and COCCL_DEBUG_SUBSYS=INIT,COLL,...
// (a leading ^ excludes: "^NET"), COCCL_DEBUG_FILE=path (%h host, %p pid expanded).
// The message of the last WARN is what cocclGetLastError() returns.
#pragma once

#include <cstdint>
#include <string>

namespace coccl {

enum class LogLevel : int { None = 0, Version = 1, Warn = 2, Info = 3, Trace = 4 };

enum LogSubsys : uint32_t {
  kLogInit = 1u << 0,
  kLogColl = 1u << 1,
  kLogCodec = 1u << 2,
  kLogNet = 1u << 3,
  kLogBootstrap = 1u << 4,
  kLogTransport = 1u << 5,
  kLogEnv = 1u << 6,
  kLogAlloc = 1u << 7,
  kLogCuda = 1u << 8,
  kLogAll = 0xffffffffu,
};

// A COCCL_DEBUG value (VERSION, WARN, INFO, TRACE or NONE, any case): false for another one
// (logging then stays off; env() warns). Logging reads COCCL_DEBUG* itself, before env().
bool parseLogLevel(const char* s, LogLevel* level);
// The names of a COCCL_DEBUG_SUBSYS list ("INIT,COLL" or "^NET") that name no subsystem,
// comma-separated; "" when every name is known (empty names are ignored).
std::string unknownLogSubsys(const std::string& list);

bool logEnabled(LogLevel level, uint32_t subsys);
void logMessage(LogLevel level, uint32_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// Rank shown in log lines from the calling thread (-1: unknown).
void setLogRank(int rank);

// Last error/warning text for cocclGetLastError (process-wide, thread-safe).
void setLastError(const std::string& msg);
const char* lastError();

}  // namespace coccl

#define COCCL_VERSION_LOG(...)                                                             \
  do {                                                                                     \
    if (::coccl::logEnabled(::coccl::LogLevel::Version, ::coccl::kLogAll))                 \
      ::coccl::logMessage(::coccl::LogLevel::Version, ::coccl::kLogAll, __FILE__, __LINE__, \
                          __VA_ARGS__);                                                    \
  } while (0)
#define COCCL_WARN(...) \
  ::coccl::logMessage(::coccl::LogLevel::Warn, ::coccl::kLogAll, __FILE__, __LINE__, __VA_ARGS__)
#define COCCL_INFO(subsys, ...)                                                          \
  do {                                                                                   \
    if (::coccl::logEnabled(::coccl::LogLevel::Info, (subsys)))                          \
      ::coccl::logMessage(::coccl::LogLevel::Info, (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define COCCL_TRACE(subsys, ...)                                                         \
  do {                                                                                   \
    if (::coccl::logEnabled(::coccl::LogLevel::Trace, (subsys)))                         \
      ::coccl::logMessage(::coccl::LogLevel::Trace, (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
