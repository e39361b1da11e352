// Fuzzes the bootstrap's parsing of what a socket delivers (core/bootstrap_wire.h): the byte
// stream of a hello (rank <- peer) or a registration (root <- rank) arriving in arbitrary
// pieces, as readHello / the root thread assemble them (wrong magic, truncated, garbage
// fields), a sequence of registrations at the root, frame headers [tag][bytes] of any length
// against the receive being waited for, the root's reply at a rank, and the peer address
// (SocketAddress::toString on arbitrary bytes).
//
// Input: byte 0 picks the case; then the case's parameters; the rest is the stream.
#include <set>
#include <vector>

#include "core/bootstrap_wire.h"
#include "core/error.h"
#include "fuzz_util.h"

using namespace coccl;
using coccl::fuzz::fail;

namespace {

// Delivers `msg`-sized messages from the input in pieces of 1..64 bytes (the piece length is
// an input byte) the way the bootstrap does (recv into the struct at `got`, at most what is
// missing), checking after each piece. Returns the verdict it ended with.
template <class T>
WireProgress assemble(fuzz::Input& in, T* msg, uint64_t magic) {
  size_t got = 0;
  for (;;) {
    const size_t piece = 1 + in.u8() % 64;
    size_t n = std::min(piece, sizeof(T) - got);
    if (in.restSize() == 0) return WireProgress::NeedMore;  // the peer stopped sending
    n = std::min(n, in.restSize());
    std::memcpy(reinterpret_cast<char*>(msg) + got, in.rest(), n);
    for (size_t i = 0; i < n; ++i) in.u8();
    got += n;
    const WireProgress w = checkWirePrefix(msg, got, sizeof(T), magic);
    uint64_t m = 0;
    std::memcpy(&m, msg, sizeof(m));
    const bool magicThere = got >= sizeof(uint64_t);
    if ((w == WireProgress::BadMagic) != (magicThere && m != magic))
      fail("checkWirePrefix: wrong-magic verdict disagrees with the bytes");
    if (w == WireProgress::Complete && got != sizeof(T))
      fail("checkWirePrefix: complete before the whole message arrived");
    if (w == WireProgress::NeedMore && got >= sizeof(T)) fail("checkWirePrefix: stuck");
    if (w != WireProgress::NeedMore) return w;
  }
}

void hello(fuzz::Input& in) {
  const uint64_t magic = in.u64();
  const int nranks = 1 + in.u8() % 16;
  const int self = in.u8() % nranks;
  std::set<int> connected;
  for (int k = 0; k < 8 && in.restSize(); ++k) {  // several connections, one after another
    PeerHello h;
    std::memset(&h, 0, sizeof(h));
    if (assemble(in, &h, magic) != WireProgress::Complete) continue;
    const bool ok = checkPeerHello(h, self, nranks, [&](int r) {
      if (r < 0 || r >= nranks) fail("checkPeerHello: asked about an out-of-range rank");
      return connected.count(r) > 0;
    });
    if (ok) {
      if (h.rank < 0 || h.rank >= nranks || h.rank == self || h.nranks != nranks ||
          connected.count(h.rank))
        fail("checkPeerHello accepted a bad hello");
      connected.insert(h.rank);
    }
  }
}

void registrations(fuzz::Input& in) {
  const uint64_t magic = in.u64();
  int nranks = -1;
  std::vector<char> registered;
  for (int k = 0; k < 16 && in.restSize(); ++k) {
    RootRegistration reg;
    std::memset(&reg, 0, sizeof(reg));
    if (assemble(in, &reg, magic) != WireProgress::Complete) continue;
    const RootStatus st = checkRegistration(reg, nranks, [&](int r) {
      if (r < 0 || r >= nranks) fail("checkRegistration: asked about an out-of-range rank");
      return registered[static_cast<size_t>(r)] != 0;
    });
    if (st != kRootOk) continue;
    if (reg.nranks < 1 || reg.rank < 0 || reg.rank >= reg.nranks)
      fail("checkRegistration accepted a rank out of range");
    if (nranks >= 0 && reg.nranks != nranks) fail("checkRegistration accepted another nranks");
    if (nranks < 0) {
      // The root sizes its table from the first registration; keep the fuzzer's memory small.
      if (reg.nranks > (1 << 16)) return;
      nranks = reg.nranks;
      registered.assign(static_cast<size_t>(nranks), 0);
    }
    if (registered[static_cast<size_t>(reg.rank)]) fail("checkRegistration accepted a duplicate");
    registered[static_cast<size_t>(reg.rank)] = 1;
    reg.info.host[sizeof(reg.info.host) - 1] = '\0';
    (void)reg.info.addr.toString();
  }
}

void frames(fuzz::Input& in) {
  const bool wanting = in.u8() & 1;
  const FrameWant want{in.u64() & 7, in.u64() % 5 == 0 ? in.u64() : in.u64() & 0xffff};
  while (in.restSize()) {
    const uint64_t tag = in.u8() & 1 ? want.tag : in.u64();
    const uint64_t bytes = in.u8() & 1 ? want.bytes : in.u64();
    const FrameRoute r = routeFrame(tag, bytes, wanting ? &want : nullptr);
    const bool match = wanting && tag == want.tag;
    if ((r == FrameRoute::ToUser) != (match && bytes == want.bytes))
      fail("routeFrame: delivered a frame that is not the wanted one");
    if ((r == FrameRoute::SizeMismatch) != (match && bytes != want.bytes))
      fail("routeFrame: size mismatch verdict wrong");
  }
}

void reply(fuzz::Input& in) {
  const uint64_t magic = in.u64();
  const int nranks = 1 + in.u8() % 64;
  const int rank = in.u8() % nranks;
  RootReply rep;
  in.fill(&rep, sizeof(rep));
  if (in.u8() & 1) rep.magic = magic;
  if (in.u8() & 1) rep.nranks = nranks;
  const bool good = rep.magic == magic && rep.status == kRootOk && rep.nranks == nranks;
  try {
    checkRootReply(rep, magic, rank, nranks, "127.0.0.1:1");
    if (!good) fail("checkRootReply accepted a bad reply");
  } catch (const Error& e) {
    if (good) fail(format("checkRootReply rejected a good reply: %s", e.what()));
  }
}

void address(fuzz::Input& in) {
  SocketAddress a;
  in.fill(&a, sizeof(a));
  if (in.u8() & 1) a.u.sa.sa_family = AF_INET;
  else if (in.u8() & 1) a.u.sa.sa_family = AF_INET6;
  const std::string s = a.toString();
  if (s.size() > 64) fail("SocketAddress::toString: too long");
  const socklen_t len = a.length();
  if (len > sizeof(a.u)) fail("SocketAddress::length beyond the address");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  switch (in.u8() % 5) {
    case 0: hello(in); break;
    case 1: registrations(in); break;
    case 2: frames(in); break;
    case 3: reply(in); break;
    default: address(in); break;
  }
  return 0;
}
