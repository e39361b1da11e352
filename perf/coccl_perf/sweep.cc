// The size sweep of coccl_perf (see sweep.h).
#include "sweep.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "colls.h"
#include "data.h"
#include "devmem.h"
#include "dtype.h"

namespace cocclperf {
namespace {

// Per placement, what each rank contributes to the exchange.
enum Slot { kTime, kWrong, kErrSq, kRefSq, kMaxAbs, kHash, kWire, kLogical, kSlots };

bool normalData(const Options& o, Coll coll, cocclDataType_t t, cocclRedOp_t op) {
  if (o.codecMode == CodecMode::None || !collTakesCodec(coll)) return false;
  if (t != cocclFloat32 && t != cocclFloat16 && t != cocclBfloat16) return false;
  return coll == Coll::AllGather || coll == Coll::SendRecv || op == cocclSum || op == cocclAvg;
}

double nowSec() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

cocclCollStats_t lastStats(const Rank& rk, std::string* codec, std::string* algo) {
  cocclCollStats_t st{};
  CP_CHECK(cocclCommGetLastCollStats(rk.comm, &st), rk.comm);
  if (codec) *codec = st.codec ? st.codec : "?";
  if (algo) *algo = st.algorithm ? st.algorithm : "?";
  return st;
}

cocclPhaseTimes_t phaseTimes(const Rank& rk) {
  cocclPhaseTimes_t t{};
  CP_CHECK(cocclCommGetPhaseTimes(rk.comm, &t), rk.comm);
  return t;
}

// --phases: us a call in each phase, rounds a call (one block's: the counters' difference over
// the timed calls) and blocks a call (of `calls`), the mean of the ranks.
std::vector<double> phaseRow(const Rank& rk, const cocclPhaseTimes_t& a, const cocclPhaseTimes_t& b,
                             int calls) {
  const double runs = static_cast<double>(b.blockRuns - a.blockRuns);
  std::vector<uint64_t> mine;
  for (int i = 0; i < cocclNumPhases; ++i) {
    const double us = runs > 0 ? static_cast<double>(b.ns[i] - a.ns[i]) / runs * 1e-3 : 0.0;
    mine.push_back(dbits(us));
  }
  mine.push_back(dbits(runs > 0 ? static_cast<double>(b.rounds - a.rounds) / runs : 0.0));
  mine.push_back(dbits(runs / calls));
  const std::vector<uint64_t> all = rk.allGather(mine);
  std::vector<double> row(mine.size(), 0.0);
  for (size_t i = 0; i < all.size(); ++i) row[i % mine.size()] += bitsd(all[i]) / rk.nranks;
  return row;
}

double combineTime(const std::vector<uint64_t>& all, size_t stride, size_t idx, int n, int avg) {
  double acc = bitsd(all[idx]);
  for (int r = 1; r < n && avg != 0; ++r) {
    const double t = bitsd(all[static_cast<size_t>(r) * stride + idx]);
    acc = avg == 1 ? acc + t : avg == 2 ? std::min(acc, t) : std::max(acc, t);
  }
  return avg == 1 ? acc / n : acc;
}

struct Sweeper {
  const Rank& rk;
  const Options& o;
  const RankCodecs& codecs;
  Buffers bufs;  // host: inputs are prepared and outputs checked here
  Table* table;  // rank 0 only
  DeviceRank* dev = nullptr;  // --mem device: the buffers the calls use, the stream, the timer
  int status = 0;
  TwoLevelCodecs hier = {};  // --codec policy: the two-level entries' codecs

  // The buffers the collective runs on.
  Buffers callBufs() const { return dev ? Buffers{dev->send(), dev->recv()} : bufs; }
  // Device mode: copy the prepared host buffers to the device / the output back.
  void toDevice(const Shape& sh, size_t elt) {
    if (!dev) return;
    dev->upload(dev->send(), bufs.send, sh.sendCount * elt);
    dev->upload(dev->recv(), bufs.recv, std::max(sh.sendCount, sh.recvCount) * elt);
  }
  void fromDevice(const Shape& sh, size_t elt) {
    if (!dev) return;
    dev->download(bufs.recv, dev->recv(), std::max(sh.sendCount, sh.recvCount) * elt);
  }

  // One size: out-of-place then in-place (timing, then the check), then the exchange.
  void measure(const CallSpec& cs, const Gen& gen, const Shape& sh, Row* row) {
    const size_t elt = typeInfo(cs.type).size;
    std::vector<uint64_t> pk;
    std::string codec, algo;
    uint64_t wireOop = 0;
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      prepareCall(rk, cs, gen, inPlace, bufs, sh.count, false);
      toDevice(sh, elt);
      const Placement p = placement(rk, cs.coll, inPlace, callBufs(), sh.count, elt);
      for (int w = 0; w < o.warmup; ++w) runColl(rk, cs, p.send, p.recv, sh.count);
      if (dev) dev->sync();
      rk.barrier();
      const bool timePhases = o.phases && dev && !inPlace;
      const cocclPhaseTimes_t ph0 = timePhases ? phaseTimes(rk) : cocclPhaseTimes_t{};
      const double t0 = nowSec();
      if (dev) dev->startTimer();
      for (int it = 0; it < o.iters; ++it) {
        if (o.aggIters > 1) CP_CHECK(cocclGroupStart(), rk.comm);
        for (int a = 0; a < o.aggIters; ++a) runColl(rk, cs, p.send, p.recv, sh.count);
        if (o.aggIters > 1) CP_CHECK(cocclGroupEnd(), rk.comm);
      }
      // Device: CUDA events around the calls on the rank's stream (synchronised here).
      const double total = dev ? dev->stopTimerSeconds() : nowSec() - t0;
      const double sec = total / (static_cast<double>(o.iters) * o.aggIters);
      if (timePhases) row->phases = phaseRow(rk, ph0, phaseTimes(rk), o.iters * o.aggIters);
      RankCheck rc;
      if (o.check) {
        prepareCall(rk, cs, gen, inPlace, bufs, sh.count, true);
        toDevice(sh, elt);
        runColl(rk, cs, p.send, p.recv, sh.count);
        fromDevice(sh, elt);
        rc = checkCall(rk, hier.ran(rk, cs), gen, inPlace, bufs, sh.count);
      }
      const cocclCollStats_t st = lastStats(rk, inPlace ? nullptr : &codec, &algo);
      if (!inPlace) row->algorithm = algo, wireOop = st.wireBytesSent;
      const double maxAbs =
          rc.res.nonFinite ? std::numeric_limits<double>::quiet_NaN() : rc.res.maxAbs;
      const uint64_t vals[kSlots] = {dbits(sec), rc.res.wrong, dbits(rc.res.errSq),
                                     dbits(rc.res.refSq), dbits(maxAbs), rc.hash,
                                     st.wireBytesSent, st.logicalBytes};
      pk.insert(pk.end(), vals, vals + kSlots);
      row->codec = codec;
      if (o.check && rc.identApplies) row->oop.ident = row->ip.ident = 1;
    }
    // Uncompressed wire bytes of the same call: one out-of-place call with the none codec.
    uint64_t wireNone = wireOop;
    if (collTakesCodec(cs.coll) && o.codecMode != CodecMode::None) {
      CallSpec ns = cs;
      ns.mode = CodecMode::None;
      ns.codec = codecs.none;
      prepareCall(rk, ns, gen, false, bufs, sh.count, false);
      toDevice(sh, elt);
      const Buffers cb = callBufs();
      runColl(rk, ns, cb.send, cb.recv, sh.count);
      if (dev) dev->sync();
      wireNone = lastStats(rk, nullptr, &row->algorithmNone).wireBytesSent;
    } else {
      row->algorithmNone = row->algorithm;
    }
    pk.push_back(wireNone);

    const std::vector<uint64_t> all = rk.allGather(pk);
    const size_t stride = pk.size();
    const int n = rk.nranks;
    const double bw = static_cast<double>(sh.bytes) / 1e9;
    row->checked = o.check != 0;
    for (int pl = 0; pl < 2; ++pl) {
      PlaceStats& ps = pl ? row->ip : row->oop;
      const size_t off = static_cast<size_t>(pl) * kSlots;
      ps.timeUs = combineTime(all, stride, off + kTime, n, o.average) * 1e6;
      ps.algBw = ps.timeUs > 0 ? bw / (ps.timeUs * 1e-6) : 0;
      ps.busBw = ps.algBw * busFactor(cs.coll, n);
      double errSq = 0, refSq = 0, maxAbs = 0;
      int64_t wrong = 0;
      bool same = true;
      for (int r = 0; r < n; ++r) {
        const uint64_t* v = &all[static_cast<size_t>(r) * stride + off];
        wrong += static_cast<int64_t>(v[kWrong]);
        errSq += bitsd(v[kErrSq]);
        refSq += bitsd(v[kRefSq]);
        const double m = bitsd(v[kMaxAbs]);
        maxAbs = std::isnan(m) || std::isnan(maxAbs) ? m + maxAbs : std::max(maxAbs, m);
        same = same && v[kHash] == all[off + kHash];
        if (pl == 0) row->wireBytes += v[kWire], row->logicalBytes += v[kLogical];
        if (pl == 0) row->wireBytesNone += all[static_cast<size_t>(r) * stride + stride - 1];
      }
      ps.wrong = wrong;
      ps.relL2 = refSq > 0 ? std::sqrt(errSq / refSq) : (errSq == 0 ? 0.0 : errSq);
      ps.maxAbs = maxAbs;
      if (ps.ident >= 0) ps.ident = same ? 1 : 0;
      if (row->checked && (wrong != 0 || ps.ident == 0)) status = 1;
    }
    row->ratio = row->wireBytes > 0
                     ? static_cast<double>(row->wireBytesNone) / static_cast<double>(row->wireBytes)
                     : std::numeric_limits<double>::quiet_NaN();
  }
};

}  // namespace

RankCodecs::RankCodecs(const Options& o) {
  CP_CHECK(cocclCodecCreate("none", &none), nullptr);
  if (o.codecMode == CodecMode::Explicit) CP_CHECK(cocclCodecCreate(o.codec.c_str(), &codec), nullptr);
}

RankCodecs::~RankCodecs() {
  if (codec) cocclCodecDestroy(codec);
  if (none) cocclCodecDestroy(none);
}

RunInfo gatherRunInfo(const Rank& rk, const Options& o, const Launch& l, const RankCodecs& c) {
  RunInfo info;
  info.nranks = rk.nranks;
  info.launch = l;
  info.nThreads = rk.nThreads;
  info.codecCanonical = o.codecMode == CodecMode::Explicit ? cocclCodecName(c.codec)
                        : o.codecMode == CodecMode::Policy ? "policy"
                                                           : cocclCodecName(c.none);
  constexpr size_t kHostWords = 8;
  std::vector<uint64_t> me(2 + kHostWords, 0);
  me[0] = static_cast<uint64_t>(getpid());
  char host[kHostWords * 8] = {};
  gethostname(host, sizeof(host) - 1);
  std::memcpy(&me[1], host, sizeof(host));
  int dev = -1;
  CP_CHECK(cocclCommCuDevice(rk.comm, &dev), rk.comm);
  me[1 + kHostWords] = static_cast<uint64_t>(static_cast<int64_t>(o.mem == "device" ? dev : -1));
  const std::vector<uint64_t> all = rk.allGather(me);
  for (int r = 0; r < rk.nranks; ++r) {
    const uint64_t* v = &all[static_cast<size_t>(r) * me.size()];
    char h[kHostWords * 8 + 1] = {};
    std::memcpy(h, v + 1, kHostWords * 8);
    info.devices.push_back(
        {r, static_cast<int>(v[0]), h, static_cast<int>(static_cast<int64_t>(v[1 + kHostWords]))});
  }
  return info;
}

int runSweep(const Rank& rk, const Options& o, const Launch& l) {
  if (collHasRoot(o.coll) && o.root >= rk.nranks)
    throw PerfError("root " + std::to_string(o.root) + " is not a rank (" +
                    std::to_string(rk.nranks) + " ranks)");
  RankCodecs codecs(o);
  const RunInfo info = gatherRunInfo(rk, o, l, codecs);
  std::unique_ptr<Table> table;
  if (rk.printer()) {
    table = std::make_unique<Table>(o, info);
    table->header();
  }
  const size_t words = o.maxBytes / 8 + 8;
  std::vector<uint64_t> sendBuf(words), recvBuf(words);
  std::unique_ptr<DeviceRank> dev;
  if (o.mem == "device") dev = std::make_unique<DeviceRank>(words * 8, o.alloc);
  Sweeper sw{rk, o, codecs, {sendBuf.data(), recvBuf.data()}, table.get(), dev.get()};

  for (cocclDataType_t dt : o.types) {
    const std::vector<cocclRedOp_t> ops =
        collHasOp(o.coll) ? o.ops : std::vector<cocclRedOp_t>{cocclSum};
    for (cocclRedOp_t op : ops) {
      std::vector<int> roots;
      if (!collHasRoot(o.coll)) roots = {-1};
      else if (o.root >= 0) roots = {o.root};
      else for (int r = 0; r < rk.nranks; ++r) roots.push_back(r);
      for (int root : roots) {
        CallSpec cs;
        cs.coll = o.coll;
        cs.type = dt;
        cs.op = op;
        cs.root = std::max(root, 0);
        cs.mode = o.codecMode;
        cs.codec = codecs.callCodec();
        cs.stream = dev ? dev->stream() : nullptr;
        for (size_t size = o.minBytes; size <= o.maxBytes;
             size = o.stepFactor > 1 ? std::max<size_t>(size * o.stepFactor, 1)
                                     : size + o.stepBytes) {
          Shape sh;
          if (!collShape(o.coll, size, typeInfo(dt).size, rk.nranks, &sh)) continue;
          Gen gen;
          gen.type = dt;
          gen.op = op;
          gen.kind = o.data == "zero"                ? DataKind::Zero
                     : normalData(o, o.coll, dt, op) ? DataKind::Normal
                                                     : DataKind::Exact;
          gen.nSum = collHasOp(o.coll) ? rk.nranks : 1;
          gen.seed = mix64(0xc0cc1ull ^ (static_cast<uint64_t>(size) << 20) ^
                           (static_cast<uint64_t>(dt) << 8) ^ (static_cast<uint64_t>(op) << 4) ^
                           static_cast<uint64_t>(root + 1));
          Row row;
          row.bytes = sh.bytes;
          row.count = sh.count;
          row.type = typeInfo(dt).name;
          row.op = collHasOp(o.coll) ? opName(op) : "none";
          row.root = root;
          sw.measure(cs, gen, sh, &row);
          if (table) table->row(row);
        }
      }
    }
  }
  if (table) {
    table->footer();
    if (!table->writeJson()) sw.status = 1;
  }
  return sw.status;
}

}  // namespace cocclperf
