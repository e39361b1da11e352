// Exact (uncompressed) host collectives: every collective, data type and op, counts that do not
// divide by the world size, in-place and out-of-place, threads and processes, several world
// sizes and chunk sizes (so chunks pipeline). Outputs are pre-filled so an unwritten element
// fails; guard bytes around every buffer must stay intact.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "coll_util.h"
#include "exact_check.h"
#include "harness/harness.h"

using namespace coccl::test;

namespace {

struct Param {
  Mode mode;
  int nranks;
  long long chunkBytes;
  const char* algo = "auto";
};

std::string paramName(const ::testing::TestParamInfo<Param>& i) {
  return std::string(modeName(i.param.mode)) + "_" + std::to_string(i.param.nranks) + "ranks_chunk" +
         std::to_string(i.param.chunkBytes) + "_" +
         (std::string(i.param.algo) == "two-shot" ? "twoshot" : i.param.algo);
}

class HostExact : public ::testing::TestWithParam<Param> {
 protected:
  RunOptions opts() const {
    RunOptions o;
    o.config.chunkBytes = GetParam().chunkBytes;
    o.config.timeoutMs = 60000;
    o.config.algorithm = GetParam().algo;
    return o;
  }
  void run(const std::function<void(Rank&)>& body) {
    runRanks(GetParam().nranks, GetParam().mode, body, opts());
  }
};

const cocclDataType_t kTypes[] = {cocclInt8,    cocclUint8,    cocclInt32,      cocclUint32,
                                  cocclInt64,   cocclUint64,   cocclFloat16,    cocclFloat32,
                                  cocclFloat64, cocclBfloat16, cocclFloat8e4m3, cocclFloat8e5m2};
const cocclRedOp_t kOps[] = {cocclSum, cocclProd, cocclMax, cocclMin, cocclAvg};

void expectCase(const Rank& r, const ExactCase& c) {
  cocclResult_t res;
  size_t wrong = runExactCase(r, c, &res);
  ASSERT_EQ(res, cocclSuccess) << collName(c.coll) << ": " << cocclGetLastError(r.comm);
  EXPECT_EQ(wrong, 0u) << collName(c.coll) << " " << typeName(c.dt) << " " << opName(c.op)
                       << " count " << c.count << (c.inPlace ? " in-place" : "");
}

TEST_P(HostExact, ReductionsEveryTypeAndOp) {
  run([](Rank& r) {
    int salt = 0;
    for (Coll coll : {Coll::AllReduce, Coll::ReduceScatter, Coll::Reduce})
      for (cocclDataType_t dt : kTypes)
        for (cocclRedOp_t op : kOps)
          for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1029}})
            for (bool inPlace : {false, true})
              expectCase(r, {coll, dt, op, count, inPlace, (salt % r.nranks), ++salt});
  });
}

TEST_P(HostExact, DataMovementEveryType) {
  run([](Rank& r) {
    int salt = 0;
    for (Coll coll : {Coll::AllGather, Coll::Broadcast})
      for (cocclDataType_t dt : kTypes)
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1029}})
          for (bool inPlace : {false, true})
            expectCase(r, {coll, dt, cocclSum, count, inPlace, (salt % r.nranks), ++salt});
  });
}

TEST_P(HostExact, LargeAndOddCounts) {
  run([](Rank& r) {
    int salt = 100;
    for (size_t count : {size_t{32776}, size_t{1000003}}) {
      for (bool inPlace : {false, true}) {
        expectCase(r, {Coll::AllReduce, cocclFloat32, cocclSum, count, inPlace, 0, ++salt});
        expectCase(r, {Coll::AllReduce, cocclBfloat16, cocclAvg, count, inPlace, 0, ++salt});
        expectCase(r, {Coll::AllReduce, cocclInt32, cocclMax, count, inPlace, 0, ++salt});
        expectCase(r, {Coll::ReduceScatter, cocclFloat32, cocclSum, count / r.nranks + 1, inPlace,
                       0, ++salt});
        expectCase(r, {Coll::AllGather, cocclFloat16, cocclSum, count / r.nranks + 3, inPlace, 0,
                       ++salt});
        expectCase(r, {Coll::Broadcast, cocclInt8, cocclSum, count, inPlace, r.nranks - 1,
                       ++salt});
        expectCase(r, {Coll::Reduce, cocclFloat64, cocclSum, count, inPlace, r.nranks / 2,
                       ++salt});
      }
    }
  });
}

// Random (non-integer) floats: the reduction is no longer exact in every order, so the
// result is compared with an fp64 reference within the rounding of the type: fp32/fp64
// accumulate in their own precision (p-1 roundings), half types accumulate in fp32 and round
// once to the output.
TEST_P(HostExact, RandomFloatsAgainstFp64) {
  // The ring passes partial sums in the data type (as NCCL does): one more rounding per hop.
  const bool ring = std::string(GetParam().algo) == "ring";
  run([ring](Rank& r) {
    const size_t count = 50021;
    for (cocclDataType_t dt : {cocclFloat32, cocclFloat64, cocclBfloat16, cocclFloat16}) {
      for (cocclRedOp_t op : {cocclSum, cocclAvg}) {
        const size_t es = elemSize(dt);
        std::vector<std::vector<uint8_t>> in(r.nranks, std::vector<uint8_t>(count * es));
        for (int q = 0; q < r.nranks; ++q) {
          std::mt19937_64 g(1234 + q);
          std::normal_distribution<double> nd;
          for (size_t i = 0; i < count; ++i) setElem(dt, in[q].data(), i, nd(g));
        }
        std::vector<uint8_t> out(count * es);
        ASSERT_EQ(cocclAllReduce(in[r.rank].data(), out.data(), count, dt, op, r.comm, nullptr),
                  cocclSuccess);
        const double ulp = dt == cocclFloat64 ? 0x1p-52 : dt == cocclFloat32 ? 0x1p-23
                         : dt == cocclBfloat16 ? 0x1p-7 : 0x1p-10;
        size_t bad = 0;
        for (size_t i = 0; i < count; ++i) {
          double want = 0, mag = 0;
          for (int q = 0; q < r.nranks; ++q) {
            double v = getElem(dt, in[q].data(), i);
            want += v;
            mag += std::fabs(v);
          }
          if (op == cocclAvg) {
            want /= r.nranks;
            mag /= r.nranks;
          }
          double got = getElem(dt, out.data(), i);
          // output rounding (half an ulp of the result) + accumulation (p ulps of the fp32 or
          // fp64 accumulator, relative to the inputs' magnitudes)
          const double accUlp = dt == cocclFloat64 ? 0x1p-52 : 0x1p-23;
          double tol = 0.5 * ulp * std::fabs(want) + r.nranks * accUlp * mag + 1e-300;
          if (ring) tol += (r.nranks - 1) * 0.5 * ulp * mag;
          if (std::fabs(got - want) > tol && bad++ < 3)
            ADD_FAILURE() << typeName(dt) << " " << opName(op) << " element " << i << ": got "
                          << got << " want " << want << " tol " << tol;
        }
        EXPECT_EQ(bad, 0u) << typeName(dt) << " " << opName(op);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Threads, HostExact,
                         ::testing::Values(Param{Mode::Threads, 1, 1 << 20},
                                           Param{Mode::Threads, 2, 4096},
                                           Param{Mode::Threads, 3, 1 << 20},
                                           Param{Mode::Threads, 4, 8192},
                                           Param{Mode::Threads, 6, 65536},
                                           Param{Mode::Threads, 8, 1 << 20},
                                           Param{Mode::Threads, 3, 4096, "ring"},
                                           Param{Mode::Threads, 4, 1 << 20, "ring"},
                                           Param{Mode::Threads, 8, 8192, "ring"}),
                         paramName);
INSTANTIATE_TEST_SUITE_P(Processes, HostExact,
                         ::testing::Values(Param{Mode::Processes, 3, 4096},
                                           Param{Mode::Processes, 4, 1 << 20},
                                           Param{Mode::Processes, 8, 65536},
                                           Param{Mode::Processes, 4, 4096, "ring"}),
                         paramName);

}  // namespace
