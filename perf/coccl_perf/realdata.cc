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
      RealCase& c = m->cases[it->second];
      TensorRef& tr = c.tensors[static_cast<size_t>(tpRank)];
      if (tr.nbytes) return *err = "manifest: two tensors for one case and tp_rank", false;
      const std::string file = t.at("file").get<std::string>();
      tr.file = !file.empty() && file[0] == '/' ? file : dir + file;
      tr.offset = t.at("offset").get<size_t>();
      tr.nbytes = t.at("nbytes").get<size_t>();
      if (tr.nbytes == 0 || tr.nbytes % 2) return *err = "manifest: bad nbytes", false;
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
    throw PerfError(std::string("real-data mode runs all_reduce, reduce_scatter or all_gather, "
                                "not ") + collName(o.coll));
  if (rk.nranks != m.tpSize)
    throw PerfError("world size " + std::to_string(rk.nranks) + " != manifest tp_size " +
                    std::to_string(m.tpSize));
  RankCodecs codecs(o);
  TwoLevelCodecs hier;
  const RunInfo info = gatherRunInfo(rk, o, l, codecs);
  const int n = rk.nranks;
  const size_t me = static_cast<size_t>(rk.rank);
  nlohmann::json json;
  if (rk.printer()) {
    std::printf("# coccl_perf real-data mode: %s of %zu cases from %s (bfloat16%s), %d ranks "
                "(%s)\n", collName(o.coll), m.cases.size(), m.path.c_str(),
                o.coll == Coll::AllGather ? "" : ", sum", n, info.launch.launcher.c_str());
    std::printf("# Codec: %s   warmup iters: %d iters: %d   time: %s over ranks\n",
                info.codecCanonical.c_str(), o.warmup, o.iters,
                o.average == 0 ? "rank 0" : o.average == 1 ? "mean" : o.average == 2 ? "min"
                                                                                    : "max");
    std::printf("# relL2 and max abs err vs the exact fp64 %s; #wrong by the codec's bound (a "
                "two-level entry: the sum of its codecs'; --codec policy with one codec: the "
                "0.15 * blockmax rule; --help); ratio = wire bytes with codec none / wire "
                "bytes\n#\n",
                o.coll == Coll::AllGather ? "inputs" : "sum of the tp_size tensors");
    std::printf("# %5s  %5s  %6s  %16s  %8s  %9s  %9s  %6s  %9s  %5s  %6s\n", "step", "layer",
                "module", "kind", "count", "relL2", "maxabserr", "ratio", "time(us)", "ident",
                "#wrong");
    if (!o.jsonFile.empty()) json = runMetadata(o, info), json["cases"] = nlohmann::json::array();
  }
  std::vector<double> rels;
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
    std::vector<std::vector<uint16_t>> t(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) t[static_cast<size_t>(r)] = readTensor(c.tensors[static_cast<size_t>(r)]);
    const size_t count = c.count;
    if (o.coll == Coll::ReduceScatter && count % static_cast<size_t>(n))
      throw PerfError("reduce_scatter: tensor of " + std::to_string(count) +
                      " elements does not divide by " + std::to_string(n) + " ranks");
    const size_t callCount = o.coll == Coll::AllReduce ? count : o.coll == Coll::ReduceScatter
                                                                     ? count / static_cast<size_t>(n)
                                                                     : count;
    const size_t outCount = o.coll == Coll::AllGather ? count * static_cast<size_t>(n) : callCount;
    std::vector<uint16_t> send(t[me]), recv(outCount);
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
    const InputFn input = [&t](int r, size_t i) {
      return static_cast<double>(bf16ToFloat(t[static_cast<size_t>(r)][i]));
    };
    const CallSpec ran = hier.ran(rk, cs);
    const bool own = o.codecMode == CodecMode::Explicit && lossyWithBound(cs.codec);
    if (o.coll == Coll::AllGather) {
      for (size_t s = 0; s < static_cast<size_t>(n); ++s) {
        const BoundFn bound =
            own ? codecBound(cs.codec, input, {static_cast<int>(s)}, 0, count, 1, 1) : BoundFn();
        res.merge(checkOutput(cocclBfloat16, recv.data() + s * count, count,
                              [&](size_t b, size_t len, double* ref) {
                                for (size_t k = 0; k < len; ++k) ref[k] = bf16ToFloat(t[s][b + k]);
                              }, Rule::Bound, own ? &bound : nullptr));
      }
    } else {
      std::vector<int> all(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) all[static_cast<size_t>(r)] = r;
      const bool twoLevel = ran.intra && ran.inter;
      const BoundFn bound = twoLevel ? twoLevelBound(ran, input, all, base, callCount, n, 1)
                            : own    ? codecBound(cs.codec, input, all, base, callCount, n, 1)
                                     : BoundFn();
      res = checkOutput(cocclBfloat16, recv.data(), callCount, [&](size_t b, size_t len, double* ref) {
        for (size_t k = 0; k < len; ++k) {
          double acc = 0;
          for (int r = 0; r < n; ++r) acc += bf16ToFloat(t[static_cast<size_t>(r)][base + b + k]);
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
    const bool identApplies = o.coll != Coll::ReduceScatter;
    const double ratio = wSum ? static_cast<double>(wNoneSum) / static_cast<double>(wSum)
                              : std::numeric_limits<double>::quiet_NaN();
    rels.push_back(rel);
    if ((identApplies && !same) || !std::isfinite(rel)) status = 1;
    if (rk.printer()) {
      std::printf("  %5d  %5d  %6s  %16s  %8zu  %9s  %9s  %6s  %9s  %5s  %6llu\n", c.step,
                  c.layer, c.module.c_str(), c.kind.c_str(), callCount, fmtRel(rel, 9).c_str(),
                  fmtRel(mx, 9).c_str(), std::isfinite(ratio) ? fmtNum(ratio, 6).c_str() : "-",
                  fmtNum(time * 1e6, 9).c_str(), identApplies ? (same ? "1" : "0") : "-",
                  static_cast<unsigned long long>(wrong));
      std::fflush(stdout);
      if (!json.is_null())
        json["cases"].push_back({{"step", c.step}, {"layer", c.layer}, {"module", c.module},
                                 {"kind", c.kind}, {"count", callCount}, {"rel_l2", rel},
                                 {"max_abs_err", mx}, {"ratio", ratio}, {"time_us", time * 1e6},
                                 {"ident", identApplies ? nlohmann::json(same) : nlohmann::json()},
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
    std::printf("# Result: %s\n", status ? "FAILED (non-identical outputs or non-finite error)"
                                         : "OK");
    std::fflush(stdout);
    if (!json.is_null()) {
      json["summary"] = {{"cases", rels.size()}, {"rel_l2_median", med},
                         {"rel_l2_mean", mean},  {"rel_l2_max", mx},
                         {"okay", status == 0}};
      if (!writeJsonFile(o.jsonFile, json)) status = 1;
    }
  }
  return status;
}

}  // namespace cocclperf
