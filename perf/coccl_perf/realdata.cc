// Real-data mode of coccl_perf (see realdata.h).
#include "realdata.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <tuple>

#include <nlohmann/json.hpp>

#include "colls.h"
#include "data.h"
#include "devmem.h"
#include "dtype.h"
#include "sweep.h"
#include "table.h"

namespace cocclperf {
namespace {

std::vector<uint16_t> readTensor(const TensorRef& t) {
  std::vector<uint16_t> v(t.nbytes / 2);
  std::ifstream f(t.file, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(t.offset));
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(t.nbytes));
  if (!f) throw PerfError("cannot read " + std::to_string(t.nbytes) + " bytes at offset " +
                          std::to_string(t.offset) + " of " + t.file);
  return v;
}

enum Slot { kTime, kWrong, kErrSq, kRefSq, kMaxAbs, kHash, kWire, kWireNone, kSlots };

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

// tp_tensors entries carry tp_rank and tp_size (offset, nbytes, layer, module): the tp_size
// entries of one (step, layer, module, kind) form a case. pp_activations entries carry rows and
// row instead (offset 0 and nbytes rows * row * 2 unless given; layer, module optional): one
// entry, one case.
bool loadManifest(const std::string& path, Manifest* m, std::string* err) {
  nlohmann::json j;
  try {
    std::ifstream f(path);
    if (!f) return *err = "cannot open manifest " + path, false;
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    return *err = "manifest " + path + ": " + e.what(), false;
  }
  m->path = path;
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::map<std::tuple<int, int, std::string, std::string>, size_t> index;
  try {
    for (const auto& t : j.at("tensors")) {
      if (t.at("dtype").get<std::string>() != "bf16")
        return *err = "manifest tensor with dtype " + t.at("dtype").get<std::string>() +
                      " (only bf16 is supported)", false;
      const bool tp = t.contains("tp_rank") || t.contains("tp_size");
      const std::string format = tp ? "tp_tensors" : "pp_activations";
      if (m->format.empty()) m->format = format;
      if (format != m->format)
        return *err = "manifest " + path + " mixes tp_tensors entries (tp_rank, tp_size) with "
                      "pp_activations entries (rows, row)", false;
      TensorRef tr;
      const std::string file = t.at("file").get<std::string>();
      tr.file = !file.empty() && file[0] == '/' ? file : dir + file;
      if (!tp) {
        RealCase c;
        c.step = t.at("step").get<int>();
        c.kind = t.at("kind").get<std::string>();
        c.layer = t.value("layer", -1);
        c.module = t.value("module", std::string("-"));
        const size_t rows = t.at("rows").get<size_t>();
        c.row = t.at("row").get<size_t>();
        tr.offset = t.value("offset", size_t{0});
        tr.nbytes = rows * c.row * 2;
        if (rows == 0 || c.row == 0 || t.value("nbytes", tr.nbytes) != tr.nbytes)
          return *err = "manifest: " + file + ": rows and row must be > 0 and nbytes (when "
                        "given) rows * row * 2", false;
        c.tensors.push_back(tr);
        m->cases.push_back(c);
        continue;
      }
      const int tpSize = t.at("tp_size").get<int>();
      const int tpRank = t.at("tp_rank").get<int>();
      if (m->tpSize == 0) m->tpSize = tpSize;
      if (tpSize != m->tpSize || tpRank < 0 || tpRank >= tpSize)
        return *err = "manifest: inconsistent tp_size / tp_rank", false;
      const auto key = std::make_tuple(t.at("step").get<int>(), t.at("layer").get<int>(),
                                       t.at("module").get<std::string>(),
                                       t.at("kind").get<std::string>());
      auto it = index.find(key);
      if (it == index.end()) {
        RealCase c;
        std::tie(c.step, c.layer, c.module, c.kind) = key;
        c.tensors.resize(static_cast<size_t>(tpSize));
        it = index.emplace(key, m->cases.size()).first;
        m->cases.push_back(c);
      }
      TensorRef& slot = m->cases[it->second].tensors[static_cast<size_t>(tpRank)];
      if (slot.nbytes) return *err = "manifest: two tensors for one case and tp_rank", false;
      tr.offset = t.at("offset").get<size_t>();
      tr.nbytes = t.at("nbytes").get<size_t>();
      if (tr.nbytes == 0 || tr.nbytes % 2) return *err = "manifest: bad nbytes", false;
      slot = tr;
    }
  } catch (const std::exception& e) {
    return *err = "manifest " + path + ": " + e.what(), false;
  }
  for (RealCase& c : m->cases) {
    for (const TensorRef& t : c.tensors)
      if (t.nbytes == 0 || t.nbytes != c.tensors[0].nbytes)
        return *err = "manifest: case step " + std::to_string(c.step) + " layer " +
                      std::to_string(c.layer) + " " + c.module + " " + c.kind +
                      " lacks a tp_rank or has tensors of different sizes", false;
    c.count = c.tensors[0].nbytes / 2;
  }
  if (m->cases.empty()) return *err = "manifest lists no tensors", false;
  return true;
}

int runRealData(const Rank& rk, const Options& o, const Launch& l, const Manifest& m) {
  if (!collTakesCodec(o.coll))
    throw PerfError(std::string("real-data mode runs all_reduce, reduce_scatter, all_gather or "
                                "sendrecv, not ") + collName(o.coll));
  if (m.tpSize && rk.nranks != m.tpSize)
    throw PerfError("world size " + std::to_string(rk.nranks) + " != manifest tp_size " +
                    std::to_string(m.tpSize));
  RankCodecs codecs(o);
  TwoLevelCodecs hier;
  const RunInfo info = gatherRunInfo(rk, o, l, codecs);
  const int n = rk.nranks;
  const size_t me = static_cast<size_t>(rk.rank);
  const bool copies = o.coll == Coll::AllGather || o.coll == Coll::SendRecv;  // no sum
  nlohmann::json json;
  if (rk.printer()) {
    std::printf("# coccl_perf real-data mode: %s of %zu cases from %s (%s, bfloat16%s), %d ranks "
                "(%s)\n", collName(o.coll), m.cases.size(), m.path.c_str(), m.format.c_str(),
                copies ? "" : ", sum", n, info.launch.launcher.c_str());
    if (!m.tpSize) std::printf("# Every rank uses the case's one tensor\n");
    if (o.coll == Coll::SendRecv)
      std::printf("# Each rank sends its tensor to rank+1 and receives rank-1's (one group of "
                  "cocclSend%s + cocclRecv%s)\n", o.codecMode == CodecMode::Policy ? "" : "Codec",
                  o.codecMode == CodecMode::Policy ? "" : "Codec");
    std::printf("# Codec: %s   warmup iters: %d iters: %d   time: %s over ranks\n",
                info.codecCanonical.c_str(), o.warmup, o.iters,
                o.average == 0 ? "rank 0" : o.average == 1 ? "mean" : o.average == 2 ? "min"
                                                                                    : "max");
    // A codec whose blocks straddle the tensors' rows (tah:row=4096 on rows of 384) runs, but
    // quantises across tokens: say so.
    size_t g = 1;
    if (codecs.codec && cocclCodecBlockElems(codecs.codec, &g) == cocclSuccess && g > 1)
      for (const RealCase& c : m.cases)
        if (c.row && c.row % g && g % c.row) {
          std::printf("# Warning: the codec's blocks of %zu elements straddle the tensors' rows "
                      "of %zu elements (tah: pass row=%zu)\n", g, c.row, c.row);
          break;
        }
    std::printf("# relL2 and max abs err vs the exact fp64 %s; #wrong by the codec's bound (a "
                "two-level entry: the sum of its codecs'; --codec policy with one codec: the "
                "0.15 * blockmax rule; --help); ratio = wire bytes with codec none / wire "
                "bytes; wire(B) summed over ranks\n#\n",
                copies ? "inputs" : "sum of the ranks' tensors");
    std::printf("# %5s  %5s  %6s  %16s  %8s  %9s  %9s  %6s  %10s  %9s  %5s  %6s\n", "step",
                "layer", "module", "kind", "count", "relL2", "maxabserr", "ratio", "wire(B)",
                "time(us)", "ident", "#wrong");
    if (!o.jsonFile.empty()) json = runMetadata(o, info), json["cases"] = nlohmann::json::array();
  }
  std::vector<double> rels;
  uint64_t wrongAll = 0;
  int status = 0;
  // --mem device: buffers sized for the largest case; calls on the rank's stream, timed with
  // CUDA events.
  std::unique_ptr<DeviceRank> dev;
  if (o.mem == "device") {
    size_t most = 0;
    for (const RealCase& c : m.cases) most = std::max(most, c.count * static_cast<size_t>(n));
    dev = std::make_unique<DeviceRank>(most * 2 + 16, o.alloc);
  }
  for (const RealCase& c : m.cases) {
    std::vector<std::vector<uint16_t>> t(c.tensors.size());
    for (size_t i = 0; i < t.size(); ++i) t[i] = readTensor(c.tensors[i]);
    // Rank r's tensor: tp_rank r's, or the case's one tensor (pp_activations).
    const auto of = [&t](int r) -> const std::vector<uint16_t>& {
      return t.size() == 1 ? t[0] : t[static_cast<size_t>(r)];
    };
    const size_t count = c.count;
    if (o.coll == Coll::ReduceScatter && count % static_cast<size_t>(n))
      throw PerfError("reduce_scatter: tensor of " + std::to_string(count) +
                      " elements does not divide by " + std::to_string(n) + " ranks");
    const size_t callCount = o.coll == Coll::ReduceScatter ? count / static_cast<size_t>(n)
                                                           : count;
    const size_t outCount = o.coll == Coll::AllGather ? count * static_cast<size_t>(n) : callCount;
    // A codec that refuses the count (not whole blocks): one clear error on every rank before
    // anything moves (the call would fail the same way, without the rows).
    size_t enc = 1;
    if (codecs.codec &&
        cocclCodecEncodedBytes(codecs.codec, callCount, cocclBfloat16, &enc) == cocclSuccess &&
        enc == 0) {
      size_t g = 0;
      cocclCodecBlockElems(codecs.codec, &g);
      std::string msg = "codec " + std::string(cocclCodecName(codecs.codec)) +
                        " refuses a count of " + std::to_string(callCount) +
                        " bfloat16 elements (step " + std::to_string(c.step) + " " + c.kind +
                        "): it takes whole blocks of " + std::to_string(g) + " elements only";
      if (c.row)
        msg += "; the tensors are " + std::to_string(count / c.row) + " rows of " +
               std::to_string(c.row) + " elements: give it rows of " + std::to_string(c.row) +
               " (tah:row=" + std::to_string(c.row) + ")";
      throw PerfError(msg);
    }
    std::vector<uint16_t> send(of(rk.rank)), recv(outCount);
    CallSpec cs;
    cs.coll = o.coll;
    cs.type = cocclBfloat16;
    cs.op = cocclSum;
    cs.mode = o.codecMode;
    cs.codec = codecs.callCodec();
    void* sendBuf = send.data();
    void* recvBuf = recv.data();
    if (dev) {
      cs.stream = dev->stream();
      sendBuf = dev->send();
      recvBuf = dev->recv();
      dev->upload(sendBuf, send.data(), send.size() * 2);
    }
    for (int w = 0; w < o.warmup; ++w) runColl(rk, cs, sendBuf, recvBuf, callCount);
    if (dev) dev->sync();
    rk.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    if (dev) dev->startTimer();
    for (int it = 0; it < o.iters; ++it) runColl(rk, cs, sendBuf, recvBuf, callCount);
    const double sec =
        (dev ? dev->stopTimerSeconds()
             : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) /
        o.iters;
    // Checked call into a NaN-filled output.
    std::fill(recv.begin(), recv.end(), uint16_t{0x7fc0});
    if (dev) dev->upload(recvBuf, recv.data(), recv.size() * 2);
    runColl(rk, cs, sendBuf, recvBuf, callCount);
    if (dev) dev->download(recv.data(), recvBuf, recv.size() * 2);
    cocclCollStats_t st{};
    CP_CHECK(cocclCommGetLastCollStats(rk.comm, &st), rk.comm);
    const std::string codecRan = st.codec ? st.codec : "?";
    const uint64_t wire = st.wireBytesSent;
    const size_t base = o.coll == Coll::ReduceScatter ? me * callCount : 0;
    CheckResult res;
    // #wrong: the codec's own bound (explicit --codec; a two-level entry: its two codecs'), as
    // the sweep counts it; --codec policy with one codec: the 0.15 * blockmax rule.
    const InputFn input = [&of](int r, size_t i) {
      return static_cast<double>(bf16ToFloat(of(r)[i]));
    };
    const CallSpec ran = hier.ran(rk, cs);
    const bool own = o.codecMode == CodecMode::Explicit && lossyWithBound(cs.codec);
    const bool twoLevel = ran.intra && ran.inter;
    // all_gather's shards and sendrecv's message: one encode and decode of rank src's tensor
    // (the codec's blocks start at the shard's first element).
    const auto checkCopy = [&](int src, const uint16_t* out) {
      const BoundFn bound = own ? codecBound(cs.codec, input, {src}, 0, count, 1, 1) : BoundFn();
      const std::vector<uint16_t>& x = of(src);
      return checkOutput(cocclBfloat16, out, count, [&](size_t b, size_t len, double* ref) {
        for (size_t k = 0; k < len; ++k) ref[k] = bf16ToFloat(x[b + k]);
      }, Rule::Bound, own ? &bound : nullptr);
    };
    if (o.coll == Coll::AllGather) {
      for (int s = 0; s < n; ++s)
        res.merge(checkCopy(s, recv.data() + static_cast<size_t>(s) * count));
    } else if (o.coll == Coll::SendRecv) {
      res = checkCopy((rk.rank - 1 + n) % n, recv.data());
    } else {
      std::vector<int> all(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) all[static_cast<size_t>(r)] = r;
      const BoundFn bound = twoLevel ? twoLevelBound(ran, input, all, base, callCount, n, 1)
                            : own    ? codecBound(cs.codec, input, all, base, callCount, n, 1)
                                     : BoundFn();
      res = checkOutput(cocclBfloat16, recv.data(), callCount, [&](size_t b, size_t len, double* ref) {
        for (size_t k = 0; k < len; ++k) {
          double acc = 0;
          for (int r = 0; r < n; ++r) acc += bf16ToFloat(of(r)[base + b + k]);
          ref[k] = acc;
        }
      }, Rule::Bound, twoLevel || own ? &bound : nullptr);
    }
    const uint64_t hash = hashBytes(recv.data(), recv.size() * 2);
    uint64_t wireNone = wire;
    if (o.codecMode != CodecMode::None) {
      CallSpec ns = cs;
      ns.mode = CodecMode::None;
      ns.codec = codecs.none;
      runColl(rk, ns, sendBuf, recvBuf, callCount);
      if (dev) dev->sync();
      CP_CHECK(cocclCommGetLastCollStats(rk.comm, &st), rk.comm);
      wireNone = st.wireBytesSent;
    }
    const double maxAbs = res.nonFinite ? std::numeric_limits<double>::quiet_NaN() : res.maxAbs;
    const std::vector<uint64_t> pk = {dbits(sec),      res.wrong,     dbits(res.errSq),
                                      dbits(res.refSq), dbits(maxAbs), hash, wire, wireNone};
    const std::vector<uint64_t> all = rk.allGather(pk);
    double errSq = 0, refSq = 0, mx = 0, time = o.average == 2 ? 1e300 : 0;
    uint64_t wrong = 0, wSum = 0, wNoneSum = 0;
    bool same = true;
    for (int r = 0; r < n; ++r) {
      const uint64_t* v = &all[static_cast<size_t>(r) * kSlots];
      errSq += bitsd(v[kErrSq]);
      refSq += bitsd(v[kRefSq]);
      const double m2 = bitsd(v[kMaxAbs]);
      mx = std::isnan(m2) || std::isnan(mx) ? m2 + mx : std::max(mx, m2);
      wrong += v[kWrong];
      wSum += v[kWire];
      wNoneSum += v[kWireNone];
      same = same && v[kHash] == all[kHash];
      const double tr = bitsd(v[kTime]);
      time = o.average == 0 ? bitsd(all[kTime]) : o.average == 1 ? time + tr / n
             : o.average == 2 ? std::min(time, tr) : std::max(time, tr);
    }
    const double rel = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
    const bool identApplies = o.coll == Coll::AllReduce || o.coll == Coll::AllGather;
    const double ratio = wSum ? static_cast<double>(wNoneSum) / static_cast<double>(wSum)
                              : std::numeric_limits<double>::quiet_NaN();
    rels.push_back(rel);
    wrongAll += wrong;
    // #wrong fails the run where the bound is a codec's own (documented); the 0.15 rule of
    // --codec policy only counts.
    if ((identApplies && !same) || !std::isfinite(rel) || (wrong && (own || twoLevel)))
      status = 1;
    if (rk.printer()) {
      const std::string layer = c.layer < 0 ? "-" : std::to_string(c.layer);
      std::printf("  %5d  %5s  %6s  %16s  %8zu  %9s  %9s  %6s  %10llu  %9s  %5s  %6llu\n",
                  c.step, layer.c_str(), c.module.c_str(), c.kind.c_str(), callCount,
                  fmtRel(rel, 9).c_str(), fmtRel(mx, 9).c_str(),
                  std::isfinite(ratio) ? fmtNum(ratio, 6).c_str() : "-",
                  static_cast<unsigned long long>(wSum), fmtNum(time * 1e6, 9).c_str(),
                  identApplies ? (same ? "1" : "0") : "-", static_cast<unsigned long long>(wrong));
      std::fflush(stdout);
      using J = nlohmann::json;
      if (!json.is_null())
        json["cases"].push_back({{"step", c.step}, {"layer", c.layer < 0 ? J() : J(c.layer)},
                                 {"module", c.module}, {"kind", c.kind}, {"count", callCount},
                                 {"row", c.row ? J(c.row) : J()},
                                 {"rel_l2", rel}, {"max_abs_err", mx}, {"ratio", ratio},
                                 {"time_us", time * 1e6},
                                 {"ident", identApplies ? J(same) : J()},
                                 {"wrong", wrong}, {"codec", codecRan}, {"wire_bytes", wSum},
                                 {"wire_bytes_uncompressed", wNoneSum}});
    }
  }
  if (rk.printer()) {
    double mean = 0, mx = 0;
    for (double r : rels) mean += r / static_cast<double>(rels.size()), mx = std::max(mx, r);
    const double med = median(rels);
    std::printf("# relL2 over %zu cases: median %.4e  mean %.4e  max %.4e\n", rels.size(), med,
                mean, mx);
    std::printf("# #wrong over %zu cases: %llu\n", rels.size(),
                static_cast<unsigned long long>(wrongAll));
    std::printf("# Result: %s\n", status ? "FAILED (non-identical outputs, a non-finite error or "
                                           "#wrong under a codec's own bound)"
                                         : "OK");
    std::fflush(stdout);
    if (!json.is_null()) {
      json["summary"] = {{"cases", rels.size()}, {"format", m.format},
                         {"rel_l2_median", med}, {"rel_l2_mean", mean},
                         {"rel_l2_max", mx},     {"wrong", wrongAll},
                         {"okay", status == 0}};
      if (!writeJsonFile(o.jsonFile, json)) status = 1;
    }
  }
  return status;
}

}  // namespace cocclperf
