// Wire formats of the bootstrap (private to bootstrap.cc and bootstrap_root.cc; tests may use
// them to forge bad messages). All fields are in host byte order: every rank of a communicator
// runs on the same architecture.
//
//   rank -> root   RootRegistration
//   root -> rank   RootReply, then (status kRootOk only) nranks PeerInfo, then the root closes
//   rank i -> j    PeerHello once per directed connection, then frames:
//                  [tag u64][bytes u64][payload: bytes]
//
// Tags with kBootstrapInternalTagBit set belong to the bootstrap itself (allGather/barrier);
// Bootstrap::send/recv reject them from callers.
#pragma once

#include <cstdint>

#include "core/socket.h"

namespace coccl {

constexpr uint64_t kBootstrapInternalTagBit = 1ull << 63;

// Written by a rank that leaves cleanly (destroyed, not aborted) into every connection a peer
// opened to it. The peer, which never otherwise reads from its outgoing connections, takes
// that byte followed by EOF as a clean departure rather than a death (Bootstrap::checkPeers).
constexpr unsigned char kGoodbyeByte = 0x47;

struct PeerInfo {
  SocketAddress addr;  // the rank's listening socket
  char host[64];       // hostname, NUL-terminated (for messages)
};

struct RootRegistration {
  uint64_t magic;
  int32_t rank;
  int32_t nranks;
  PeerInfo info;
};

enum RootStatus : int32_t {
  kRootOk = 0,
  kRootBadRank = 1,         // rank outside [0, nranks) or nranks < 1
  kRootNranksMismatch = 2,  // nranks differs from the first registration's
  kRootDuplicateRank = 3,   // this rank already registered
};

struct RootReply {
  uint64_t magic;
  int32_t status;  // RootStatus
  int32_t nranks;  // the communicator's nranks (the first registration's)
};

struct PeerHello {
  uint64_t magic;
  int32_t rank;
  int32_t nranks;
};

}  // namespace coccl
