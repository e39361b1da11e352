// Pure checks of what the bootstrap's sockets received (core/bootstrap_wire.h).
#include "core/bootstrap_wire.h"

#include <cstring>

#include "core/error.h"

namespace coccl {

WireProgress checkWirePrefix(const void* msg, size_t got, size_t size, uint64_t magic) {
  if (got >= sizeof(uint64_t)) {
    uint64_t m;
    std::memcpy(&m, msg, sizeof(m));
    if (m != magic) return WireProgress::BadMagic;
  }
  return got >= size ? WireProgress::Complete : WireProgress::NeedMore;
}

RootStatus checkRegistration(const RootRegistration& reg, int nranks,
                             const std::function<bool(int)>& registered) {
  const int32_t r = reg.rank, n = reg.nranks;
  if (n < 1 || r < 0 || r >= n) return kRootBadRank;
  if (nranks >= 0 && n != nranks) return kRootNranksMismatch;
  if (nranks >= 0 && registered(r)) return kRootDuplicateRank;
  return kRootOk;
}

bool checkPeerHello(const PeerHello& hello, int self, int nranks,
                    const std::function<bool(int)>& connected) {
  const int32_t r = hello.rank;
  return hello.nranks == nranks && r >= 0 && r < nranks && r != self && !connected(r);
}

FrameRoute routeFrame(uint64_t tag, uint64_t bytes, const FrameWant* want) {
  if (want && tag == want->tag) return bytes == want->bytes ? FrameRoute::ToUser
                                                             : FrameRoute::SizeMismatch;
  return FrameRoute::Queue;
}

void checkRootReply(const RootReply& rep, uint64_t magic, int rank, int nranks,
                    const std::string& rootStr) {
  COCCL_CHECK_INTERNAL(rep.magic == magic, "the root at %s answered with a wrong magic",
                       rootStr.c_str());
  if (rep.status != kRootOk)
    COCCL_THROW(cocclInvalidArgument,
                "the root at %s rejected rank %d of %d: %s (its communicator has %d ranks)",
                rootStr.c_str(), rank, nranks,
                rep.status == kRootNranksMismatch  ? "nranks differs from the other ranks'"
                : rep.status == kRootDuplicateRank ? "another process registered this rank"
                                                   : "rank or nranks out of range",
                rep.nranks);
  COCCL_CHECK_INTERNAL(rep.nranks == nranks, "the root at %s sent a table of %d ranks",
                       rootStr.c_str(), rep.nranks);
}

}  // namespace coccl
