// Collective descriptors of coccl_perf (see colls.h).
#include "colls.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "dtype.h"

namespace cocclperf {
namespace {

char* at(void* base, size_t elems, size_t elt) { return static_cast<char*>(base) + elems * elt; }

}  // namespace

bool collShape(Coll coll, size_t sizeBytes, size_t elt, int nranks, Shape* s) {
  const size_t n = static_cast<size_t>(nranks);
  const size_t count = sizeBytes / elt;
  switch (coll) {
    case Coll::ReduceScatter:
      s->count = count / n;
      s->sendCount = s->count * n;
      s->recvCount = s->count;
      break;
    case Coll::AllGather:
      s->count = count / n;
      s->sendCount = s->count;
      s->recvCount = s->count * n;
      break;
    default:
      s->count = s->sendCount = s->recvCount = count;
      break;
  }
  s->bytes = std::max(s->sendCount, s->recvCount) * elt;
  return s->count > 0;
}

double busFactor(Coll coll, int nranks) {
  const double n = nranks;
  switch (coll) {
    case Coll::AllReduce: return 2.0 * (n - 1) / n;
    case Coll::ReduceScatter:
    case Coll::AllGather: return (n - 1) / n;
    default: return 1.0;
  }
}

Placement placement(const Rank& rk, Coll coll, bool inPlace, const Buffers& b, size_t count,
                    size_t elt) {
  if (!inPlace) return {b.send, b.recv};
  const size_t r = static_cast<size_t>(rk.rank);
  switch (coll) {
    case Coll::ReduceScatter: return {b.recv, at(b.recv, r * count, elt)};
    case Coll::AllGather: return {at(b.recv, r * count, elt), b.recv};
    default: return {b.recv, b.recv};
  }
}

void runColl(const Rank& rk, const CallSpec& c, const void* s, void* r, size_t count) {
  const cocclComm_t comm = rk.comm;
  const bool policy = c.mode == CodecMode::Policy;
  switch (c.coll) {
    case Coll::AllReduce:
      if (policy)
        CP_CHECK(cocclAllReduce(s, r, count, c.type, c.op, comm, c.stream), comm);
      else
        CP_CHECK(cocclAllReduceCodec(s, r, count, c.type, c.op, c.codec, comm, c.stream), comm);
      break;
    case Coll::ReduceScatter:
      if (policy)
        CP_CHECK(cocclReduceScatter(s, r, count, c.type, c.op, comm, c.stream), comm);
      else
        CP_CHECK(cocclReduceScatterCodec(s, r, count, c.type, c.op, c.codec, comm, c.stream), comm);
      break;
    case Coll::AllGather:
      if (policy)
        CP_CHECK(cocclAllGather(s, r, count, c.type, comm, c.stream), comm);
      else
        CP_CHECK(cocclAllGatherCodec(s, r, count, c.type, c.codec, comm, c.stream), comm);
      break;
    case Coll::Broadcast:
      CP_CHECK(cocclBroadcast(s, r, count, c.type, c.root, comm, c.stream), comm);
      break;
    case Coll::Reduce:
      CP_CHECK(cocclReduce(s, r, count, c.type, c.op, c.root, comm, c.stream), comm);
      break;
    case Coll::SendRecv: {
      const int sendPeer = (rk.rank + 1) % rk.nranks;
      const int recvPeer = (rk.rank - 1 + rk.nranks) % rk.nranks;
      CP_CHECK(cocclGroupStart(), comm);
      if (policy) {
        CP_CHECK(cocclSend(s, count, c.type, sendPeer, comm, c.stream), comm);
        CP_CHECK(cocclRecv(r, count, c.type, recvPeer, comm, c.stream), comm);
      } else {
        CP_CHECK(cocclSendCodec(s, count, c.type, sendPeer, c.codec, comm, c.stream), comm);
        CP_CHECK(cocclRecvCodec(r, count, c.type, recvPeer, c.codec, comm, c.stream), comm);
      }
      CP_CHECK(cocclGroupEnd(), comm);
      break;
    }
  }
}

void prepareCall(const Rank& rk, const CallSpec& c, const Gen& gen, bool inPlace,
                 const Buffers& b, size_t count, bool sentinels) {
  const size_t elt = typeInfo(c.type).size;
  const size_t n = static_cast<size_t>(rk.nranks);
  const size_t r = static_cast<size_t>(rk.rank);
  switch (c.coll) {
    case Coll::ReduceScatter:
      if (!inPlace && sentinels) fillSentinel(c.type, b.recv, count);
      fillInput(gen, rk.rank, inPlace ? b.recv : b.send, n * count);
      break;
    case Coll::AllGather:
      if (sentinels) fillSentinel(c.type, b.recv, n * count);
      fillInput(gen, rk.rank, inPlace ? at(b.recv, r * count, elt) : b.send, count);
      break;
    case Coll::Broadcast:
      if (inPlace && rk.rank != c.root && sentinels) {
        fillSentinel(c.type, b.recv, count);
        break;
      }
      if (!inPlace && sentinels) fillSentinel(c.type, b.recv, count);
      fillInput(gen, rk.rank, inPlace ? b.recv : b.send, count);
      break;
    default:  // all_reduce, reduce, sendrecv
      if (!inPlace && sentinels) fillSentinel(c.type, b.recv, count);
      fillInput(gen, rk.rank, inPlace ? b.recv : b.send, count);
      break;
  }
}

Rule ruleFor(const CallSpec& c, DataKind kind) {
  if (kind == DataKind::Normal) return Rule::Bound;
  if (collHasOp(c.coll) && c.op == cocclAvg) return Rule::Avg;
  return Rule::Exact;
}

// The Bound rule from the call's codec (explicit --codec): element j of an output of `count`
// elements whose input index is base + j may be off by q times the codec's bound
// (cocclCodecErrorBound) for the block statistics of S = sum over `srcs` of |input|, over the
// codec block holding j (blocks start at the output's first element: shards of AllReduce are
// whole blocks, a ReduceScatter or AllGather shard starts its own), divided by `div` (AVG).
// q quantisations: nranks for AllReduce / ReduceScatter (each contribution or partial sum once,
// the result once), 1 for AllGather.
BoundFn codecBound(cocclCodec_t codec, const InputFn& input, std::vector<int> srcs, size_t base,
                   size_t count, int q, double div) {
  size_t g = 1;
  if (cocclCodecBlockElems(codec, &g) != cocclSuccess || g == 0) g = 1;
  // The checker asks in slices of kBoundBlock elements, ascending: the statistics of the codec
  // block that the last slice ended in are kept, so each block is summed once (a tah row of
  // 4096 elements was summed 32 times before: minutes for the check of 64 MiB).
  struct Window {
    size_t begin = 0, end = 0;
    double bound = 0;
  };
  auto win = std::make_shared<Window>();
  return [=](size_t start, size_t len, double* out) {
    Window& wv = *win;
    for (size_t k = 0; k < len; ++k) {
      const size_t j = start + k;
      if (j < wv.begin || j >= wv.end) {  // the block of j: its statistics and bound
        wv.begin = j / g * g;
        wv.end = std::min(count, wv.begin + g);
        double sq = 0, mx = 0;
        for (size_t i = wv.begin; i < wv.end; ++i) {
          double a = 0;
          for (int r : srcs) a += std::fabs(input(r, base + i));
          sq += a * a;
          mx = std::max(mx, a);
        }
        const double rms = std::sqrt(sq / static_cast<double>(wv.end - wv.begin));
        double e = 0;
        if (cocclCodecErrorBound(codec, rms, mx, &e) != cocclSuccess) e = mx;
        wv.bound = (q * e * (1 + 1e-3) + 1e-6 * mx) / div + 1e-30;
      }
      out[k] = wv.bound;
    }
  };
}

// The Bound rule of a two-level ("hier:") call (--codec policy): on N nodes each output element
// carries at most p - N intra quantisations (the inputs of a node but the owner's) and N - 1
// inter ones (the other nodes' partial sums; AllReduce: N, the total once more), each bounded
// by its codec's bound for the statistics of S = sum of |input| over all ranks (a partial sum
// is no larger); the two bounds add. Run flat (one node, or one rank a node) it is one codec
// of the two, p quantisations: the larger of the two codecs' bounds.
BoundFn twoLevelBound(const CallSpec& c, const InputFn& input, const std::vector<int>& srcs,
                      size_t base, size_t count, int n, double div) {
  // nodes -1: two levels on a layout the tool does not know (COCCL_RANKS_PER_NODE unset):
  // N <= p / 2, and p intra quantisations at most.
  const bool two = c.nodes == -1 || (c.nodes > 1 && c.nodes < n);
  const int N = c.nodes == -1 ? n / 2 : c.nodes;
  const int qIntra = !two ? n : c.nodes == -1 ? n : n - N;
  const int qInter = !two ? n : c.coll == Coll::AllReduce ? N : N - 1;
  const BoundFn a = codecBound(c.intra, input, srcs, base, count, qIntra, div);
  const BoundFn b = codecBound(c.inter, input, srcs, base, count, qInter, div);
  return [=](size_t start, size_t len, double* out) {
    std::vector<double> other(len);
    a(start, len, out);
    b(start, len, other.data());
    for (size_t k = 0; k < len; ++k) out[k] = two ? out[k] + other[k] : std::max(out[k], other[k]);
  };
}

// A lossy codec with a bound of its own (the none codec's is 0: the 0.15 rule then).
bool lossyWithBound(cocclCodec_t codec) {
  double e = 0;
  return codec && cocclCodecErrorBound(codec, 1.0, 1.0, &e) == cocclSuccess && e > 0;
}

TwoLevelCodecs::~TwoLevelCodecs() {
  for (auto& m : made_) {
    if (m.second.first) cocclCodecDestroy(m.second.first);
    if (m.second.second) cocclCodecDestroy(m.second.second);
  }
}

CallSpec TwoLevelCodecs::ran(const Rank& rk, const CallSpec& cs) {
  const bool reduces = cs.coll == Coll::AllReduce || cs.coll == Coll::ReduceScatter;
  if (cs.mode != CodecMode::Policy || !reduces) return cs;
  cocclCollStats_t st{};
  CP_CHECK(cocclCommGetLastCollStats(rk.comm, &st), rk.comm);
  const std::string codec = st.codec ? st.codec : "", algo = st.algorithm ? st.algorithm : "";
  const std::string head = "hier:intra=", sep = ",inter=";
  const size_t at = codec.find(sep);
  if (codec.rfind(head, 0) != 0 || at == std::string::npos) return cs;
  auto it = made_.find(codec);
  if (it == made_.end()) {
    cocclCodec_t a = nullptr, b = nullptr;
    CP_CHECK(cocclCodecCreate(codec.substr(head.size(), at - head.size()).c_str(), &a), nullptr);
    CP_CHECK(cocclCodecCreate(codec.substr(at + sep.size()).c_str(), &b), nullptr);
    it = made_.emplace(codec, std::make_pair(a, b)).first;
  }
  CallSpec c = cs;
  c.intra = it->second.first;
  c.inter = it->second.second;
  if (algo.rfind("hierarchical", 0) == 0) {
    const char* e = getenv("COCCL_RANKS_PER_NODE");
    const int L = e ? atoi(e) : 0, n = rk.nranks;
    c.nodes = L > 1 && L < n && n % L == 0 ? n / L : -1;
  }
  return c;
}

RankCheck checkCall(const Rank& rk, const CallSpec& c, const Gen& gen, bool inPlace,
                    const Buffers& b, size_t count) {
  RankCheck out;
  const InputFn input = [&gen](int r, size_t i) { return gen.value(r, i); };
  const size_t elt = typeInfo(c.type).size;
  const int n = rk.nranks;
  const Rule rule = ruleFor(c, gen.kind);
  const Placement p = placement(rk, c.coll, inPlace, b, count, elt);
  const void* o = p.recv;
  switch (c.coll) {
    case Coll::AllReduce:
    case Coll::ReduceScatter:
    case Coll::Reduce: {
      if (c.coll == Coll::Reduce && rk.rank != c.root) break;
      const size_t base = c.coll == Coll::ReduceScatter ? static_cast<size_t>(rk.rank) * count : 0;
      std::vector<int> all(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) all[static_cast<size_t>(r)] = r;
      const double div = c.op == cocclAvg ? n : 1;
      const bool twoLevel = rule == Rule::Bound && c.intra && c.inter && c.coll != Coll::Reduce;
      const bool own =
          twoLevel || (rule == Rule::Bound && lossyWithBound(c.codec) && c.coll != Coll::Reduce);
      const BoundFn bound = twoLevel ? twoLevelBound(c, input, all, base, count, n, div)
                            : own    ? codecBound(c.codec, input, all, base, count, n, div)
                                     : BoundFn();
      out.res = checkOutput(c.type, o, count, [&](size_t s, size_t len, double* ref) {
        for (size_t k = 0; k < len; ++k) ref[k] = reduceRef(gen, c.op, n, base + s + k);
      }, rule, own ? &bound : nullptr);
      out.identApplies = c.coll == Coll::AllReduce;
      if (out.identApplies) out.hash = hashBytes(o, count * elt);
      break;
    }
    case Coll::AllGather:
      for (int src = 0; src < n; ++src) {
        const void* shard = static_cast<const char*>(o) + static_cast<size_t>(src) * count * elt;
        const bool own = rule == Rule::Bound && lossyWithBound(c.codec);
        const BoundFn bound = own ? codecBound(c.codec, input, {src}, 0, count, 1, 1) : BoundFn();
        out.res.merge(checkOutput(c.type, shard, count, [&](size_t s, size_t len, double* ref) {
          for (size_t k = 0; k < len; ++k) ref[k] = gen.value(src, s + k);
        }, rule, own ? &bound : nullptr));
      }
      out.identApplies = true;
      out.hash = hashBytes(o, static_cast<size_t>(n) * count * elt);
      break;
    case Coll::Broadcast:
    case Coll::SendRecv: {
      const int src = c.coll == Coll::Broadcast ? c.root : (rk.rank - 1 + n) % n;
      // sendrecv: one encode and decode of the source rank's input (the codec's blocks start
      // at the message's first element).
      const bool own =
          c.coll == Coll::SendRecv && rule == Rule::Bound && lossyWithBound(c.codec);
      const BoundFn bound = own ? codecBound(c.codec, input, {src}, 0, count, 1, 1) : BoundFn();
      out.res = checkOutput(c.type, o, count, [&](size_t s, size_t len, double* ref) {
        for (size_t k = 0; k < len; ++k) ref[k] = gen.value(src, s + k);
      }, rule, own ? &bound : nullptr);
      out.identApplies = c.coll == Coll::Broadcast;
      if (out.identApplies) out.hash = hashBytes(o, count * elt);
      break;
    }
  }
  return out;
}

}  // namespace cocclperf
