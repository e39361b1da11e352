// The host collectives' per-call agreement (descriptor and rules in collectives/call_desc.h):
// an all-to-all of 128-byte descriptors on the descriptor tag, then the same comparison on
// every rank. An algorithm may send its first small data messages right behind the
// descriptors (start() announces their sizes in eagerBytes), so that the check costs no extra
// round trip: those messages wait in the receiver's transport until the check passes and the
// algorithm posts its receives; on a mismatch finish() receives them into pool buffers and
// drops them, so nothing reaches recvbuff and the tag sequences stay in step.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/call_desc.h"
#include "transport/transport.h"

namespace coccl {

class HostExecutor;

// Data messages that may go out before the check: at most this many bytes each.
constexpr uint32_t kAgreeEagerBytes = 65536;

class CallAgreement {
 public:
  CallAgreement(HostExecutor& c, const CollRequest& r);
  // Posts this rank's descriptor to every peer and the receives of theirs. eagerTo[j]: bytes
  // (at most kAgreeEagerBytes) of the data message this rank sends to peer j right after, on
  // HostExecutor::agreeEagerTag() (a FIFO per pair like the descriptors; empty or 0: none).
  void start(const std::vector<uint32_t>& eagerTo = {});
  // Waits for every descriptor and compares them. On a mismatch: receives (and drops) the
  // eager messages the peers announced, waits for `mineEager` (this rank's eager sends), and
  // throws cocclInvalidUsage with the same message on every rank. Call it before taking the
  // call's tag (HostExecutor::nextCollectiveTag), so that a failed call takes none.
  void finish(std::vector<RequestPtr>* mineEager = nullptr);

 private:
  HostExecutor& c_;
  std::vector<CallDesc> in_, out_;  // received from / sent to each rank
  std::vector<RequestPtr> reqs_;
};

// start() and finish() with no eager data.
void agreeCall(HostExecutor& c, const CollRequest& r);

}  // namespace coccl
