// The header every host Send and every host Recv sends its peer before any payload moves
// (p2p.cc), and the check both ends run on the pair of headers.
//
// Protocol of one message from rank S to rank R (both ends post their part of a group at once):
//   1. S sends its header (role Sender: count, type, codec, payload bytes) on the S->R data
//      channel; R sends its own header (role Receiver: what its Recv expects) on the R->S
//      reverse channel. Every header goes out before either end waits, so exchange patterns in
//      a group (rings, all-to-all) cannot deadlock.
//   2. Both ends hold both headers and run p2pMismatch() on them: the same inputs, so the same
//      verdict and the same message on both ends. Agreed: S sends the payload (the input bytes,
//      or the codec's encodedBytes(count) of it), R receives it (straight into recvbuff when
//      exact, into a staging buffer that it then decodes into recvbuff when compressed).
//      Disagreed: no payload reaches recvbuff, the tag sequences stay in step, the communicator
//      stays usable and both ends report cocclInvalidUsage with the message.
//   Small payloads (at most kP2PEagerBytes, p2pEager) do not wait for step 2: S sends the
//   payload right behind its header, and R, which learns its size from S's header, receives it
//   after the check either into recvbuff / staging (agreed) or into a pool buffer that it drops
//   (disagreed: at most kP2PEagerBytes, sized by the header, never recvbuff). Larger payloads
//   leave only once S holds R's header, so a payload no one will take is never sent.
// The cost: one 128-byte message each way; large payloads leave one one-way latency later (S
// waits for R's header, which R sent when it posted its Recv).
//
// Layout (128 bytes, little-endian, as the hosts store it; the wire carries the struct bytes):
//   magic u32 'CSR1' | version u16 | role u16 | seq u64 (the pair's message number on the S->R
//   channel) | count u64 | dtype u32 | codecFormat u32 (the codec's formatVersion, 0 exact) |
//   codecHash u64 (FNV-1a of the canonical spec, 0 exact) | payloadBytes u64 |
//   codec char[80] (the canonical spec, NUL-terminated, cut to 79 characters; "none" exact).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "coccl.h"

namespace coccl {

class Codec;

constexpr uint32_t kP2PMagic = 0x31525343u;  // "CSR1"
constexpr uint16_t kP2PVersion = 1;
enum class P2PRole : uint16_t { Sender = 0, Receiver = 1 };

struct P2PHeader {
  uint32_t magic = kP2PMagic;
  uint16_t version = kP2PVersion;
  uint16_t role = 0;
  uint64_t seq = 0;
  uint64_t count = 0;
  uint32_t dtype = 0;
  uint32_t codecFormat = 0;
  uint64_t codecHash = 0;
  uint64_t payloadBytes = 0;
  char codec[80] = {};
};
static_assert(sizeof(P2PHeader) == 128, "the Send/Recv header is 128 bytes on the wire");
constexpr size_t kP2PHeaderBytes = sizeof(P2PHeader);
// Payloads up to this size go out with the header, before the check (same rule at both ends).
constexpr size_t kP2PEagerBytes = 65536;
constexpr bool p2pEager(uint64_t payloadBytes) {
  return payloadBytes > 0 && payloadBytes <= kP2PEagerBytes;
}

// Whether `h` is a header of this protocol version in role `role` (magic, version, role).
bool isP2PHeader(const P2PHeader& h, P2PRole role);

// This end's header for a message of `count` elements of `dt` through `codec` (nullptr: exact).
P2PHeader makeP2PHeader(P2PRole role, uint64_t seq, size_t count, cocclDataType_t dt,
                        const Codec* codec);

// "" when the sender's and the receiver's headers agree; else one message naming every field
// that differs with both values ("count: sender 1000, receiver 999"). A header that is not
// one (wrong magic, version or role: another coccl build?) is reported as such. `src`, `dst`:
// the ranks, for the message.
std::string p2pMismatch(const P2PHeader& sender, const P2PHeader& receiver, int src, int dst);

// What one rank sends to and receives from one peer in one group of device Send/Recv (the
// CUDA IPC P2P kernel's pair agreement, cuda_ipc/dev_types.h P2PPairWord, words 1-6 in this
// order): message counts, total bytes, FNV-1a over the messages' byte counts in posting order.
struct P2PPairCounts {
  uint64_t sends, sendBytes, sendHash, recvs, recvBytes, recvHash;
};

// "" when `mine` (rank myRank's, with `peer`) and `theirs` (peer's, with myRank) match: each
// side's sends are the other's receives. Else the message both ends print, naming each
// direction that differs with both sides' counts and bytes; peer == myRank compares a rank's
// sends to itself with its receives from itself.
std::string p2pPairMismatch(const P2PPairCounts& mine, int myRank, const P2PPairCounts& theirs,
                            int peer);

}  // namespace coccl
