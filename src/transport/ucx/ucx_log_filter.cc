#include "transport/ucx/ucx_log_filter.h"

#include <ucs/debug/log_def.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/log.h"

namespace coccl {
namespace {

thread_local bool t_inTeardown = false;
thread_local int t_hidden = 0;  // teardown warnings dropped in the current Teardown

bool contains(const char* s, const char* part) { return s && std::strstr(s, part); }

ucs_log_func_rc_t filterHandler(const char* file, unsigned /*line*/, const char* /*function*/,
                                ucs_log_level_t level,
                                const ucs_log_component_config_t* /*comp*/, const char* message,
                                va_list /*ap*/) {
  // errno is still the failed call's: UCX formats %m after the handlers ran.
  const int err = errno;
  if (level == UCS_LOG_LEVEL_WARN && t_inTeardown &&
      (contains(message, "was not returned to mpool") ||
       contains(message, "unexpected tag-receive descriptor"))) {
    ++t_hidden;
    return UCS_LOG_FUNC_RC_STOP;
  }
  if (level == UCS_LOG_LEVEL_ERROR && err == EINVAL && contains(file, "mm_sysv") &&
      contains(message, "shmat(")) {
    COCCL_INFO(kLogTransport,
               "UCX could not attach a peer's shared memory (shmat: EINVAL): the peer's process "
               "is gone");
    errno = err;
    return UCS_LOG_FUNC_RC_STOP;
  }
  errno = err;
  return UCS_LOG_FUNC_RC_CONTINUE;
}

// UCX's handler stack is a plain array without a lock: the push and the pop of this one
// handler happen under this mutex, the first live filter pushing and the last popping.
std::mutex g_mu;
int g_live = 0;

}  // namespace

UcxLogFilter::UcxLogFilter() : installed_(std::getenv("UCX_LOG_LEVEL") == nullptr) {
  if (!installed_) return;
  std::lock_guard<std::mutex> g(g_mu);
  if (g_live++ == 0) ucs_log_push_handler(filterHandler);
}

UcxLogFilter::~UcxLogFilter() {
  if (!installed_) return;
  std::lock_guard<std::mutex> g(g_mu);
  if (--g_live == 0) ucs_log_pop_handler();
}

UcxLogFilter::Teardown::Teardown() {
  t_inTeardown = true;
  t_hidden = 0;
}

UcxLogFilter::Teardown::~Teardown() {
  t_inTeardown = false;
  if (t_hidden > 0)
    COCCL_WARN("UCX: %d requests or unreceived messages of failed calls (a dead or aborted peer) "
               "were released with the worker at teardown (UCX's warning for each hidden; set "
               "UCX_LOG_LEVEL to see them)",
               t_hidden);
  t_hidden = 0;
}

}  // namespace coccl
