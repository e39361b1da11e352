#include "api/api_internal.h"

namespace coccl {

cocclResult_t reportError(cocclComm* comm, const char* fn, cocclResult_t code,
                          const std::string& msg) {
  std::string full = std::string(fn) + ": " + msg;
  COCCL_WARN("%s", full.c_str());
  setLastError(full);
  if (comm && isCommunicationError(code) && acquireComm(comm)) {  // not freed meanwhile
    const CommRelease held{comm};
    if (comm->impl) comm->impl->fail(code, full);
  }
  return code;
}

Communicator& usableComm(cocclComm* comm) {
  checkLiveComm(comm);
  COCCL_CHECK_ARG(comm->impl != nullptr, "comm is not initialised");
  comm->impl->checkUsable();
  return *comm->impl;
}

}  // namespace coccl

extern "C" {

COCCL_API const char* cocclGetErrorString(cocclResult_t r) { return coccl::resultString(r); }

COCCL_API const char* cocclGetLastError(cocclComm_t) { return coccl::lastError(); }

COCCL_API cocclResult_t cocclGetVersion(int* version) {
  if (!version) return coccl::reportError(nullptr, "cocclGetVersion", cocclInvalidArgument, "version is NULL");
  *version = COCCL_VERSION_CODE;
  return cocclSuccess;
}

}  // extern "C"
