// Command line parsing (CLI11) and the --help text of coccl_perf.
#include "args.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "devmem.h"
#include "dtype.h"

namespace cocclperf {
namespace {

const char* kFooter = R"(
COLLECTIVE: all_reduce | reduce_scatter | all_gather | broadcast | reduce | sendrecv

RANKS
  -t N runs N ranks as threads of this process (the unique id is shared in-process).
  Process mode: launched by mpirun (OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/PMI_SIZE) or with
  torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); each process then runs
  -t threads and rank = process * nThreads + thread. MPI is not used: every rank calls
  cocclCommInitRank with COCCL_COMM_ID=host:port, taken from the environment if set, else set to
  MASTER_ADDR:MASTER_PORT, else (mpirun on one node) to 127.0.0.1:<port derived from the job id,
  OMPI_MCA_ess_base_jobid / PMIX_NAMESPACE / SLURM_JOB_ID>. Under real torchrun, whose own store
  listens on MASTER_PORT, set COCCL_COMM_ID to another port. Only rank 0 prints. Cross-rank
  aggregation (times, #wrong, errors, output hashes) goes through coccl itself (AllGather of
  uint64, the exact path).

SIZES
  From -b to -e, times -f when -f > 1, else plus -i. "size" is max(send, recv) bytes of one rank
  (as nccl-tests). all_reduce/broadcast/reduce/sendrecv: count = size / eltsize; reduce_scatter
  (recvcount) and all_gather (sendcount): count = size / eltsize / nranks, not rounded (coccl
  takes any count). Rows whose count is 0 are skipped.

TIMING
  Per size and placement: inputs generated, -w warm-up calls, then -n timed iterations of -m
  calls (grouped by cocclGroupStart/End when -m > 1); host wall clock per rank, combined over
  ranks by -a (0 rank 0, 1 mean, 2 min, 3 max). algbw = size / time; busbw = algbw * factor:
  all_reduce 2(n-1)/n, reduce_scatter and all_gather (n-1)/n, broadcast, reduce, sendrecv 1.
  In-place timing reuses its buffer like nccl-tests (values may grow from call to call).

CHECKING (-c 1)
  After timing, inputs are generated again (seeded, deterministic, different per rank), outputs
  are pre-filled with NaN (integer types: a value no input produces) and one call is checked
  against an fp64 reference computed by the tool.
  Exact paths (--codec none, and every op/type/collective a codec does not compress): inputs are
  small integers whose sums and products are exact in the type, so #wrong counts real
  mismatches: out != ref; for avg, more than 1 ulp of the type from sum/n (floats) or
  |out - sum/n| >= 1 (integers).
  Compressed paths (--codec other than none, on all_reduce and reduce_scatter with sum/avg and
  on all_gather and sendrecv, for float/half/bfloat16): inputs are standard normal samples
  rounded to the type. With an explicit lossy --codec an element counts as #wrong if
  |out - ref| exceeds q times the codec's own bound (cocclCodecErrorBound) for the statistics
  of sum_r |input_r| over its codec block (q = nranks for all_reduce / reduce_scatter, 1 for
  all_gather and sendrecv, whose sum is the one source rank's input; divided by nranks for avg;
  perf/coccl_perf/README.md); with --codec policy, a call that ran a two-level entry
  (hier:intra=A,inter=B) by the sum of its two codecs' bounds (README), any other if
      all_reduce, reduce_scatter:  |out - ref| > 0.15 * max|ref| over its block + 1e-6
      all_gather, sendrecv:        |out - in|  > 0.15 * max|in|  over its block + 1e-6
  its block being the 128 aligned elements that contain it (element index / 128, counted from
  the start of the rank's output for all_reduce/reduce_scatter and from the start of the source
  rank's shard for all_gather). A NaN output is always wrong.

EXTRA COLUMNS
  codec  the codec that ran (cocclCommGetLastCollStats on rank 0, out-of-place checked call);
         the full spec is in the header.
  ratio  compression ratio = wire bytes of the same collective uncompressed / wire bytes it
         sent, both summed over ranks from cocclCommGetLastCollStats. The uncompressed figure is
         measured by one extra out-of-place call with the "none" codec (same chunking; the
         exact path's algorithm: COCCL_ALGO=one-shot applies to compressed calls only, so its
         ratio is below the payload ratio beyond 2 ranks). 1.00 on exact paths; "-" when
         nothing went on the wire (1 rank).
  relL2  ||out - ref||_2 / ||ref||_2 in fp64 over every element of every rank, out-of-place.
  ident  1 if every rank's output is bitwise identical (all_reduce, all_gather, broadcast; both
         placements), else 0; "-" for the other collectives.

REAL-DATA MODE (--input MANIFEST)
  MANIFEST lists bf16 tensors (file relative to the manifest's folder) in one of two formats.
  tp_tensors (offset, nbytes, step, layer, module, kind, tp_rank, tp_size; shared/data/README.md):
  the world size must equal tp_size (-t defaults to it) and for each case (step, layer, module,
  kind) rank r uses tp_rank r's tensor. pp_activations (tests/data/pp_activations/manifest.json:
  step, kind, rows, row; offset, nbytes, layer, module optional): each entry is a case whose
  tensor every rank uses, any world size (-t defaults to 2). all_reduce sums the tensors (bf16,
  sum) and compares with the exact fp64 sum; reduce_scatter uses them as sendbuff and checks the
  rank's shard; all_gather gathers them and checks every shard against the original; sendrecv
  sends each rank's tensor to rank+1 and checks the received one against rank-1's. One row per
  case (relL2, max abs error, ratio, wire bytes, time, ident, #wrong by the rule above), then
  median, mean and max relL2 and the total #wrong; #wrong > 0 under a codec's own bound fails
  the run. A codec that refuses a tensor's count (tah on partial rows) is an error; pass
  tah:row=<hidden size> (384 for tests/data/pp_activations).

EXIT STATUS
  0 when every call succeeded, #wrong is 0 everywhere and every ident is 1; 1 otherwise; API
  errors print cocclGetErrorString and cocclGetLastError.
)";

bool parseCollName(std::string s, Coll* c) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char x) { return std::tolower(x); });
  if (s.size() > 5 && s.compare(s.size() - 5, 5, "_perf") == 0) s.resize(s.size() - 5);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  const struct {
    const char* name;
    Coll coll;
  } names[] = {{"allreduce", Coll::AllReduce}, {"reducescatter", Coll::ReduceScatter},
               {"allgather", Coll::AllGather}, {"broadcast", Coll::Broadcast},
               {"bcast", Coll::Broadcast},     {"reduce", Coll::Reduce},
               {"sendrecv", Coll::SendRecv}};
  for (const auto& n : names)
    if (s == n.name) return *c = n.coll, true;
  return false;
}

bool parseOps(const std::string& s, std::vector<cocclRedOp_t>* ops) {
  const cocclRedOp_t all[] = {cocclSum, cocclProd, cocclMax, cocclMin, cocclAvg};
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::transform(item.begin(), item.end(), item.begin(),
                   [](unsigned char x) { return std::tolower(x); });
    if (item == "all") {
      ops->insert(ops->end(), std::begin(all), std::end(all));
      continue;
    }
    bool found = false;
    for (cocclRedOp_t op : all)
      if (item == opName(op)) ops->push_back(op), found = true;
    if (!found) return false;
  }
  return !ops->empty();
}

bool parseTypes(const std::string& s, std::vector<cocclDataType_t>* types) {
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "all") {
      int n = 0;
      const cocclDataType_t* all = allTypes(&n);
      types->insert(types->end(), all, all + n);
      continue;
    }
    cocclDataType_t t;
    if (!parseTypeName(item, &t)) return false;
    types->push_back(t);
  }
  return !types->empty();
}

}  // namespace

const char* collName(Coll c) {
  switch (c) {
    case Coll::AllReduce: return "all_reduce";
    case Coll::ReduceScatter: return "reduce_scatter";
    case Coll::AllGather: return "all_gather";
    case Coll::Broadcast: return "broadcast";
    case Coll::Reduce: return "reduce";
    case Coll::SendRecv: return "sendrecv";
  }
  return "?";
}

bool collHasOp(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce;
}
bool collHasRoot(Coll c) { return c == Coll::Broadcast || c == Coll::Reduce; }
bool collTakesCodec(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::AllGather ||
         c == Coll::SendRecv;
}

const char* opName(cocclRedOp_t op) {
  switch (op) {
    case cocclSum: return "sum";
    case cocclProd: return "prod";
    case cocclMax: return "max";
    case cocclMin: return "min";
    case cocclAvg: return "avg";
    default: return "?";
  }
}

bool parseSize(const std::string& s, size_t* bytes) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  std::string suffix(end);
  std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                 [](unsigned char x) { return std::toupper(x); });
  double mult = 1;
  if (!suffix.empty() && (suffix[0] == 'K' || suffix[0] == 'M' || suffix[0] == 'G')) {
    mult = suffix[0] == 'K' ? 1024.0 : suffix[0] == 'M' ? 1048576.0 : 1073741824.0;
    suffix.erase(0, 1);
    if (suffix == "IB") suffix.clear();
  }
  if (suffix == "B") suffix.clear();
  if (end == s.c_str() || !suffix.empty() || !(v >= 0) || v * mult > 1e18) return false;
  *bytes = static_cast<size_t>(std::llround(v * mult));
  return true;
}

int parseArgs(int argc, char** argv, Options* o) {
  for (int i = 0; i < argc; ++i) o->commandLine += (i ? " " : "") + std::string(argv[i]);

  CLI::App app{
      "coccl_perf: nccl-tests-style bandwidth sweep and verification of coccl collectives, with "
      "error columns for compressed codecs.",
      "coccl_perf"};
  app.get_formatter()->column_width(34);
  app.footer(kFooter);
  std::string coll, minB = "32M", maxB = "32M", stepB = "1M", type = "float", op = "sum",
                    root = "0";
  int threads = 1;
  app.add_option("collective", coll, "all_reduce, reduce_scatter, all_gather, broadcast, "
                                     "reduce or sendrecv")
      ->required();
  app.add_option("-b,--minbytes", minB, "minimum size in bytes (K/M/G suffixes)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", maxB, "maximum size in bytes")->capture_default_str();
  app.add_option("-i,--stepbytes", stepB, "size increment when -f is 1")->capture_default_str();
  app.add_option("-f,--stepfactor", o->stepFactor, "size multiplication factor")
      ->capture_default_str();
  app.add_option("-n,--iters", o->iters, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", o->warmup, "warm-up iterations per size")
      ->capture_default_str();
  app.add_option("-m,--agg_iters", o->aggIters, "calls per iteration (grouped)")
      ->capture_default_str();
  app.add_option("-c,--check", o->check, "check results: 0 or 1 (more counts as 1)")
      ->capture_default_str();
  app.add_option("-d,--datatype", type,
                 "float, half, bfloat16, double, int8, uint8, int32, uint32, int64, uint64, "
                 "f8e4m3, f8e5m2 (aliases: char, int, fp16, bf16, fp32, ...), a list a,b, or all")
      ->capture_default_str();
  app.add_option("-o,--op", op, "sum, prod, max, min, avg, a list, or all")
      ->capture_default_str();
  app.add_option("-r,--root", root, "root rank of broadcast/reduce, or all")
      ->capture_default_str();
  auto* topt = app.add_option("-t,--nthreads", threads, "ranks as threads of this process");
  app.add_option("-g,--ngpus", o->nGpus, "GPUs per thread (only 1)")->capture_default_str();
  app.add_option("-z,--blocking", o->blocking,
                 "accepted for nccl-tests compatibility (host calls always block)")
      ->capture_default_str();
  app.add_option("-a,--average", o->average,
                 "time over ranks: 0 rank 0, 1 mean, 2 min, 3 max")
      ->capture_default_str();
  app.add_option("--mem", o->mem,
                 "buffer memory: host, or device (cudaMalloc'd, calls on a stream, timed with "
                 "CUDA events; needs a CUDA build)")
      ->capture_default_str();
  app.add_option("--data", o->data,
                 "inputs: auto (standard normals for calls a lossy codec may take, small "
                 "integers otherwise) or zero (every element 0, as nccl-tests -c 0 times fresh "
                 "buffers; a lossy codec's speed depends on the data)")
      ->capture_default_str();
  app.add_option("--alloc", o->alloc,
                 "--mem device buffers from cudaMalloc or ncclMemAlloc (cuMem memory from the "
                 "libnccl.so.2 found at run time, as nccl-tests >= 2.19 allocates)")
      ->capture_default_str();
  app.add_option("--codec", o->codec,
                 "codec spec for all_reduce/reduce_scatter/all_gather/sendrecv (none, int8, "
                 "fp8_ash_ds, "
                 "fp8_ash_ds:block=64, ...) or 'policy' (plain calls, COCCL_CODEC* decides)")
      ->capture_default_str();
  app.add_option("--json,-J,--output_file", o->jsonFile, "write every row and run metadata");
  app.add_flag("--phases", o->phases,
               "--mem device over CUDA IPC: after each row, a '#' line with the collective "
               "kernels' phase times of the out-of-place calls (us a call, one block's, mean of "
               "the ranks; cocclCommGetPhaseTimes); sets COCCL_PHASE_TIMES=1");
  app.add_option("--input", o->input,
                 "real-data mode: a tp_tensors or pp_activations manifest (JSON)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (!parseCollName(coll, &o->coll)) {
    std::fprintf(stderr, "coccl_perf: unknown collective '%s'\n", coll.c_str());
    return 1;
  }
  if (!parseSize(minB, &o->minBytes) || !parseSize(maxB, &o->maxBytes) ||
      !parseSize(stepB, &o->stepBytes)) {
    std::fprintf(stderr, "coccl_perf: invalid size in -b/-e/-i\n");
    return 1;
  }
  if (o->minBytes > o->maxBytes) {
    std::fprintf(stderr, "coccl_perf: invalid sizes for 'minbytes' and 'maxbytes': %zu > %zu\n",
                 o->minBytes, o->maxBytes);
    return 1;
  }
  if (o->stepFactor <= 1 && o->stepBytes == 0) {
    std::fprintf(stderr, "coccl_perf: -i must be > 0 when -f is 1\n");
    return 1;
  }
  if (!parseTypes(type, &o->types)) {
    std::fprintf(stderr, "coccl_perf: invalid datatype '%s'\n", type.c_str());
    return 1;
  }
  if (!parseOps(op, &o->ops)) {
    std::fprintf(stderr, "coccl_perf: invalid op '%s'\n", op.c_str());
    return 1;
  }
  if (root == "all") {
    o->root = -1;
  } else {
    char* end = nullptr;
    o->root = static_cast<int>(std::strtol(root.c_str(), &end, 0));
    if (end == root.c_str() || *end || o->root < -1) {
      std::fprintf(stderr, "coccl_perf: invalid root '%s'\n", root.c_str());
      return 1;
    }
  }
  o->threadsGiven = topt->count() > 0;
  o->nThreads = threads;
  if (o->nThreads < 1 || o->iters < 1 || o->warmup < 0 || o->aggIters < 1) {
    std::fprintf(stderr, "coccl_perf: -t, -n and -m must be >= 1, -w >= 0\n");
    return 1;
  }
  if (o->nGpus != 1) {
    std::fprintf(stderr, "coccl_perf: -g %d: only one GPU (or host rank) per thread is supported; "
                         "use -t for more ranks\n", o->nGpus);
    return 1;
  }
  if (o->average < 0 || o->average > 3) {
    std::fprintf(stderr, "coccl_perf: -a must be 0, 1, 2 or 3\n");
    return 1;
  }
  if (o->mem != "host" && o->mem != "device") {
    std::fprintf(stderr, "coccl_perf: --mem must be host or device\n");
    return 1;
  }
  if (o->data != "auto" && o->data != "zero") {
    std::fprintf(stderr, "coccl_perf: --data must be auto or zero\n");
    return 1;
  }
  if (o->alloc != "cudaMalloc" && o->alloc != "ncclMemAlloc") {
    std::fprintf(stderr, "coccl_perf: --alloc must be cudaMalloc or ncclMemAlloc\n");
    return 1;
  }
  if (o->mem == "device" && !deviceSupport()) {
    std::fprintf(stderr, "coccl_perf: --mem device: device memory needs a CUDA build (this "
                         "coccl_perf is host-only)\n");
    return 1;
  }
  if (o->phases) {
    if (o->mem != "device") {
      std::fprintf(stderr, "coccl_perf: --phases needs --mem device\n");
      return 1;
    }
    setenv("COCCL_PHASE_TIMES", "1", 1);  // before coccl reads its environment
  }
  if (o->codec.empty() || o->codec == "none") {
    o->codec = "none";
    o->codecMode = CodecMode::None;
  } else if (o->codec == "policy") {
    o->codecMode = CodecMode::Policy;
  } else {
    o->codecMode = CodecMode::Explicit;
  }
  return -1;
}

}  // namespace cocclperf
