// Send/Recv on host buffers (src/collectives/host/p2p.cc): compressed through fp8_ash_ds and
// int8 (explicit codecs and the SENDRECV policy entry), error of every element within the
// codec's own bound (cocclCodecErrorBound) against the fp64 input, wire bytes = headers + the
// codec's encodedBytes, mismatched count / datatype / codec failing both ends (and leaving
// the receive buffer and the communicator intact), rings and all-to-alls in groups, ends that
// group differently. Ranks are threads (2, 3, 4) unless said otherwise.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "coll_util.h"
#include "compressed_util.h"
#include "harness/harness.h"

using namespace coccl::test;

namespace {

constexpr size_t kHeader = 128;  // the Send/Recv header (include/coccl.h, cocclSend)

struct Codec {
  cocclCodec_t h = nullptr;
  explicit Codec(const char* spec) { EXPECT_EQ(cocclCodecCreate(spec, &h), cocclSuccess); }
  ~Codec() { cocclCodecDestroy(h); }
  size_t bytes(size_t count, cocclDataType_t dt) const {
    size_t b = 0;
    EXPECT_EQ(cocclCodecEncodedBytes(h, count, dt, &b), cocclSuccess);
    return b;
  }
};

cocclCollStats_t stats(const Rank& r) {
  cocclCollStats_t s{};
  EXPECT_EQ(cocclCommGetLastCollStats(r.comm, &s), cocclSuccess);
  return s;
}

RunOptions options(const char* sendRecvCodec = nullptr, long long minBytes = 0) {
  RunOptions o;
  o.config.timeoutMs = 60000;
  o.config.compressMinBytes = minBytes;
  o.config.codecSendRecv = sendRecvCodec;
  return o;
}

const cocclDataType_t kFloatTypes[] = {cocclBfloat16, cocclFloat32, cocclFloat16};
const size_t kCounts[] = {1, 7, 129, 32776, 100003};

class HostSendRecv : public ::testing::TestWithParam<int> {};

// Ring in a group (every rank sends to rank+1 and receives from rank-1) through each codec.
TEST_P(HostSendRecv, CompressedRingWithinBound) {
  runRanks(
      GetParam(), Mode::Threads,
      [](Rank& r) {
        const int next = (r.rank + 1) % r.nranks, prev = (r.rank + r.nranks - 1) % r.nranks;
        uint64_t seed = 7;
        for (const char* spec : {"fp8_ash_ds", "int8", "int8:block=32,rotate=0"}) {
          Codec codec(spec);
          for (cocclDataType_t dt : kFloatTypes)
            for (size_t count : kCounts) {
              ++seed;
              const size_t es = elemSize(dt);
              const RankData mine = syntheticInput(dt, count, r.rank, seed);
              const RankData from = syntheticInput(dt, count, prev, seed);
              Guarded out(count * es, 0xFF);
              ASSERT_EQ(cocclGroupStart(), cocclSuccess);
              ASSERT_EQ(
                  cocclSendCodec(mine.bytes.data(), count, dt, next, codec.h, r.comm, nullptr),
                  cocclSuccess);
              ASSERT_EQ(cocclRecvCodec(out.data(), count, dt, prev, codec.h, r.comm, nullptr),
                        cocclSuccess);
              ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
              const std::vector<double> got = toDoubles(dt, out.data(), count);
              EXPECT_EQ(outsideBound(codec.h, from.exact, got), 0u)
                  << spec << " " << typeName(dt) << " count " << count;
              EXPECT_TRUE(out.guardsIntact());
              // A tensor's relative L2 (a few elements scatter more: their bound is the check).
              const double e = relL2(got, from.exact);
              if (count >= 4096) {
                EXPECT_LE(e, std::string(spec).rfind("fp8", 0) == 0 ? 0.03 : 0.012)
                    << spec << " " << typeName(dt) << " count " << count;
              }
              const cocclCollStats_t s = stats(r);
              EXPECT_EQ(s.wireBytesSent, 2 * kHeader + codec.bytes(count, dt));
              // An explicit codec runs whatever the size (a few elements cost a whole block).
              if (count >= 1000) {
                EXPECT_LT(codec.bytes(count, dt) * 1.7, count * es);  // >= 1.78 (README)
              }
              EXPECT_EQ(std::string(cocclCodecName(codec.h)).rfind(s.codec, 0), 0u) << s.codec;
              EXPECT_EQ(std::string(s.algorithm), "p2p");
            }
        }
      },
      options());
}

// Blocking Send on one rank, Recv on the other (no group): sender's wire = header + payload,
// receiver's = its header.
TEST_P(HostSendRecv, CompressedBlockingPairWireBytes) {
  runRanks(
      GetParam(), Mode::Threads,
      [](Rank& r) {
        Codec codec("fp8_ash_ds");
        const size_t count = 40000;
        const RankData d = syntheticInput(cocclFloat32, count, 0, 99);
        std::vector<float> out(count, -1.f);
        if (r.rank == 0) {
          ASSERT_EQ(cocclSendCodec(d.bytes.data(), count, cocclFloat32, r.nranks - 1, codec.h,
                                   r.comm, nullptr),
                    cocclSuccess)
              << cocclGetLastError(r.comm);
          EXPECT_EQ(stats(r).wireBytesSent, kHeader + codec.bytes(count, cocclFloat32));
          EXPECT_EQ(stats(r).logicalBytes, count * 4);
        } else if (r.rank == r.nranks - 1) {
          ASSERT_EQ(cocclRecvCodec(out.data(), count, cocclFloat32, 0, codec.h, r.comm, nullptr),
                    cocclSuccess)
              << cocclGetLastError(r.comm);
          EXPECT_EQ(stats(r).wireBytesSent, kHeader);
          EXPECT_EQ(outsideBound(codec.h, d.exact, toDoubles(cocclFloat32, out.data(), count)), 0u);
        }
      },
      options());
}

// Every rank sends a message to every rank (itself too) and receives one from each: PyTorch's
// batch_isend_irecv pattern; compressed (fp8_ash_ds), then exact (int32 through the same
// codec handle: not compressible, so exact and bit for bit).
TEST_P(HostSendRecv, GroupAllToAll) {
  runRanks(
      GetParam(), Mode::Threads,
      [](Rank& r) {
        Codec codec("fp8_ash_ds");
        const size_t count = 5000;
        const size_t p = static_cast<size_t>(r.nranks);
        for (cocclDataType_t dt : {cocclBfloat16, cocclInt32}) {
          const size_t es = elemSize(dt);
          std::vector<RankData> in;  // in[q]: what this rank sends to q
          for (int q = 0; q < r.nranks; ++q)
            in.push_back(syntheticInput(cocclFloat32, count, r.rank * 16 + q, 5));
          std::vector<std::vector<uint8_t>> send(p),
              recv(p, std::vector<uint8_t>(count * es, 0xFF));
          for (size_t q = 0; q < p; ++q) {
            send[q].resize(count * es);
            for (size_t i = 0; i < count; ++i)
              setElem(dt, send[q].data(), i,
                      dt == cocclInt32 ? std::round(in[q].exact[i] * 1000) : in[q].exact[i]);
          }
          ASSERT_EQ(cocclGroupStart(), cocclSuccess);
          for (int q = 0; q < r.nranks; ++q) {  // PyTorch posts the ops per peer, isend then irecv
            ASSERT_EQ(cocclSendCodec(send[q].data(), count, dt, q, codec.h, r.comm, nullptr),
                      cocclSuccess);
            ASSERT_EQ(cocclRecvCodec(recv[q].data(), count, dt, q, codec.h, r.comm, nullptr),
                      cocclSuccess);
          }
          ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
          for (int q = 0; q < r.nranks; ++q) {
            // What q sent to this rank, rebuilt here.
            const RankData src = syntheticInput(cocclFloat32, count, q * 16 + r.rank, 5);
            std::vector<double> want(count);
            std::vector<uint8_t> tmp(count * es);
            for (size_t i = 0; i < count; ++i) {
              setElem(dt, tmp.data(), i,
                      dt == cocclInt32 ? std::round(src.exact[i] * 1000) : src.exact[i]);
              want[i] = getElem(dt, tmp.data(), i);
            }
            const std::vector<double> got =
                toDoubles(dt, recv[static_cast<size_t>(q)].data(), count);
            if (dt == cocclInt32) {
              EXPECT_EQ(std::memcmp(recv[static_cast<size_t>(q)].data(), tmp.data(), count * es),
                        0);
            } else {
              EXPECT_EQ(outsideBound(codec.h, want, got), 0u) << "from rank " << q;
            }
          }
          const size_t payload = dt == cocclInt32 ? count * es : codec.bytes(count, dt);
          EXPECT_EQ(stats(r).wireBytesSent, p * (2 * kHeader + payload));
          EXPECT_EQ(std::string(stats(r).codec), dt == cocclInt32 ? "none" : "fp8_ash_ds");
        }
      },
      options());
}

// Exact ring, in place: each rank's buffer is sent and overwritten in one group.
TEST_P(HostSendRecv, ExactRingInPlace) {
  runRanks(
      GetParam(), Mode::Threads,
      [](Rank& r) {
        const int next = (r.rank + 1) % r.nranks, prev = (r.rank + r.nranks - 1) % r.nranks;
        const size_t count = 70000;
        std::vector<int32_t> buf(count);
        for (size_t i = 0; i < count; ++i) buf[i] = static_cast<int32_t>(i * 31 + r.rank);
        ASSERT_EQ(cocclGroupStart(), cocclSuccess);
        ASSERT_EQ(cocclSend(buf.data(), count, cocclInt32, next, r.comm, nullptr), cocclSuccess);
        ASSERT_EQ(cocclRecv(buf.data(), count, cocclInt32, prev, r.comm, nullptr), cocclSuccess);
        ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
        size_t wrong = 0;
        for (size_t i = 0; i < count; ++i) wrong += buf[i] != static_cast<int32_t>(i * 31 + prev);
        EXPECT_EQ(wrong, 0u);
        EXPECT_EQ(stats(r).wireBytesSent, 2 * kHeader + count * 4);
      },
      options());
}

// The two ends group differently: rank 0 groups two sends to the last rank, which posts two
// blocking receives (each message moves once its own headers agree).
TEST_P(HostSendRecv, EndsGroupDifferently) {
  runRanks(
      GetParam(), Mode::Threads,
      [](Rank& r) {
        Codec codec("int8");
        const int last = r.nranks - 1;
        const size_t count = 3000;
        const RankData a = syntheticInput(cocclFloat32, count, 1, 3);
        const RankData b = syntheticInput(cocclFloat32, count, 2, 3);
        if (r.rank == 0) {
          ASSERT_EQ(cocclGroupStart(), cocclSuccess);
          ASSERT_EQ(
              cocclSendCodec(a.bytes.data(), count, cocclFloat32, last, codec.h, r.comm, nullptr),
              cocclSuccess);
          ASSERT_EQ(
              cocclSendCodec(b.bytes.data(), count, cocclFloat32, last, codec.h, r.comm, nullptr),
              cocclSuccess);
          ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
        } else if (r.rank == last) {
          std::vector<float> x(count), y(count);
          ASSERT_EQ(cocclRecvCodec(x.data(), count, cocclFloat32, 0, codec.h, r.comm, nullptr),
                    cocclSuccess)
              << cocclGetLastError(r.comm);
          ASSERT_EQ(cocclRecvCodec(y.data(), count, cocclFloat32, 0, codec.h, r.comm, nullptr),
                    cocclSuccess)
              << cocclGetLastError(r.comm);
          EXPECT_EQ(outsideBound(codec.h, a.exact, toDoubles(cocclFloat32, x.data(), count)), 0u);
          EXPECT_EQ(outsideBound(codec.h, b.exact, toDoubles(cocclFloat32, y.data(), count)), 0u);
        }
      },
      options());
}

INSTANTIATE_TEST_SUITE_P(Ranks, HostSendRecv, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "threads_" + std::to_string(i.param) + "ranks";
                         });

}  // namespace
