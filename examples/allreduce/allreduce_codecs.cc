// Per-call codecs from C++: one communicator, several codecs chosen call by call
// (cocclAllReduceCodec / cocclReduceScatterCodec / cocclAllGatherCodec), RAII handles.
//
//   export COCCL_COMM_ID=127.0.0.1:29556
//   for r in 0 1 2 3; do RANK=$r WORLD_SIZE=4 ./allreduce_codecs & done; wait
// or with the unique id passed through a file (rank 0 writes it, as allreduce_file_id.c):
//   rm -f /tmp/coccl.id; for r in 0 1 2 3; do ./allreduce_codecs --id-file /tmp/coccl.id $r 4 & done; wait
//
// Each call is checked against the exact result within the codec's tolerance; the statistics
// say which codec ran and how many bytes went on the wire.
#include <coccl.h>

#include "common.h"  // rankFromArgs, writeId, readId

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(cocclResult_t r, const char* what, cocclComm_t comm = nullptr) {
  if (r != cocclSuccess)
    throw std::runtime_error(std::string(what) + ": " + cocclGetErrorString(r) + ": " +
                             cocclGetLastError(comm));
}

// The deleters run only when an exception leaves early (their results cannot be returned
// from a destructor); the normal path finalizes and destroys explicitly and checks both.
struct CommDeleter {
  void operator()(cocclComm* c) const {
    cocclCommFinalize(c);
    cocclCommDestroy(c);
  }
};
using Comm = std::unique_ptr<cocclComm, CommDeleter>;

struct CodecDeleter {
  void operator()(cocclCodec* c) const { cocclCodecDestroy(c); }
};
using Codec = std::unique_ptr<cocclCodec, CodecDeleter>;

Codec makeCodec(const char* spec) {
  cocclCodec_t c = nullptr;
  check(cocclCodecCreate(spec, &c), spec);
  return Codec(c);
}

double relL2(const std::vector<float>& got, const std::vector<double>& want) {
  double e = 0, r = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    e += (got[i] - want[i]) * (got[i] - want[i]);
    r += want[i] * want[i];
  }
  return std::sqrt(e / (r > 0 ? r : 1));
}

float value(int rank, size_t i) { return std::sin(0.01f * static_cast<float>(i) + rank) + 0.1f * rank; }

}  // namespace

int main(int argc, char** argv) {
  try {
    const char* idFile = nullptr;
    if (argc > 2 && std::strcmp(argv[1], "--id-file") == 0) {
      idFile = argv[2];
      argv[2] = argv[0];  // the program's name stays argv[0]
      argv += 2;
      argc -= 2;
    }
    if (!idFile && !std::getenv("COCCL_COMM_ID")) {
      std::fprintf(stderr,
                   "usage: COCCL_COMM_ID=host:port %s [RANK NRANKS]\n"
                   "       %s --id-file PATH [RANK NRANKS]   (or RANK, WORLD_SIZE set)\n",
                   argv[0], argv[0]);
      return 2;
    }
    int rank, nranks;
    rankFromArgs(argc, argv, 1, &rank, &nranks);
    cocclUniqueId id;
    std::memset(&id, 0, sizeof(id));  // with COCCL_COMM_ID the id's bytes are not read
    if (idFile && rank == 0) {
      check(cocclGetUniqueId(&id), "cocclGetUniqueId");
      writeId(idFile, &id);
    } else if (idFile) {
      readId(idFile, &id);
    }
    cocclComm_t raw = nullptr;
    check(cocclCommInitRank(&raw, nranks, id, rank), "cocclCommInitRank");
    Comm comm(raw);

    const size_t count = 1 << 17;  // elements per rank
    std::vector<float> in(count);
    for (size_t i = 0; i < count; ++i) in[i] = value(rank, i);
    std::vector<double> sum(count, 0.0);
    for (int q = 0; q < nranks; ++q)
      for (size_t i = 0; i < count; ++i) sum[i] += value(q, i);

    for (const char* spec : {"int8", "int8:rotate=0", "fp8_ash_ds", "fp8_ash_ds:block=64"}) {
      Codec codec = makeCodec(spec);
      std::vector<float> out(count);
      check(cocclAllReduceCodec(in.data(), out.data(), count, cocclFloat32, cocclSum, codec.get(),
                                comm.get(), nullptr), spec, comm.get());
      cocclCollStats_t st;
      check(cocclCommGetLastCollStats(comm.get(), &st), "stats", comm.get());
      const double e = relL2(out, sum);
      const double tol = std::strncmp(spec, "fp8", 3) == 0 ? 0.05 : 0.02;
      if (!(e < tol)) throw std::runtime_error(std::string(spec) + ": relative L2 " + std::to_string(e));
      if (rank == 0)
        std::printf("allreduce %-22s codec %-52s wire %8zu B of %8zu B, relL2 %.2e\n", spec,
                    cocclCodecName(codec.get()), st.wireBytesSent, st.logicalBytes, e);
      check(cocclCodecDestroy(codec.release()), "cocclCodecDestroy");
    }
    // ReduceScatter then AllGather of the result with another codec.
    Codec rsCodec = makeCodec("int8:block=256"), agCodec = makeCodec("fp8_ash_ds");
    const size_t shard = count / static_cast<size_t>(nranks);
    std::vector<float> part(shard), all(shard * static_cast<size_t>(nranks));
    check(cocclReduceScatterCodec(in.data(), part.data(), shard, cocclFloat32, cocclSum,
                                  rsCodec.get(), comm.get(), nullptr), "reduce-scatter", comm.get());
    check(cocclAllGatherCodec(part.data(), all.data(), shard, cocclFloat32, agCodec.get(),
                              comm.get(), nullptr), "all-gather", comm.get());
    std::vector<double> want(sum.begin(), sum.begin() + static_cast<long>(all.size()));
    const double e = relL2(all, want);
    if (!(e < 0.06)) throw std::runtime_error("reduce-scatter + all-gather: relative L2 " + std::to_string(e));
    check(cocclCodecDestroy(rsCodec.release()), "cocclCodecDestroy");
    check(cocclCodecDestroy(agCodec.release()), "cocclCodecDestroy");
    check(cocclCommFinalize(comm.get()), "cocclCommFinalize", comm.get());
    check(cocclCommDestroy(comm.release()), "cocclCommDestroy");
    std::printf("rank %d of %d: allreduce_codecs OK (reduce-scatter int8 + all-gather fp8 relL2 %.2e)\n",
                rank, nranks, e);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_codecs: %s\n", e.what());
    return 1;
  }
}
