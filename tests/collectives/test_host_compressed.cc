// Compressed host collectives (issue: two-shot AllReduce, ReduceScatter, AllGather through a
// codec): error within the codec's bound against an fp64 reference, bitwise-identical outputs
// on every rank, odd counts, in-place, NaN/Inf/huge values, AVG, long runs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "coll_util.h"
#include "compressed_util.h"
#include "harness/harness.h"

using namespace coccl::test;

namespace {

struct Param {
  Mode mode;
  int nranks;
  const char* codec;
  long long chunkBytes;
  const char* algo;
};

std::string paramName(const ::testing::TestParamInfo<Param>& i) {
  std::string c = i.param.codec;
  for (char& ch : c)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  std::string a = i.param.algo;
  for (char& ch : a)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return std::string(modeName(i.param.mode)) + "_" + std::to_string(i.param.nranks) + "ranks_" + c +
         "_chunk" + std::to_string(i.param.chunkBytes) + "_" + a;
}

bool isFp8(const char* codec) { return std::string(codec).rfind("fp8", 0) == 0; }

// Relative L2 bounds (README "Codecs"): one encode/decode costs at most e1 = 2.8% (fp8) /
// 0.7% (int8). Two-shot AllReduce quantizes the p-1 inputs that travel (the owner's own stays
// exact) and the sum once: e1 * sqrt(1 + (p-1)/p), plus 5% for rounding to the output type
// (3.7% / 0.92% at p = 4). Ring re-encodes the partial sum at each of the p-1 hops:
// e1 * sqrt(p) + e1.
// One-shot quantises every input once and never the sum: one encode/decode's bound (2.8% /
// 0.7%, as for AllGather below) plus 5% for the rounding.
double allReduceBound(const Param& p) {
  double e1 = isFp8(p.codec) ? 0.027 : 0.0068;
  if (std::string(p.algo) == "ring" && p.nranks > 2) return e1 * std::sqrt(p.nranks) + e1;
  if (std::string(p.algo) == "one-shot") return (isFp8(p.codec) ? 0.028 : 0.007) * 1.05;
  return e1 * std::sqrt(1.0 + (p.nranks - 1.0) / p.nranks) * 1.05;
}
double oneShotBound(const Param& p) {
  double e1 = isFp8(p.codec) ? 0.028 : 0.007;
  if (std::string(p.algo) == "ring" && p.nranks > 2) return e1 * std::sqrt(p.nranks);
  return e1;
}
// Few elements: the error of a handful of values scatters more than a tensor's.
double slack(size_t count) { return count >= 4096 ? 1.0 : 1.5; }

// Relative error of a reduction: against the result for large messages (the metric);
// for a few elements, whose per-rank values may cancel in the sum, against the root of the
// inputs' total energy (what each rank's quantization error is proportional to).
double reductionError(const std::vector<double>& got, const std::vector<double>& want,
                      const std::vector<RankData>& all, size_t offset) {
  if (want.size() >= 4096) return relL2(got, want);
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    for (const RankData& d : all) den += d.exact[offset + i] * d.exact[offset + i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

class HostCompressed : public ::testing::TestWithParam<Param> {
 protected:
  RunOptions opts() const {
    RunOptions o;
    o.config.codec = GetParam().codec;
    o.config.compressMinBytes = 0;
    o.config.chunkBytes = GetParam().chunkBytes;
    o.config.algorithm = GetParam().algo;
    o.config.timeoutMs = 120000;
    return o;
  }
  void run(const std::function<void(Rank&)>& body) {
    runRanks(GetParam().nranks, GetParam().mode, body, opts());
  }
};

const cocclDataType_t kTypes[] = {cocclBfloat16, cocclFloat32, cocclFloat16};
const size_t kCounts[] = {0, 1, 7, 33, 32776, 1000003};

TEST_P(HostCompressed, AllReduceErrorAndIdentity) {
  const Param prm = GetParam();
  run([prm](Rank& r) {
    uint64_t seed = 1;
    for (cocclDataType_t dt : kTypes)
      for (size_t count : kCounts)
        for (cocclRedOp_t op : {cocclSum, cocclAvg})
          for (bool inPlace : {false, true}) {
            if (count == 1000003 && (dt != cocclBfloat16 || op != cocclSum)) continue;
            ++seed;
            const size_t es = elemSize(dt);
            std::vector<RankData> all;
            for (int q = 0; q < r.nranks; ++q) all.push_back(syntheticInput(dt, count, q, seed));
            std::vector<double> want(count, 0.0);
            for (size_t i = 0; i < count; ++i) {
              for (int q = 0; q < r.nranks; ++q) want[i] += all[q].exact[i];
              if (op == cocclAvg) want[i] /= r.nranks;
            }
            Guarded out(count * es, 0xFF), in(count * es, 0);
            if (count) std::memcpy(in.data(), all[r.rank].bytes.data(), count * es);
            const void* send = inPlace ? out.data() : in.data();
            if (inPlace && count) std::memcpy(out.data(), in.data(), count * es);
            ASSERT_EQ(cocclAllReduce(send, out.data(), count, dt, op, r.comm, nullptr),
                      cocclSuccess)
                << cocclGetLastError(r.comm);
            std::vector<double> got = toDoubles(dt, out.data(), count);
            double err =
                reductionError(got, want, all, 0) * (op == cocclAvg && count < 4096 ? r.nranks : 1);
            EXPECT_LE(err, allReduceBound(prm) * slack(count))
                << typeName(dt) << " count " << count << " " << opName(op)
                << (inPlace ? " in-place" : "") << " rank " << r.rank;
            for (size_t i = 0; i < count; ++i) {
              if (!std::isfinite(got[i])) {
                ADD_FAILURE() << "non-finite output at " << i;
                break;
              }
            }
            EXPECT_TRUE(out.guardsIntact());
            cocclCollStats_t st;
            ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
            if (count > 0) {
              // The policy compresses exactly where the payload is smaller than the input.
              cocclCodec_t c = nullptr;
              ASSERT_EQ(cocclCodecCreate(prm.codec, &c), cocclSuccess);
              size_t enc = 0;
              ASSERT_EQ(cocclCodecEncodedBytes(c, count, dt, &enc), cocclSuccess);
              cocclCodecDestroy(c);
              if (enc < count * es)
                EXPECT_STRNE(st.codec, "none") << "count " << count;
              else
                EXPECT_STREQ(st.codec, "none") << "count " << count << ": payload " << enc;
            }
            EXPECT_TRUE(sameOnAllRanks(r, hashBytes(out.data(), count * es)))
                << "outputs differ across ranks: " << typeName(dt) << " count " << count;
            if (std::string(prm.algo) == "one-shot" && count > 0 && r.nranks > 1 &&
                std::string(st.codec) != "none") {
              // Each chunk (layout.h: chunkBytes of input, whole blocks) encoded once and sent
              // to each of the p - 1 peers, after the call's 128-byte descriptor (call_desc.h).
              cocclCodec_t c = nullptr;
              ASSERT_EQ(cocclCodecCreate(prm.codec, &c), cocclSuccess);
              size_t block = 0;
              ASSERT_EQ(cocclCodecBlockElems(c, &block), cocclSuccess);
              size_t chunk = static_cast<size_t>(prm.chunkBytes) / es / block * block;
              if (chunk < block) chunk = block;
              size_t wire = 128 * static_cast<size_t>(r.nranks - 1);
              for (size_t b = 0; b < count; b += chunk) {
                size_t e = 0;
                ASSERT_EQ(cocclCodecEncodedBytes(c, std::min(chunk, count - b), dt, &e),
                          cocclSuccess);
                wire += e * static_cast<size_t>(r.nranks - 1);
              }
              cocclCodecDestroy(c);
              EXPECT_STREQ(st.algorithm, "one-shot");
              EXPECT_EQ(st.wireBytesSent, wire) << typeName(dt) << " count " << count;
            }
          }
  });
}

TEST_P(HostCompressed, ReduceScatterAndAllGather) {
  const Param prm = GetParam();
  run([prm](Rank& r) {
    uint64_t seed = 1000;
    const int p = r.nranks;
    for (cocclDataType_t dt : kTypes)
      for (size_t count : kCounts)
        for (bool inPlace : {false, true}) {
          if (count == 1000003 && dt != cocclBfloat16) continue;
          ++seed;
          const size_t es = elemSize(dt);
          // ReduceScatter: recvcount = count.
          std::vector<RankData> all;
          for (int q = 0; q < p; ++q) all.push_back(syntheticInput(dt, count * p, q, seed));
          std::vector<double> want(count, 0.0);
          for (size_t i = 0; i < count; ++i)
            for (int q = 0; q < p; ++q) want[i] += all[q].exact[r.rank * count + i];
          Guarded in(count * p * es, 0), out(count * es, 0xFF);
          if (count) std::memcpy(in.data(), all[r.rank].bytes.data(), count * p * es);
          void* recv = inPlace && count ? static_cast<char*>(in.data()) + r.rank * count * es
                                        : out.data();
          ASSERT_EQ(cocclReduceScatter(in.data(), recv, count, dt, cocclSum, r.comm, nullptr),
                    cocclSuccess)
              << cocclGetLastError(r.comm);
          double err = reductionError(toDoubles(dt, recv, count), want, all, r.rank * count);
          EXPECT_LE(err, oneShotBound(prm) * slack(count))
              << "ReduceScatter " << typeName(dt) << " count " << count << " rank " << r.rank;
          EXPECT_TRUE(in.guardsIntact() && out.guardsIntact());

          // AllGather: sendcount = count; every shard is one encode/decode of its owner's data.
          Guarded gout(count * p * es, 0xFF);
          const void* send = all[r.rank].bytes.data();
          if (inPlace && count) {
            std::memcpy(static_cast<char*>(gout.data()) + r.rank * count * es, send, count * es);
            send = static_cast<char*>(gout.data()) + r.rank * count * es;
          }
          ASSERT_EQ(cocclAllGather(send, gout.data(), count, dt, r.comm, nullptr), cocclSuccess)
              << cocclGetLastError(r.comm);
          std::vector<double> gwant(count * p);
          for (int q = 0; q < p; ++q)
            for (size_t i = 0; i < count; ++i) gwant[q * count + i] = all[q].exact[i];
          err = relL2(toDoubles(dt, gout.data(), count * p), gwant);
          EXPECT_LE(err, (isFp8(prm.codec) ? 0.028 : 0.007) * slack(count))
              << "AllGather " << typeName(dt) << " count " << count;
          EXPECT_TRUE(gout.guardsIntact());
          EXPECT_TRUE(sameOnAllRanks(r, hashBytes(gout.data(), count * p * es)))
              << "AllGather outputs differ across ranks";
        }
  });
}

TEST_P(HostCompressed, NonFiniteAndHugeValuesReachEveryRank) {
  run([](Rank& r) {
    const size_t count = 4096;
    for (cocclDataType_t dt : {cocclFloat32, cocclBfloat16}) {
      RankData d = syntheticInput(dt, count, r.rank, 77);
      const double nan = std::numeric_limits<double>::quiet_NaN();
      const double inf = std::numeric_limits<double>::infinity();
      if (r.rank == r.nranks - 1) {
        setElem(dt, d.bytes.data(), 5, nan);
        setElem(dt, d.bytes.data(), 300, inf);
        setElem(dt, d.bytes.data(), 1000, -inf);
        setElem(dt, d.bytes.data(), 2000, 1e30);
      }
      std::vector<uint8_t> out(count * elemSize(dt), 0xFF);
      ASSERT_EQ(cocclAllReduce(d.bytes.data(), out.data(), count, dt, cocclSum, r.comm, nullptr),
                cocclSuccess);
      std::vector<double> got = toDoubles(dt, out.data(), count);
      EXPECT_TRUE(std::isnan(got[5])) << got[5];
      EXPECT_EQ(got[300], inf);
      EXPECT_EQ(got[1000], -inf);
      EXPECT_TRUE(std::isfinite(got[2000]));
      EXPECT_NEAR(got[2000], 1e30, 0.07e30);
      size_t nonFinite = 0;
      for (size_t i = 0; i < count; ++i) nonFinite += !std::isfinite(got[i]);
      EXPECT_EQ(nonFinite, 3u) << "non-finite values leaked into other elements";
      EXPECT_TRUE(sameOnAllRanks(r, hashBytes(out.data(), out.size())));

      // AllGather: the last rank's shard carries them to everyone.
      std::vector<uint8_t> g(count * r.nranks * elemSize(dt));
      ASSERT_EQ(cocclAllGather(d.bytes.data(), g.data(), count, dt, r.comm, nullptr),
                cocclSuccess);
      std::vector<double> gg = toDoubles(dt, g.data(), g.size() / elemSize(dt));
      size_t base = (r.nranks - 1) * count;
      EXPECT_TRUE(std::isnan(gg[base + 5]));
      EXPECT_EQ(gg[base + 300], inf);
      EXPECT_EQ(gg[base + 1000], -inf);
      EXPECT_NEAR(gg[base + 2000], 1e30, 0.07e30);
    }
  });
}

TEST_P(HostCompressed, ThousandBackToBackAllReduces) {
  // A long run: once per codec with threads (2 ranks) and once with processes (3 ranks).
  const Param& prm = GetParam();
  const bool covered =
      std::string(prm.algo) == "auto" &&
      ((prm.mode == Mode::Threads && prm.nranks == 2) || prm.mode == Mode::Processes);
  if (!covered) GTEST_SKIP() << "long run covered by the 2-rank threads / 3-rank processes cases";
  run([](Rank& r) {
    std::mt19937 order(12345);  // same seeded order on all ranks
    const size_t sizes[] = {2880, 2880 * 7, 2880 * 64, 2880 * 513, size_t{4} << 20};
    std::vector<uint16_t> in(size_t{4} << 20), out(size_t{4} << 20);
    for (int it = 0; it < 1000; ++it) {
      size_t pick = order() % 100;
      size_t count = pick < 2 ? sizes[4] : sizes[pick % 4];
      bool check = it % 50 == 0 || pick < 2;
      RankData d;
      if (check) {
        d = syntheticInput(cocclBfloat16, count, r.rank, 5000 + it);
        std::memcpy(in.data(), d.bytes.data(), count * 2);
      }
      ASSERT_EQ(cocclAllReduce(in.data(), out.data(), count, cocclBfloat16, cocclSum, r.comm,
                               nullptr),
                cocclSuccess)
          << "iteration " << it << ": " << cocclGetLastError(r.comm);
      if (!check) continue;
      std::vector<double> want(count, 0.0);
      for (int q = 0; q < r.nranks; ++q) {
        RankData o = q == r.rank ? d : syntheticInput(cocclBfloat16, count, q, 5000 + it);
        for (size_t i = 0; i < count; ++i) want[i] += o.exact[i];
      }
      EXPECT_LE(relL2(toDoubles(cocclBfloat16, out.data(), count), want), 0.04)
          << "iteration " << it << " count " << count;
    }
  });
}

std::vector<Param> params() {
  std::vector<Param> v;
  for (const char* codec : {"fp8_ash_ds", "int8"}) {
    for (int n : {1, 2, 3, 4, 8}) v.push_back({Mode::Threads, n, codec, 1 << 20, "auto"});
    v.push_back({Mode::Threads, 4, codec, 16384, "auto"});
    v.push_back({Mode::Threads, 4, codec, 16384, "ring"});
    v.push_back({Mode::Processes, 3, codec, 65536, "auto"});
    for (int n : {2, 3}) v.push_back({Mode::Threads, n, codec, 16384, "one-shot"});
  }
  v.push_back({Mode::Processes, 4, "fp8_ash_ds", 65536, "one-shot"});
  v.push_back({Mode::Processes, 4, "fp8_ash_ds:block=64", 1 << 20, "ring"});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Codecs, HostCompressed, ::testing::ValuesIn(params()), paramName);

// Ranks with different COCCL_ALGO would expect different messages and wait for each other until
// the timeout: init fails on every rank instead, naming the rank ("direct" is two-shot's other
// name and agrees with it).
TEST(HostAlgorithm, RanksWithDifferentAlgorithmsFailInit) {
  RunOptions o;
  o.config.timeoutMs = 30000;
  o.configure = [](int r, cocclConfig_t* c) { c->algorithm = r == 1 ? "one-shot" : "two-shot"; };
  o.initCheck = [](int, cocclResult_t res, const std::string& e) {
    EXPECT_EQ(res, cocclInvalidUsage) << e;
    EXPECT_NE(e.find("COCCL_ALGO"), std::string::npos) << e;
    EXPECT_NE(e.find("on rank 1"), std::string::npos) << e;
  };
  runRanks(3, Mode::Threads, [](Rank&) { ADD_FAILURE() << "init succeeded"; }, o);
  o.configure = [](int r, cocclConfig_t* c) { c->algorithm = r == 1 ? "direct" : "two-shot"; };
  o.initCheck = nullptr;
  runRanks(2, Mode::Threads, [](Rank& r) { EXPECT_EQ(r.nranks, 2); }, o);
}

// The chunks and the nodes decide the messages too: ranks that differ fail init on every rank,
// naming the value (before, different chunks waited for the timeout at the first pipelined call).
TEST(HostAlgorithm, RanksWithDifferentChunksOrNodesFailInit) {
  RunOptions o;
  o.config.timeoutMs = 30000;
  o.configure = [](int r, cocclConfig_t* c) { c->chunkBytes = r == 2 ? 1 << 17 : 1 << 16; };
  o.initCheck = [](int, cocclResult_t res, const std::string& e) {
    EXPECT_EQ(res, cocclInvalidUsage) << e;
    EXPECT_NE(e.find("COCCL_CHUNK_BYTES differs"), std::string::npos) << e;
    EXPECT_NE(e.find("on rank 2"), std::string::npos) << e;
  };
  runRanks(3, Mode::Threads, [](Rank&) { ADD_FAILURE() << "init succeeded"; }, o);
  o.configure = [](int r, cocclConfig_t* c) { c->ranksPerNode = r == 0 ? 2 : 4; };
  o.initCheck = [](int, cocclResult_t res, const std::string& e) {
    EXPECT_EQ(res, cocclInvalidUsage) << e;
    EXPECT_NE(e.find("COCCL_RANKS_PER_NODE"), std::string::npos) << e;
  };
  runRanks(4, Mode::Threads, [](Rank&) { ADD_FAILURE() << "init succeeded"; }, o);
}

// A chunk size far above the message (1 TiB, a valid COCCL_CHUNK_BYTES): the call's buffers
// follow the message, not the chunk (found by a helper trying the API, 2026-12-06: a 4 KiB
// int8 AllReduce on ring and one-shot failed with "out of memory" and broke the communicator).
TEST(HostAlgorithm, ChunkFarAboveTheMessage) {
  for (const char* algo : {"ring", "one-shot", "two-shot"}) {
    RunOptions o;
    o.config.chunkBytes = 1LL << 40;
    o.config.algorithm = algo;
    runRanks(3, Mode::Threads, [algo](Rank& r) {
      cocclCodec_t codec = nullptr;
      ASSERT_EQ(cocclCodecCreate("int8", &codec), cocclSuccess);
      std::vector<float> in(1000, static_cast<float>(r.rank + 1)), out(1000, -1.0f);
      ASSERT_EQ(cocclAllReduceCodec(in.data(), out.data(), in.size(), cocclFloat32, cocclSum,
                                    codec, r.comm, nullptr),
                cocclSuccess)
          << algo << ": " << cocclGetLastError(r.comm);
      for (float v : out) ASSERT_NEAR(v, 6.0f, 0.05f) << algo;
      EXPECT_EQ(cocclCodecDestroy(codec), cocclSuccess);
    }, o);
  }
}

}  // namespace
