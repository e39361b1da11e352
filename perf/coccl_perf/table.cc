// Table printing and JSON of coccl_perf (see table.h).
#include "table.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "coccl.h"
#include "dtype.h"

extern char** environ;

namespace cocclperf {
namespace {

const char* kWrongRule =
    "exact paths: out != fp64 reference (avg: > 1 ulp of the type for floats, >= 1 for "
    "integers); compressed all_reduce/reduce_scatter: |out - ref| > 0.15 * max|ref| over the "
    "element's aligned 128-element block + 1e-6; compressed all_gather: |out - in| > 0.15 * "
    "max|in| over the block + 1e-6; NaN always wrong";
const char* kRatioMethod =
    "ratio = sum over ranks of wireBytesSent of one out-of-place call with the 'none' codec / sum "
    "over ranks of wireBytesSent of the measured out-of-place call (cocclCommGetLastCollStats)";

nlohmann::json jnum(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json placeJson(const PlaceStats& p, bool checked) {
  nlohmann::json j = {{"time", p.timeUs}, {"alg_bw", p.algBw}, {"bus_bw", p.busBw}};
  j["wrong"] = checked ? nlohmann::json(p.wrong) : nlohmann::json();
  j["rel_l2"] = checked ? jnum(p.relL2) : nlohmann::json();
  j["max_abs_err"] = checked ? jnum(p.maxAbs) : nlohmann::json();
  j["ident"] = p.ident < 0 ? nlohmann::json() : nlohmann::json(p.ident == 1);
  return j;
}

std::string isoTime() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string fmtNum(double v, int width) {
  char buf[64];
  const char* fmts[] = {"%*.2f", "%*.1f", "%*.0f"};
  for (const char* f : fmts)
    if (std::snprintf(buf, sizeof(buf), f, width, v) <= width) return buf;
  std::snprintf(buf, sizeof(buf), width >= 7 ? "%*.1e" : "%*.0e", width, v);
  return buf;
}

std::string fmtRel(double v, int width) {
  char buf[64];
  if (std::isnan(v)) std::snprintf(buf, sizeof(buf), "%*s", width, "nan");
  else std::snprintf(buf, sizeof(buf), "%*.2e", width, v);
  return buf;
}

nlohmann::json runMetadata(const Options& o, const RunInfo& info) {
  int version = 0;
  cocclGetVersion(&version);
  nlohmann::json j;
  j["tool"] = "coccl_perf";
  j["coccl_header_version"] = COCCL_VERSION_CODE;
  j["coccl_library_version"] = version;
  j["command_line"] = o.commandLine;
  j["collective"] = collName(o.coll);
  j["start_time"] = isoTime();
  nlohmann::json c;
  c["nranks"] = info.nranks;
  c["nprocs"] = info.launch.nProcs;
  c["nthreads"] = info.nThreads;
  c["ngpus"] = o.nGpus;
  c["launcher"] = info.launch.launcher;
  if (info.launch.processMode) {
    c["comm_id"] = info.launch.commId;
    c["comm_id_source"] = info.launch.commIdSource;
  }
  c["minimum_bytes"] = o.minBytes;
  c["maximum_bytes"] = o.maxBytes;
  if (o.stepFactor > 1) c["step_factor"] = o.stepFactor;
  else c["step_bytes"] = o.stepBytes;
  c["warmup_iters"] = o.warmup;
  c["iterations"] = o.iters;
  c["aggregated_iterations"] = o.aggIters;
  c["validation"] = o.check;
  c["average"] = o.average;
  c["blocking"] = o.blocking;
  c["root"] = o.root;
  c["memory"] = o.mem;
  nlohmann::json types = nlohmann::json::array(), ops = nlohmann::json::array();
  for (cocclDataType_t t : o.types) types.push_back(typeInfo(t).name);
  for (cocclRedOp_t op : o.ops) ops.push_back(opName(op));
  c["datatypes"] = types;
  c["ops"] = ops;
  c["codec"] = {{"spec", o.codec},
                {"canonical", info.codecCanonical},
                {"mode", o.codecMode == CodecMode::Policy     ? "policy (plain calls)"
                         : o.codecMode == CodecMode::Explicit ? "explicit (coccl*Codec)"
                                                              : "none (coccl*Codec, exact)"}};
  if (!o.input.empty()) c["input"] = o.input;
  j["config"] = c;
  j["wrong_rule"] = kWrongRule;
  j["ratio_method"] = kRatioMethod;
  j["rel_l2"] = "||out - ref||_2 / ||ref||_2 in fp64 over all elements of all ranks";
  nlohmann::json env = nlohmann::json::object();
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const size_t eq = kv.find('=');
    if (kv.rfind("COCCL_", 0) == 0 && eq != std::string::npos)
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  j["env"] = env;
  nlohmann::json devs = nlohmann::json::array();
  for (const DeviceLine& d : info.devices)
    devs.push_back({{"rank", d.rank}, {"pid", d.pid}, {"hostname", d.host}, {"device", d.device}});
  j["devices"] = devs;
  return j;
}

bool writeJsonFile(const std::string& path, const nlohmann::json& j) {
  std::ofstream f(path);
  if (f) f << j.dump(1) << "\n";
  if (!f) {
    std::fprintf(stderr, "coccl_perf: cannot write JSON to %s\n", path.c_str());
    return false;
  }
  std::printf("# Wrote JSON output to %s\n", path.c_str());
  return true;
}

Table::Table(const Options& o, const RunInfo& info) : o_(o), info_(info) {
  if (!o.jsonFile.empty()) {
    json_ = runMetadata(o, info);
    json_["results"] = nlohmann::json::array();
  }
}

void Table::header() {
  int version = 0;
  cocclGetVersion(&version);
  const Launch& l = info_.launch;
  std::printf("# coccl_perf coccl-headers=%d coccl-library=%d\n", COCCL_VERSION_CODE, version);
  std::printf("# Collective test starting: coccl_perf %s\n", collName(o_.coll));
  std::printf("# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d "
              "iters: %d agg iters: %d validation: %d graph: 0\n",
              info_.nThreads, o_.nGpus, o_.minBytes, o_.maxBytes,
              o_.stepFactor > 1 ? o_.stepFactor : o_.stepBytes,
              o_.stepFactor > 1 ? "factor" : "bytes", o_.warmup, o_.iters, o_.aggIters,
              o_.check ? 1 : 0);
  std::printf("# Ranks: %d (%d process%s x %d thread%s, launcher %s%s%s)  memory: %s  "
              "time: %s over ranks\n",
              info_.nranks, l.nProcs, l.nProcs > 1 ? "es" : "", info_.nThreads,
              info_.nThreads > 1 ? "s" : "", l.launcher.c_str(),
              l.processMode ? ", COCCL_COMM_ID=" : "", l.processMode ? l.commId.c_str() : "",
              o_.mem.c_str(),
              o_.average == 0 ? "rank 0" : o_.average == 1 ? "mean" : o_.average == 2 ? "min"
                                                                                      : "max");
  if (o_.codecMode == CodecMode::Policy) {
    const char* file = std::getenv("COCCL_POLICY");
    if (file && *file)
      std::printf("# Codec: policy (plain calls; the rules of COCCL_POLICY=%s, then COCCL_CODEC* "
                  "and COCCL_COMPRESS_MIN_BYTES decide)\n", file);
    else
      std::printf("# Codec: policy (plain calls; COCCL_CODEC* and COCCL_COMPRESS_MIN_BYTES "
                  "decide)\n");
  }
  else
    std::printf("# Codec: %s%s\n", info_.codecCanonical.c_str(),
                o_.codecMode == CodecMode::None ? " (exact path)" : " (every size)");
  if (collTakesCodec(o_.coll))
    std::printf("# ratio = wire bytes of the call with codec none / wire bytes of the call "
                "(summed over ranks)\n");
  std::printf("#\n# Using devices\n");
  for (const DeviceLine& d : info_.devices)
    std::printf("#  Rank %2d Group  0 Pid %6d on %10s device %2d %s\n", d.rank, d.pid,
                d.host.c_str(), d.device, d.device >= 0 ? "[cuda] device memory" : "[host] host memory");
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place"
              "          \n", "", "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %10s  %6s"
              "  %9s  %5s\n", "size", "count", "type", "redop", "root", "time", "algbw",
              "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "codec", "ratio", "relL2",
              "ident");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %10s  %6s"
              "  %9s  %5s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
              "(us)", "(GB/s)", "(GB/s)", "", "", "", "", "");
  std::fflush(stdout);
}

void Table::row(const Row& r) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", r.bytes, r.count, r.type.c_str(), r.op.c_str(),
              r.root);
  for (const PlaceStats* p : {&r.oop, &r.ip}) {
    std::printf("  %7s  %6s  %6s", fmtNum(p->timeUs, 7).c_str(), fmtNum(p->algBw, 6).c_str(),
                fmtNum(p->busBw, 6).c_str());
    if (r.checked) std::printf("  %6g", static_cast<double>(p->wrong));
    else std::printf("  %6s", "N/A");
    bwSum_ += p->busBw;
    ++bwCount_;
    if (r.checked) wrong_ += p->wrong;
  }
  std::string codec = r.codec.substr(0, r.codec.find(':'));
  if (codec.size() > 10) codec.resize(10);
  const int ident = r.oop.ident < 0 || r.ip.ident < 0 ? -1 : std::min(r.oop.ident, r.ip.ident);
  if (ident == 0) ++identFail_;
  std::printf("  %10s  %6s  %9s  %5s\n", codec.c_str(),
              std::isfinite(r.ratio) ? fmtNum(r.ratio, 6).c_str() : "-",
              r.checked ? fmtRel(r.oop.relL2, 9).c_str() : "N/A",
              ident < 0 ? "-" : ident ? "1" : "0");
  if (!r.phases.empty()) {
    static const char* const kNames[] = {"agree",     "push_wait", "push",  "own_wait", "own",
                                         "pull_wait", "pull",      "total", "rounds",   "blocks"};
    std::printf("#  phases (us a call, one block):");
    for (size_t i = 0; i < r.phases.size() && i < 10; ++i)
      std::printf(" %s %.1f", kNames[i], r.phases[i]);
    std::printf("\n");
  }
  std::fflush(stdout);
  if (json_.is_null()) return;
  nlohmann::json j = {{"size", r.bytes},   {"count", r.count},     {"type", r.type},
                      {"redop", r.op},     {"root", r.root},       {"codec", r.codec},
                      {"algorithm", r.algorithm}, {"algorithm_uncompressed", r.algorithmNone},
                      {"ratio", jnum(r.ratio)},
                      {"wire_bytes", r.wireBytes}, {"wire_bytes_uncompressed", r.wireBytesNone},
                      {"logical_bytes", r.logicalBytes}};
  j["out_of_place"] = placeJson(r.oop, r.checked);
  j["in_place"] = placeJson(r.ip, r.checked);
  j["ident"] = ident < 0 ? nlohmann::json() : nlohmann::json(ident == 1);
  if (!r.phases.empty()) j["phases_us"] = r.phases;  // cocclPhase_t order, rounds, blocks
  json_["results"].push_back(j);
}

void Table::footer() {
  const double avgBw = bwCount_ ? bwSum_ / bwCount_ : 0.0;
  std::printf("# %-20s : %lld %s\n", "Out of bounds values", static_cast<long long>(wrong_),
              wrong_ ? "FAILED" : "OK");
  std::printf("# %-20s : %g \n", "Avg bus bandwidth", avgBw);
  std::printf("# %-20s : %s\n", "Identical outputs",
              identFail_ ? (std::to_string(identFail_) + " rows FAILED").c_str() : "OK");
  std::printf("#\n# Collective test concluded: coccl_perf %s\n", collName(o_.coll));
  std::fflush(stdout);
  if (json_.is_null()) return;
  json_["out_of_bounds"] = {{"count", wrong_}, {"okay", wrong_ == 0}};
  json_["average_bus_bandwidth"] = {{"bandwidth", avgBw}};
  json_["identical_outputs"] = {{"failed_rows", identFail_}, {"okay", identFail_ == 0}};
}

bool Table::writeJson() {
  if (json_.is_null()) return true;
  return writeJsonFile(o_.jsonFile, json_);
}

}  // namespace cocclperf
