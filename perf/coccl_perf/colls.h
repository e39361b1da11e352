// The six collectives as coccl_perf drives them: counts per size, bus bandwidth factors,
// buffer placement (out-of-place / in-place, as nccl-tests), input preparation, the call itself,
// and the check of one rank's output against the fp64 reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "coccl.h"
#include "data.h"
#include "runtime.h"

namespace cocclperf {

struct Shape {
  size_t count = 0;      // the count argument of the call (recvcount / sendcount for RS / AG)
  size_t sendCount = 0;  // elements of one rank's send buffer
  size_t recvCount = 0;  // elements of one rank's receive buffer
  size_t bytes = 0;      // max(send, recv) bytes: the "size" column
};

// Counts of `coll` for a size in bytes; false when the count is 0 (row skipped).
bool collShape(Coll coll, size_t sizeBytes, size_t elt, int nranks, Shape* s);
// busbw = algbw * busFactor (nccl-tests' factors).
double busFactor(Coll coll, int nranks);

struct CallSpec {
  Coll coll = Coll::AllReduce;
  cocclDataType_t type = cocclFloat32;
  cocclRedOp_t op = cocclSum;  // ignored by all_gather, broadcast, sendrecv
  int root = 0;                // broadcast and reduce
  CodecMode mode = CodecMode::None;
  cocclCodec_t codec = nullptr;  // the call's codec when mode != Policy
  // --codec policy, when the call ran a two-level ("hier:") entry (CollStats::codec): its
  // codecs, and the nodes it ran on (0: it ran flat with one of them; TwoLevelCodecs below).
  cocclCodec_t intra = nullptr, inter = nullptr;
  int nodes = 0;
  cudaStream_t stream = nullptr;  // --mem device: the rank's stream
};

// Two buffers of `capacity` bytes each per rank.
struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
};

struct Placement {
  const void* send;
  void* recv;
};
Placement placement(const Rank& rk, Coll coll, bool inPlace, const Buffers& b, size_t count,
                    size_t elt);

// One call of the collective (blocking on host buffers; enqueued on c.stream for device ones).
void runColl(const Rank& rk, const CallSpec& c, const void* send, void* recv, size_t count);

// Writes this rank's inputs for one call; with `sentinels`, first fills the outputs with values no
// input has, so that elements the call does not write are counted as wrong.
void prepareCall(const Rank& rk, const CallSpec& c, const Gen& gen, bool inPlace,
                 const Buffers& b, size_t count, bool sentinels);

// Which rule checks the output: Bound on normal data, Avg for AVG, Exact otherwise.
Rule ruleFor(const CallSpec& c, DataKind kind);

struct RankCheck {
  CheckResult res;
  uint64_t hash = 0;       // of the rank's whole output
  bool identApplies = false;  // all_reduce, all_gather, broadcast: outputs must be identical
};
RankCheck checkCall(const Rank& rk, const CallSpec& c, const Gen& gen, bool inPlace,
                    const Buffers& b, size_t count);

// Input element i of rank r (an exact double), for the bounds below.
using InputFn = std::function<double(int r, size_t i)>;
// The Bound rule from the call's codec: element j of an output of `count` elements whose input
// index is base + j may be off by q times the codec's bound (cocclCodecErrorBound) for the block
// statistics of S = sum over `srcs` of |input| over the codec block holding j, divided by div.
BoundFn codecBound(cocclCodec_t codec, const InputFn& input, std::vector<int> srcs, size_t base,
                   size_t count, int q, double div);
// A lossy codec with a bound of its own (the none codec's is 0: the 0.15 rule then).
bool lossyWithBound(cocclCodec_t codec);
// The Bound rule of a two-level call (c.intra, c.inter, c.nodes; colls.cc has the count).
BoundFn twoLevelBound(const CallSpec& c, const InputFn& input, const std::vector<int>& srcs,
                      size_t base, size_t count, int n, double div);

// --codec policy: the codecs of the two-level ("hier:") entries the calls ran, made once each.
class TwoLevelCodecs {
 public:
  TwoLevelCodecs() = default;
  ~TwoLevelCodecs();
  TwoLevelCodecs(const TwoLevelCodecs&) = delete;
  TwoLevelCodecs& operator=(const TwoLevelCodecs&) = delete;
  // cs for the check of the call just run: under --codec policy, when it ran a two-level entry
  // (CollStats::codec "hier:intra=SPEC,inter=SPEC"), with its two codecs and the nodes
  // (CollStats::algorithm "hierarchical...": from COCCL_RANKS_PER_NODE, else -1 (unknown); 0
  // when it ran flat).
  CallSpec ran(const Rank& rk, const CallSpec& cs);

 private:
  std::map<std::string, std::pair<cocclCodec_t, cocclCodec_t>> made_;
};

}  // namespace cocclperf
