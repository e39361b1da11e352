// tah's device kernels (plugins/tah/tah_device.cu) compiled as host code with the CPU emulation of
// tests/gpu/emu (a block is cooperative lanes; shuffles, ballots and barriers are exchanged
// between them) and launched here as tah_device.cu's launchers do: their bytes must be the host
// operations' (tah_host.cc) for encode, decode, decodeAccumulate and decodeReduceEncode on fp32,
// fp16 and bf16. No GPU; the real device check is tests/gpu/plugins/test_tah_device.cc.
#include <cuda_runtime.h>  // tests/gpu/emu/cuda_runtime.h

#include <cstdint>
#include <cstring>

// The intrinsics tah_device.cu uses beyond what the emulation provides, built from ballots
// (each bit of a value is one ballot), so they follow its lane and mask rules.
inline uint32_t emuGather(unsigned mask, uint32_t v, int src) {
  uint32_t r = 0;
  for (int b = 0; b < 32; ++b) {
    const unsigned bb = __ballot_sync(mask, (v >> b) & 1u);
    r |= ((bb >> src) & 1u) << b;
  }
  return r;
}
inline int emuLane() {
  return static_cast<int>(threadIdx.x & 31u);
}
inline float __shfl_sync(unsigned mask, float v, int src, int width = 32) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u = emuGather(mask, u, (emuLane() & ~(width - 1)) + (src & (width - 1)));
  std::memcpy(&v, &u, 4);
  return v;
}
inline unsigned __shfl_sync(unsigned mask, unsigned v, int src, int width = 32) {
  return emuGather(mask, v, (emuLane() & ~(width - 1)) + (src & (width - 1)));
}
inline unsigned __shfl_up_sync(unsigned mask, unsigned v, int delta, int width = 32) {
  const int lane = emuLane(), lo = lane & ~(width - 1);
  return emuGather(mask, v, lane - delta >= lo ? lane - delta : lane);
}
inline unsigned __match_any_sync(unsigned mask, unsigned v) {
  unsigned peers = mask;
  for (int b = 0; b < 32; ++b) {
    const bool mine = (v >> b) & 1u;
    const unsigned bb = __ballot_sync(mask, mine);
    peers &= mine ? bb : ~bb;
  }
  return peers;
}
inline int __popc(unsigned x) {
  return __builtin_popcount(x);
}
inline int __ffs(unsigned x) {
  return __builtin_ffs(static_cast<int>(x));
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {  // lanes of a block share one OS thread
  const unsigned o = *p;
  *p = o + v;
  return o;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tah_device.cu"
#pragma GCC diagnostic pop

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

extern "C" const cocclCodecPlugin_v1_t cocclCodecPlugin_v1;  // tah_host.cc, linked in

namespace {

void launch(size_t blocks, unsigned threads, const std::function<void()>& body) {
  for (size_t b = 0; b < blocks; ++b) {
    std::string err;
    ASSERT_TRUE(block_emu::runBlock(static_cast<unsigned>(b), static_cast<unsigned>(blocks),
                                    threads, body, &err))
        << err;
  }
}

// tah_device.cu's encodeOn and decodeOn, with the emulated launches; the batch loops get at
// most 3 CTAs, so that they run several times.
unsigned emuGrid(const Geo& g) {
  const unsigned need = gridFor(g.L.tiles, static_cast<size_t>(kBatch) * kWarps);
  return need < 1 ? 1 : (need < 3 ? need : 3);
}
void emuEncode(const tah_instance_t* t, const void* in, int dtype, size_t count, uint8_t* out,
               void* ws, float scale = 1.0f) {
  const Geo g = geoOf(t, count);
  const bool vec = aligned16(in), group = t->scope == TAH_SCOPE_GROUP;
  uint32_t* keys = static_cast<uint32_t*>(ws);
  uint32_t* hdr = reinterpret_cast<uint32_t*>(out);
  if (g.L.n3 > 0) {
    float2* sums = reinterpret_cast<float2*>(static_cast<char*>(ws) + pad256(4 * g.L.rows));
    launch(emuGrid(g), kThreads, [&] { tileSumsKernel(in, dtype, g, scale, vec, sums); });
    launch(gridFor(g.L.rows, 256), 256,
           [&] { rowKeysKernel(sums, g, keys, group ? hdr : nullptr); });  // as encodeOn
  }
  if (!group || g.L.n3 == 0)
    launch(1, kSelectThreads, [&] {
      selectKernel(keys, static_cast<uint32_t>(g.L.rows), static_cast<uint32_t>(g.L.n3), hdr);
    });
  launch(emuGrid(g), kThreads,
         [&] { encodeTilesKernel(in, dtype, g, scale, t->had != 0, vec, out); });
}
void emuDecode(const tah_instance_t* t, const Inputs& ins, int n, int mode, int self,
               const void* selfIn, float scale, size_t count, int dtype, void* out) {
  const Geo g = geoOf(t, count);
  const bool vec = aligned16(out) && (mode != 2 || aligned16(selfIn));
  launch(emuGrid(g), kThreads, [&] {
    if (mode == 0) decodeTilesKernel<0>(ins, n, self, selfIn, scale, g, dtype, vec, out);
    if (mode == 1) decodeTilesKernel<1>(ins, n, self, selfIn, scale, g, dtype, vec, out);
    if (mode == 2) decodeTilesKernel<2>(ins, n, self, selfIn, scale, g, dtype, vec, out);
  });
}

std::vector<uint8_t> input(size_t n, size_t R, int dtype, int kind, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint8_t> out(n * (dtype == TAH_DT_F32 ? 4 : 2));
  std::vector<float> row0(R);
  for (float& v : row0) v = nd(g);
  for (size_t i = 0; i < n; ++i) {
    float v = nd(g);
    if (kind == 1 && (i % R) % 97 == 5) v *= 40.0f;
    if (kind == 2 && g() % 300 == 0) v = 3000.0f;
    if (kind == 3) v = row0[i % R];
    if (kind == 4 && i % 777 == 3) v = i % 2 ? INFINITY : NAN;
    tah_store(out.data(), dtype, i, v);
  }
  return out;
}

struct Case {
  const char* params;
  size_t rows, extra;  // count = rows * row + extra
  int kind;
};

class TahEmu : public ::testing::TestWithParam<Case> {};

TEST_P(TahEmu, DeviceKernelsGiveHostBytes) {
  const cocclCodecPlugin_v1_t* D = &cocclCodecPlugin_v1;
  const Case c = GetParam();
  void* instP = nullptr;
  char err[128];
  ASSERT_EQ(D->create(c.params, &instP, err, sizeof(err)), 0) << err;
  const tah_instance_t* t = static_cast<const tah_instance_t*>(instP);
  const size_t n = c.rows * t->row + c.extra, pb = D->encodedBytes(instP, n, TAH_DT_F32);
  std::vector<uint8_t> hws(D->workspaceBytes(instP, n, TAH_DT_F32, 3, 0) + 256);
  void* hw = hws.data() + ((256 - (reinterpret_cast<uintptr_t>(hws.data()) & 255)) & 255);
  const tah_layout_t lay = tah_layout(n, t->row, t->lowL);  // the encode's device workspace
  std::vector<uint64_t> ews((pad256(4 * lay.rows) + 8 * lay.tiles) / 8 + 1);
  std::vector<float> acc32(n + 4);
  for (int dtype : {TAH_DT_F32, TAH_DT_F16, TAH_DT_BF16}) {
    const size_t es = dtype == TAH_DT_F32 ? 4 : 2;
    std::vector<std::vector<uint8_t>> raw(3), hp(3, std::vector<uint8_t>(pb));
    Inputs ins{};
    const void* hIns[3];
    for (int r = 0; r < 3; ++r) {
      raw[r] = input(n, t->row, dtype, r == 1 ? c.kind : (c.kind == 3 ? 3 : 0), 50 + r);
      ASSERT_EQ(D->host.encode(instP, raw[r].data(), dtype, n, hp[r].data(), hw), 0);
      std::vector<uint8_t> dp(pb, 0xEE);
      emuEncode(t, raw[r].data(), dtype, n, dp.data(), ews.data());
      ASSERT_EQ(dp, hp[r]) << "encode dtype " << dtype << " input " << r;
      if (r == 1) {  // an input that is not 16-byte aligned: the element-wise loads
        std::vector<uint8_t> shifted(raw[r].size() + 16);
        const uintptr_t base = reinterpret_cast<uintptr_t>(shifted.data());
        uint8_t* at = shifted.data() + ((16 - (base & 15)) & 15) + es;
        std::copy(raw[r].begin(), raw[r].end(), at);
        std::fill(dp.begin(), dp.end(), 0xEE);
        emuEncode(t, at, dtype, n, dp.data(), ews.data());
        ASSERT_EQ(dp, hp[r]) << "unaligned encode dtype " << dtype;
      }
      ins.p[r] = hp[r].data();
      hIns[r] = hp[r].data();
    }
    std::vector<uint8_t> ho(n * es), dout(n * es, 0xEE);
    D->host.decode(instP, hp[1].data(), n, dtype, ho.data(), hw);
    Inputs one{};
    one.p[0] = hp[1].data();
    emuDecode(t, one, 1, 0, 0, nullptr, 1.0f, n, dtype, dout.data());
    ASSERT_EQ(dout, ho) << "decode dtype " << dtype;
    {  // garbage: random bytes, and a valid payload whose header and metas are random (rows
       // outside the code section, 3-bit rows anywhere, NaN / Inf / negative scales and zeros)
      std::mt19937 gen(7 + dtype);
      std::vector<uint8_t> junk(pb), bent = hp[1];
      for (uint8_t& b : junk) b = static_cast<uint8_t>(gen());
      for (size_t i = 0; i < lay.codeOff && i < bent.size(); ++i)
        if (gen() % 4 == 0) bent[i] = static_cast<uint8_t>(gen());
      for (const std::vector<uint8_t>* g : {&junk, &bent}) {
        std::vector<uint8_t> hg(n * es), dg(n * es, 0xEE);
        D->host.decode(instP, g->data(), n, dtype, hg.data(), hw);
        Inputs gi{};
        gi.p[0] = g->data();
        emuDecode(t, gi, 1, 0, 0, nullptr, 1.0f, n, dtype, dg.data());
        ASSERT_EQ(dg, hg) << "garbage decode dtype " << dtype << (g == &junk ? " junk" : " bent");
        std::vector<float> hacc(n, 0.5f), dacc(n, 0.5f);
        const void* hg2[2] = {g->data(), hp[0].data()};
        Inputs gi2{};
        gi2.p[0] = g->data(), gi2.p[1] = hp[0].data();
        D->host.decodeAccumulate(instP, hg2, 2, n, dtype, hacc.data(), hw);
        emuDecode(t, gi2, 2, 1, 0, nullptr, 1.0f, n, dtype, dacc.data());
        ASSERT_EQ(0, std::memcmp(hacc.data(), dacc.data(), 4 * n))
            << "garbage decodeAccumulate dtype " << dtype;
      }
    }
    std::vector<float> ha(n), da(n);
    for (size_t i = 0; i < n; ++i) ha[i] = da[i] = 0.125f * static_cast<float>(i % 5);
    D->host.decodeAccumulate(instP, hIns, 3, n, dtype, ha.data(), hw);
    emuDecode(t, ins, 3, 1, 0, nullptr, 1.0f, n, dtype, da.data());
    ASSERT_EQ(0, std::memcmp(ha.data(), da.data(), 4 * n)) << "decodeAccumulate dtype " << dtype;
    for (float scale : {1.0f, 1.0f / 3.0f}) {  // decodeReduceEncode, p = 3, self = 1
      std::vector<uint8_t> hpay(pb), hdec(n * es), dpay(pb, 0xEE), ddec = raw[1];
      D->host.decodeReduceEncode(instP, hIns, 3, 1, raw[1].data(), dtype, n, scale, hpay.data(),
                                 hdec.data(), hw);
      emuDecode(t, ins, 3, 2, 1, ddec.data(), scale, n, dtype, acc32.data());
      emuEncode(t, acc32.data(), TAH_DT_F32, n, dpay.data(), ews.data());
      Inputs o{};
      o.p[0] = dpay.data();
      emuDecode(t, o, 1, 0, 0, nullptr, 1.0f, n, dtype, ddec.data());  // in place of selfIn
      ASSERT_EQ(dpay, hpay) << "decodeReduceEncode out dtype " << dtype << " scale " << scale;
      ASSERT_EQ(ddec, hdec) << "decodeReduceEncode decoded dtype " << dtype;
      // p = 1: the owner's input times scale, encoded on the fly (input 1 has the shape's kind)
      D->host.decodeReduceEncode(instP, nullptr, 1, 0, raw[1].data(), dtype, n, scale, hpay.data(),
                                 hdec.data(), hw);
      ddec = raw[1];
      emuEncode(t, ddec.data(), dtype, n, dpay.data(), ews.data(), scale);
      emuDecode(t, o, 1, 0, 0, nullptr, 1.0f, n, dtype, ddec.data());
      ASSERT_EQ(dpay, hpay) << "decodeReduceEncode p 1 out dtype " << dtype << " scale " << scale;
      ASSERT_EQ(ddec, hdec) << "decodeReduceEncode p 1 decoded dtype " << dtype;
    }
  }
  D->destroy(instP);
}

// selectKernel alone against the host's rule (the n3 rows of smallest (key, index) are 3-bit;
// per group of 32 rows the bit word and the 3-bit rows before it), on row counts that take its
// histogram passes and its header walk through several loads a thread and groups a warp, with
// few distinct keys (ties at the n3-th key) and with distinct ones.
TEST(TahEmuSelect, HeaderIsTheHostSelection) {
  for (uint32_t rows : {33u, 1000u, 40000u}) {
    for (int distinct : {3, 1 << 30}) {
      std::mt19937 g(rows + static_cast<uint32_t>(distinct));
      std::vector<uint32_t> keys(rows);
      for (uint32_t& k : keys) k = 0x80000000u + static_cast<uint32_t>(g() % distinct) * 4099u;
      for (uint32_t n3 : {0u, 1u, rows / 5, rows}) {
        std::vector<uint64_t> ord(rows);
        for (uint32_t r = 0; r < rows; ++r) ord[r] = static_cast<uint64_t>(keys[r]) << 32 | r;
        std::sort(ord.begin(), ord.end());
        const uint32_t groups = (rows + 31) / 32;
        std::vector<uint32_t> want(2 * groups, 0), got(2 * groups, 0xEEEEEEEEu);
        for (uint32_t k = 0; k < n3; ++k) {
          const uint32_t r = static_cast<uint32_t>(ord[k]);
          want[2 * (r / 32)] |= 1u << (r % 32);
        }
        for (uint32_t gi = 0, c = 0; gi < groups; ++gi) {
          want[2 * gi + 1] = c;
          c += static_cast<uint32_t>(__builtin_popcount(want[2 * gi]));
        }
        launch(1, kSelectThreads, [&] { selectKernel(keys.data(), rows, n3, got.data()); });
        ASSERT_EQ(got, want) << "rows " << rows << " n3 " << n3 << " distinct " << distinct;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TahEmu,
    // Partial last rows (extra > 0) need strict=0 (the default refuses them).
    ::testing::Values(Case{"row=1024", 37, 0, 0}, Case{"row=1024,strict=0", 40, 333, 1},
                      Case{"row=64,low=0.5,strict=0,select=message", 70, 7, 2},
                      Case{"row=192,low=0.3", 45, 0, 3}, Case{"row=256,strict=0", 3, 100, 4},
                      Case{"row=128,low=1", 33, 0, 1}, Case{"row=64,low=0", 5, 0, 2},
                      Case{"row=1024,strict=0", 0, 7, 0}));

}  // namespace
