#include "collectives/p2p_header.h"

#include <algorithm>
#include <cstring>

#include "codecs/codec.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/hash.h"

namespace coccl {
namespace {

std::string typeText(uint32_t dt) {
  return dtypeValid(static_cast<int>(dt)) ? dtypeName(static_cast<cocclDataType_t>(dt))
                                          : format("type %u", dt);
}

// The codec as the message shows it: the spec (cut) and, when not exact, its format version.
std::string codecText(const P2PHeader& h) {
  std::string s(h.codec, strnlen(h.codec, sizeof(h.codec)));
  if (s.empty()) s = "?";
  if (h.codecHash) s += format("@%u", h.codecFormat);
  return s;
}

// Why `h` is not a header of role `role`, or "".
std::string notAHeader(const P2PHeader& h, P2PRole role, const char* who) {
  if (h.magic != kP2PMagic || h.version != kP2PVersion)
    return format(
        "the %s's Send/Recv header has magic 0x%08x version %u (expected 0x%08x "
        "version %u): do both ranks run the same coccl?",
        who, h.magic, static_cast<unsigned>(h.version), kP2PMagic,
        static_cast<unsigned>(kP2PVersion));
  if (h.role != static_cast<uint16_t>(role))
    return format("the %s's Send/Recv header has role %u (expected %u)", who,
                  static_cast<unsigned>(h.role), static_cast<unsigned>(role));
  return "";
}

}  // namespace

bool isP2PHeader(const P2PHeader& h, P2PRole role) {
  return h.magic == kP2PMagic && h.version == kP2PVersion && h.role == static_cast<uint16_t>(role);
}

P2PHeader makeP2PHeader(P2PRole role, uint64_t seq, size_t count, cocclDataType_t dt,
                        const Codec* codec) {
  P2PHeader h;
  h.role = static_cast<uint16_t>(role);
  h.seq = seq;
  h.count = count;
  h.dtype = static_cast<uint32_t>(dt);
  const std::string spec = codec ? codec->spec() : std::string("none");
  h.codecFormat = codec ? codec->formatVersion() : 0;
  h.codecHash = codec ? fnv1a64(spec) : 0;
  h.payloadBytes = codec ? codec->encodedBytes(count, dt) : count * dtypeSize(dt);
  std::memcpy(h.codec, spec.data(), std::min(spec.size(), sizeof(h.codec) - 1));
  return h;
}

std::string p2pMismatch(const P2PHeader& s, const P2PHeader& r, int src, int dst) {
  const std::string where = format("Send from rank %d to rank %d (message %llu)", src, dst,
                                   static_cast<unsigned long long>(s.seq));
  std::string bad = notAHeader(s, P2PRole::Sender, "sender");
  if (bad.empty()) bad = notAHeader(r, P2PRole::Receiver, "receiver");
  if (!bad.empty()) return where + ": " + bad;
  std::string diff;
  auto add = [&](const std::string& field) { diff += (diff.empty() ? "" : "; ") + field; };
  if (s.count != r.count)
    add(format("count: sender %llu, receiver %llu", static_cast<unsigned long long>(s.count),
               static_cast<unsigned long long>(r.count)));
  if (s.dtype != r.dtype)
    add(format("datatype: sender %s, receiver %s", typeText(s.dtype).c_str(),
               typeText(r.dtype).c_str()));
  if (s.codecHash != r.codecHash || s.codecFormat != r.codecFormat ||
      std::memcmp(s.codec, r.codec, sizeof(s.codec)) != 0)
    add(format("codec: sender %s, receiver %s", codecText(s).c_str(), codecText(r).c_str()));
  if (diff.empty() && s.payloadBytes != r.payloadBytes)
    add(format("payload bytes: sender %llu, receiver %llu",
               static_cast<unsigned long long>(s.payloadBytes),
               static_cast<unsigned long long>(r.payloadBytes)));
  if (diff.empty() && s.seq != r.seq)
    add(format("message number: sender %llu, receiver %llu", static_cast<unsigned long long>(s.seq),
               static_cast<unsigned long long>(r.seq)));
  if (diff.empty()) return "";
  return where + ": sender and receiver disagree: " + diff;
}

namespace {

std::string messages(uint64_t n, uint64_t bytes, const char* what) {
  return format("%llu %s%s (%llu bytes)", static_cast<unsigned long long>(n), what,
                n == 1 ? "" : "s", static_cast<unsigned long long>(bytes));
}

// One direction: `from` sends (n, bytes, hash), `to` posted receives (rn, rbytes, rhash).
std::string direction(int from, uint64_t n, uint64_t bytes, uint64_t hash, int to, uint64_t rn,
                      uint64_t rbytes, uint64_t rhash) {
  if (n == rn && bytes == rbytes && hash == rhash) return "";
  std::string s = format("rank %d sends %s to ", from, messages(n, bytes, "message").c_str());
  s += from == to ? "itself" : format("rank %d", to);
  s += from == to ? " and posted " : ", which posted ";
  s += messages(rn, rbytes, "receive") + " from " +
       (from == to ? std::string("itself") : format("rank %d", from));
  if (n == rn && bytes == rbytes) s += " (the same totals, other message sizes)";
  return s;
}

}  // namespace

std::string p2pPairMismatch(const P2PPairCounts& mine, int myRank, const P2PPairCounts& theirs,
                            int peer) {
  const std::string out = direction(myRank, mine.sends, mine.sendBytes, mine.sendHash, peer,
                                    theirs.recvs, theirs.recvBytes, theirs.recvHash);
  const std::string in = peer == myRank
                             ? std::string()
                             : direction(peer, theirs.sends, theirs.sendBytes, theirs.sendHash,
                                         myRank, mine.recvs, mine.recvBytes, mine.recvHash);
  if (out.empty() && in.empty()) return "";
  std::string s = "device Send/Recv of one group disagree: ";
  s += out;
  if (!out.empty() && !in.empty()) s += "; ";
  s += in;
  return s;
}

}  // namespace coccl
