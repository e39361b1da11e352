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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

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

// ---- Pure checks of received bytes (no I/O; bootstrap.cc, bootstrap_p2p.cc and
// bootstrap_root.cc call them on what a socket delivered; tests/fuzz/fuzz_bootstrap_wire.cc
// fuzzes them) --------------------------------------------------------------------------------

// Where a message of `size` bytes that starts with a u64 magic stands after its first `got`
// bytes arrived into `msg` (the bytes beyond `got` are not read): NeedMore (got < size, the
// magic so far is right or incomplete), BadMagic (the first 8 bytes are there and differ from
// `magic`: drop the connection at once, whatever follows) or Complete.
enum class WireProgress { NeedMore, BadMagic, Complete };
WireProgress checkWirePrefix(const void* msg, size_t got, size_t size, uint64_t magic);

// The root's verdict on a complete registration with the right magic: kRootOk, or the status
// to reject it with. `nranks` is the communicator's (-1 before the first registration);
// `registered(r)` (r in [0, nranks)) says whether rank r already registered.
RootStatus checkRegistration(const RootRegistration& reg, int nranks,
                             const std::function<bool(int)>& registered);

// Whether a complete hello with the right magic may become rank `self`'s connection from
// hello.rank (of a communicator of `nranks`); `connected(r)` says whether r already has one.
bool checkPeerHello(const PeerHello& hello, int self, int nranks,
                    const std::function<bool(int)>& connected);

// What a rank does with a frame header [tag][bytes] from a peer while `want` (may be null:
// nothing wanted from this peer) waits: deliver into the caller's buffer, queue it (its buffer
// grows with the bytes that arrive, never sized by the length field alone), or fail the receive:
// the wanted tag with another size (the frame is still read and queued).
enum class FrameRoute { ToUser, Queue, SizeMismatch };
struct FrameWant {
  uint64_t tag;
  uint64_t bytes;
};
FrameRoute routeFrame(uint64_t tag, uint64_t bytes, const FrameWant* want);

// The rank's check of the root's answer (before the table): throws Error naming the problem
// (cocclInternalError: wrong magic or table size; cocclInvalidArgument: rejected).
void checkRootReply(const RootReply& rep, uint64_t magic, int rank, int nranks,
                    const std::string& rootStr);

}  // namespace coccl
