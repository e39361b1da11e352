// Planning of one device collective call: the kernel arguments (rounds, parts, units) from the
// call and the staging layout. Pure host code, shared by cuda_ipc_run.cc and the CPU emulation
// test (tests/gpu/emu), so that both run exactly the same plans. Every rank computes the same
// round counts from the same call, which the protocol relies on.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "coccl.h"
#include "collectives/cuda_ipc/dev_types.h"
#include "collectives/layout.h"

namespace coccl {
namespace dev {

struct Planner {
  Layout lay;
  int nblocks = 0;  // the communicator's blocks (channels)
  int nranks = 0;
  int rank = 0;
  uint64_t blockBytes = kCallBlockBytes;  // message bytes per block of a call (tests lower it)
  int minBlocks = kMinCallBlocks;

  // Blocks of a collective whose message (the larger of input and output, in bytes) is
  // `bytes`; the same on every rank (every rank passes the same counts).
  int callBlocks(uint64_t bytes) const {
    const uint64_t want = ceilDiv(std::max<uint64_t>(bytes, 1), blockBytes);
    const uint64_t lo = static_cast<uint64_t>(std::min(minBlocks, nblocks));
    return static_cast<int>(std::min<uint64_t>(std::max(want, lo), static_cast<uint64_t>(nblocks)));
  }

  static uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
  // Elements of an `es`-byte type per part on the exact path (a multiple of `unit`).
  uint64_t exactPartCap(uint64_t es, uint64_t unit) const {
    return std::max<uint64_t>(lay.sub / es / unit * unit, unit);
  }
  // Elements per part for a codec of block G: whole blocks whose payload fits a sub-slot.
  uint64_t codecPartCap(const CodecDesc& d) const {
    const uint64_t g = static_cast<uint64_t>(d.block);
    return std::max<uint64_t>(codecGeometry(d).elemsFitting(lay.sub), g);
  }
  static uint32_t rounds(uint64_t n, int nb, uint64_t partCap) {
    return static_cast<uint32_t>(ceilDiv(n, static_cast<uint64_t>(nb) * partCap));
  }

  // AllReduce (two-shot; shards balanced in whole units as the host's balancedShards),
  // ReduceScatter (shard j = block j of the send buffer) and Reduce (one shard, owner root).
  // codec: null = exact.
  ReduceArgs reduce(Coll coll, const void* in, void* out, size_t count, int esize, int dtype,
                    int op, int root, const CodecDesc* codec) const {
    ReduceArgs a{};
    a.coll = static_cast<int32_t>(coll);
    a.dtype = dtype;
    a.op = op;
    a.root = root;
    a.in = in;
    a.out = out;
    a.count = count;
    a.esize = esize;
    a.scale = op == cocclAvg ? 1.0f / static_cast<float>(nranks) : 1.0f;
    a.avgDiv = nranks;
    a.codec = CodecDesc{};
    if (codec) {
      a.compressed = 1;
      a.codec = *codec;
      a.unit = static_cast<uint64_t>(codec->block);
      a.partCap = codecPartCap(*codec);
    } else {
      a.unit = std::max<uint64_t>(16 / static_cast<uint64_t>(esize), 1);
      a.partCap = exactPartCap(static_cast<uint64_t>(esize), a.unit);
    }
    uint64_t longest = count;
    if (coll == Coll::AllReduce) {
      longest = 0;
      for (int j = 0; j < nranks; ++j) {
        const auto s = ::coccl::balancedShard(count, nranks, j, a.unit);
        longest = std::max<uint64_t>(longest, s.count);
      }
    }
    const uint64_t msg = static_cast<uint64_t>(count) * static_cast<uint64_t>(esize) *
                         (coll == Coll::ReduceScatter ? static_cast<uint64_t>(nranks) : 1);
    a.nblocks = callBlocks(msg);
    a.rounds = rounds(longest, a.nblocks, a.partCap);
    return a;
  }

  // AllGather (shard = sendcount elements, or bytes when exact) and Broadcast (bytes).
  GatherArgs gather(Coll coll, const void* in, void* out, size_t count, int esize, int dtype,
                    int root, const CodecDesc* codec) const {
    GatherArgs a{};
    a.coll = static_cast<int32_t>(coll);
    a.dtype = dtype;
    a.root = root;
    a.in = in;
    a.out = out;
    a.codec = CodecDesc{};
    if (codec) {
      a.compressed = 1;
      a.codec = *codec;
      a.count = count;
      a.esize = esize;
      a.unit = static_cast<uint64_t>(codec->block);
      a.partCap = codecPartCap(*codec);
    } else {
      a.count = count * static_cast<uint64_t>(esize);  // bytes
      a.esize = 1;
      a.unit = 16;
      a.partCap = exactPartCap(1, 16);
    }
    const uint64_t shardBytes = static_cast<uint64_t>(count) * static_cast<uint64_t>(esize);
    a.nblocks = callBlocks(coll == Coll::AllGather ? shardBytes * static_cast<uint64_t>(nranks)
                                                   : shardBytes);
    a.rounds = rounds(a.count, a.nblocks, a.partCap);
    return a;
  }

  // Send/Recv of one group: bytes, rounds per peer (max of the two directions: both ends agree),
  // the pair agreement on. False when a message is too large.
  bool p2p(const std::vector<P2PMsg>& msgs, P2PArgs* out) const {
    P2PArgs& a = *out;
    a = P2PArgs{};
    a.nblocks = nblocks;
    a.agree = 1;
    a.partCap = exactPartCap(1, 16);
    a.roundBytes = a.partCap * static_cast<uint64_t>(nblocks);
    std::vector<uint64_t> sendR(static_cast<size_t>(nranks), 0), recvR(static_cast<size_t>(nranks), 0);
    for (const P2PMsg& m : msgs) {
      if (a.nmsgs >= kMaxP2P) return false;
      a.msgs[a.nmsgs++] = m;
      (m.send ? sendR : recvR)[static_cast<size_t>(m.peer)] += ceilDiv(m.bytes, a.roundBytes);
    }
    for (int j = 0; j < nranks; ++j) {
      const uint64_t r = std::max(sendR[static_cast<size_t>(j)], recvR[static_cast<size_t>(j)]);
      if (r >= (uint64_t{1} << 31)) return false;
      a.peerRounds[j] = j == rank ? 0 : static_cast<uint32_t>(r);
      a.maxRounds = std::max(a.maxRounds, a.peerRounds[j]);
    }
    return true;
  }
};

}  // namespace dev
}  // namespace coccl
