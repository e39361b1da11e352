// Host-memory collective algorithms. Each runs to completion (the call returns when the
// output is ready) and throws Error on failure. Buffers are byte pointers; counts are elements.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/layout.h"
#include "collectives/host/wire.h"
#include "collectives/request.h"

namespace coccl {

class HostExecutor;
class CallAgreement;

// Two-shot (direct) reduce: every rank sends shard j of its input to rank j (encode-on-send);
// rank j combines the p inputs in rank order (decode-reduce-on-receive). With allReduce the
// owner then sends the reduced shard (encoded once) to every rank and everyone writes
// out + shard.begin; otherwise (ReduceScatter) the owner writes its shard to `out`.
// Chunks of every shard are pipelined: while chunk k is encoded and sent, chunk k-1 is
// reduced and chunk k-2's results are decoded.
// `agree` (started by nobody yet): the call's agreement, run here with the first chunk's
// reduce-scatter pieces (those up to kAgreeEagerBytes) sent right behind the descriptors, so
// that the check adds no round trip; they are received only once it passed.
void twoShotReduce(HostExecutor& c, const Wire& w, const char* in, char* out,
                   const std::vector<Range>& shards, bool allReduce, CallAgreement& agree);

// Ring reduce: p-1 hops of reduce-scatter (each hop adds its input to the partial sum it got
// and passes it on; compressed wires re-encode the partial sum at every hop), then, for
// AllReduce, p-1 hops of all-gather relaying the owner's encoded result unchanged.
void ringReduce(HostExecutor& c, const Wire& w, const char* in, char* out,
                const std::vector<Range>& shards, bool allReduce);

// Two-level reduce (SDP4Bit-style, hierarchical.cc): `intra` codec between the L ranks of a
// node (ranks r = n L + l), `inter` codec between nodes, each level quantised once; shards as
// for twoShotReduce. Needs 1 <= L, L divides nranks; L = 1 or L = nranks still work (one level
// then carries no traffic).
void hierReduce(HostExecutor& c, const Codec& intra, const Codec& inter, cocclDataType_t dt,
                cocclRedOp_t op, const char* in, char* out, const std::vector<Range>& shards,
                bool allReduce, int L);

// One-shot AllReduce through a codec (compressed wires only, one_shot.cc): every rank encodes
// its input once and sends it to every peer; every rank sums the p payloads (its own encoded
// bytes too) in rank order in fp32, so each input is quantised once and the outputs are bitwise
// identical. Sends (p - 1) x encodedBytes(count) a rank: the same as two-shot at 2 ranks, more
// beyond; in one exchange instead of two.
void oneShotAllReduce(HostExecutor& c, const Wire& w, const char* in, char* out, size_t count);

// AllGather: rank r's `count` elements land at out + r*count on every rank. Compressed wires
// encode the own shard once and every rank decodes every shard (its own too).
void directAllGather(HostExecutor& c, const Wire& w, const char* in, char* out, size_t count);
void ringAllGather(HostExecutor& c, const Wire& w, const char* in, char* out, size_t count);

// Send/Recv of a group (p2p.cc, protocol in p2p_header.h): every operation's header goes out
// at once, each pair checks both headers, then the payloads of the pairs that agree move
// (compressed: encoded by the sender, decoded into the receive buffer). Throws
// cocclInvalidUsage naming the first disagreeing pair once every operation has finished.
// Adds the bytes sent (headers and payloads) to the executor's statistics.
void hostSendRecv(HostExecutor& c, const std::vector<CollRequest>& group);

// Broadcast from root (exact): direct for few ranks, pipelined chain otherwise.
void broadcast(HostExecutor& c, const char* in, char* out, size_t bytes, int root);
// Reduce to root (exact), chunked.
void reduceToRoot(HostExecutor& c, const char* in, char* out, size_t count, cocclDataType_t dt,
                  cocclRedOp_t op, int root);

}  // namespace coccl
