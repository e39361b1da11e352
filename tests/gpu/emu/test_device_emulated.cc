// The device collectives' kernel code (src/collectives/cuda_ipc/kernels.cuh, the codec tile
// functions included) compiled as host code and run on the CPU (emu/cuda_runtime.h): every rank
// is a set of OS threads (one per block), blocks are 64 cooperative lanes, the regions are host
// memory. Each rank runs a seeded sequence of collectives back to back, without synchronising
// with the other ranks between calls (as kernels on a stream), through the same plans as the
// real path (plan.h) and small staging (many rounds, both parities, Send/Recv interleaved).
// Every output is compared bit for bit with a host reference (host codecs, reduceArrays).
// Needs no GPU and no CUDA: it checks the protocol (flags, round numbers, slot reuse, parts),
// not the hardware's memory model, and runs in CI (label collectives).
#define COCCL_EMU_TRACE 1
#include <cstdio>
static bool coccl_emu_trace_on = false;
#include <cuda_runtime.h>  // emu/cuda_runtime.h
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "codecs/codec.h"
#include "collectives/cuda_ipc/kernels.cuh"
#include "collectives/cuda_ipc/plan.h"
#include "collectives/layout.h"
#include "collectives/host/reduce.h"
#include "emu_device.h"
#include "emu_world.h"
#include "kernels/float_convert.h"

namespace {

using namespace coccl;
using namespace coccl::dev;

using coccl_emu::EmuDevice;
using coccl_emu::World;


// ---- the operations of a run -------------------------------------------------------------------

enum class K { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, Ring, AllToAll };

struct Op {
  K kind;
  cocclDataType_t dt = cocclFloat32;
  cocclRedOp_t op = cocclSum;
  size_t count = 0;
  bool inPlace = false;
  int root = 0;
  std::string codec;  // "" exact
};

std::string describe(const Op& o, int idx) {
  static const char* names[] = {"AllReduce", "ReduceScatter", "AllGather", "Broadcast",
                                "Reduce",    "Ring",          "AllToAll"};
  return "op " + std::to_string(idx) + " " + names[static_cast<int>(o.kind)] + " " +
         dtypeName(o.dt) + " op " + std::to_string(o.op) + " count " + std::to_string(o.count) +
         (o.inPlace ? " in-place" : "") + " root " + std::to_string(o.root) + " codec '" +
         o.codec + "'";
}

std::vector<uint8_t> input(const Op& o, int opIdx, int rank, size_t elems) {
  const size_t es = dtypeSize(o.dt);
  std::vector<uint8_t> v(elems * es);
  std::mt19937_64 g(static_cast<uint64_t>(opIdx) * 1000003u + static_cast<uint64_t>(rank) * 7919u);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (size_t i = 0; i < elems; ++i) {
    if (o.codec.empty() && g() % 16 == 0) {  // exact paths: random bits too (NaN, Inf, ...)
      uint64_t bits = g();
      std::memcpy(&v[i * es], &bits, es);
      continue;
    }
    const float x = nd(g) * (i % 97 == 5 ? 40.0f : 1.0f);
    switch (o.dt) {
      case cocclFloat32: std::memcpy(&v[i * es], &x, 4); break;
      case cocclBfloat16: {
        uint16_t h = kmath::floatToBf16(x);
        std::memcpy(&v[i * es], &h, 2);
        break;
      }
      case cocclFloat16: {
        uint16_t h = kmath::floatToFp16(x);
        std::memcpy(&v[i * es], &h, 2);
        break;
      }
      default: {  // integers: small values
        const int64_t k = static_cast<int64_t>(std::lround(x * 10.0f));
        std::memcpy(&v[i * es], &k, es);
        break;
      }
    }
  }
  return v;
}

float toFloat(cocclDataType_t dt, const uint8_t* p) {
  if (dt == cocclFloat32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return dt == cocclBfloat16 ? kmath::bf16ToFloat(h) : kmath::fp16ToFloat(h);
}

// ---- running one op on one rank -------------------------------------------------------------

template <class Tag>
void runCodecReduce(EmuDevice& d, const Ctx* ctx, const ReduceArgs& a, std::string* err) {
  COCCL_DISPATCH_FAMILY(a.codec, COCCL_DISPATCH_G(a.codec, ({
    const std::function<void()> body = [&] { reduceKernelBody<CodecMode<kFam, kG, Tag>>(ctx, a); };
    *err = d.launch(body, a.nblocks);
  })));
}
template <class Tag>
void runCodecGather(EmuDevice& d, const Ctx* ctx, const GatherArgs& a, std::string* err) {
  COCCL_DISPATCH_FAMILY(a.codec, COCCL_DISPATCH_G(a.codec, ({
    const std::function<void()> body = [&] { gatherKernelBody<CodecMode<kFam, kG, Tag>>(ctx, a); };
    *err = d.launch(body, a.nblocks);
  })));
}
template <class F>
void byTag(cocclDataType_t dt, F&& f) {
  if (dt == cocclBfloat16)
    f(kdev::Bf16Tag{});
  else if (dt == cocclFloat16)
    f(kdev::Fp16Tag{});
  else
    f(kdev::Fp32Tag{});
}

struct Buffers {
  std::vector<uint8_t> send, recv;  // recv: the receive buffer (in-place: holds the input too)
};

// Runs op `idx` on rank r (its device d), leaving the receive buffer in out.
void runOp(const World& w, EmuDevice& d, int r, const Op& o, int idx, Buffers* out,
           std::string* err) {
  const int p = w.p;
  const size_t es = dtypeSize(o.dt);
  const Ctx* ctx = &w.ctx[static_cast<size_t>(r)];
  const Planner pl = w.planner(r);
  CodecPtr codec = o.codec.empty() ? nullptr : makeCodec(o.codec);
  const CodecDesc desc = codec ? codec->deviceDesc() : CodecDesc{};
  Buffers& b = *out;
  if (o.kind == K::Ring || o.kind == K::AllToAll) {
    std::vector<P2PMsg> msgs;
    std::vector<std::vector<uint8_t>> sends;
    const size_t bytes = o.count;
    if (o.kind == K::Ring) {
      b.send = input(o, idx, r, bytes / es);
      b.recv.assign(bytes, 0xCD);
      if (o.inPlace) b.recv = b.send;
      void* sbuf = o.inPlace ? b.recv.data() : b.send.data();
      msgs.push_back(P2PMsg{sbuf, bytes, (r + 1) % p, 1});
      msgs.push_back(P2PMsg{b.recv.data(), bytes, (r - 1 + p) % p, 0});
    } else {
      // rank r sends (q + 1) * count + r bytes to q, from one concatenated send buffer.
      size_t sTotal = 0, rTotal = 0;
      for (int q = 0; q < p; ++q) sTotal += (q + 1) * bytes + r, rTotal += (r + 1) * bytes + q;
      b.send = input(o, idx, r, sTotal / es + 1);
      b.recv.assign(rTotal, 0xCD);
      size_t so = 0, ro = 0;
      for (int q = 0; q < p; ++q) {
        msgs.push_back(P2PMsg{b.send.data() + so, (q + 1) * bytes + r, q, 1});
        msgs.push_back(P2PMsg{b.recv.data() + ro, (r + 1) * bytes + q, q, 0});
        so += (q + 1) * bytes + r;
        ro += (r + 1) * bytes + q;
      }
    }
    P2PArgs a;
    ASSERT_TRUE(pl.p2p(msgs, &a));
    const std::function<void()> body = [&] { p2pKernelBody(ctx, a); };
    *err = d.launch(body, a.nblocks);
    return;
  }
  const bool rs = o.kind == K::ReduceScatter, ag = o.kind == K::AllGather;
  const size_t sendElems = rs ? p * o.count : o.count;
  const size_t recvElems = ag ? p * o.count : o.count;
  const size_t big = std::max(sendElems, recvElems);
  std::vector<uint8_t> in = input(o, idx, r, sendElems);
  b.send = in;
  b.recv.assign(big * es, 0xCD);
  const void* sp = b.send.data();
  void* rp = b.recv.data();
  if (o.inPlace) {
    const size_t inOff = ag ? r * o.count : 0, outOff = rs ? r * o.count : 0;
    std::memcpy(b.recv.data() + inOff * es, in.data(), in.size());
    sp = b.recv.data() + inOff * es;
    rp = b.recv.data() + outOff * es;
  }
  const CodecDesc* cd = codec ? &desc : nullptr;
  switch (o.kind) {
    case K::AllReduce:
    case K::ReduceScatter:
    case K::Reduce: {
      const Coll c = o.kind == K::AllReduce ? Coll::AllReduce
                     : rs                   ? Coll::ReduceScatter
                                            : Coll::Reduce;
      ReduceArgs a = pl.reduce(c, sp, rp, o.count, static_cast<int>(es), o.dt, o.op, o.root, cd);
      a.staged = (idx + r) % 2;  // the codec rings on some ranks and calls only: same bytes
      if (cd) {
        byTag(o.dt, [&](auto tag) { runCodecReduce<decltype(tag)>(d, ctx, a, err); });
      } else {
        const std::function<void()> body = [&] { reduceKernelBody<ExactMode>(ctx, a); };
        *err = d.launch(body, a.nblocks);
      }
      break;
    }
    default: {
      const Coll c = ag ? Coll::AllGather : Coll::Broadcast;
      GatherArgs a = pl.gather(c, r == o.root || ag ? sp : nullptr, rp, o.count,
                               static_cast<int>(es), o.dt, o.root, cd);
      a.staged = (idx + r) % 2;
      if (cd) {
        byTag(o.dt, [&](auto tag) { runCodecGather<decltype(tag)>(d, ctx, a, err); });
      } else {
        const std::function<void()> body = [&] { gatherKernelBody<ExactMode>(ctx, a); };
        *err = d.launch(body, a.nblocks);
      }
      break;
    }
  }
}

// ---- references ----------------------------------------------------------------------------------

// The expected receive buffer of rank r after op idx (given every rank's buffers before: the
// inputs are regenerated).
std::vector<uint8_t> expected(const World& w, int r, const Op& o, int idx) {
  const int p = w.p;
  const size_t es = dtypeSize(o.dt);
  CodecPtr codec = o.codec.empty() ? nullptr : makeCodec(o.codec);
  if (o.kind == K::Ring) return input(o, idx, (r - 1 + p) % p, o.count / es);
  if (o.kind == K::AllToAll) {
    std::vector<uint8_t> out;
    for (int q = 0; q < p; ++q) {
      size_t so = 0;
      for (int k = 0; k < r; ++k) so += (k + 1) * o.count + q;
      size_t sTotal = 0;
      for (int k = 0; k < p; ++k) sTotal += (k + 1) * o.count + q;
      std::vector<uint8_t> s = input(o, idx, q, sTotal / es + 1);
      out.insert(out.end(), s.begin() + static_cast<long>(so),
                 s.begin() + static_cast<long>(so + (r + 1) * o.count + q));
    }
    return out;
  }
  const bool rs = o.kind == K::ReduceScatter, ag = o.kind == K::AllGather;
  const size_t sendElems = rs ? p * o.count : o.count;
  const size_t recvElems = ag ? p * o.count : o.count;
  const size_t big = std::max(sendElems, recvElems);
  std::vector<std::vector<uint8_t>> ins;
  for (int q = 0; q < p; ++q) ins.push_back(input(o, idx, q, sendElems));
  // Start from what the receive buffer held before the call.
  std::vector<uint8_t> buf(big * es, 0xCD);
  size_t outOff = 0;
  if (o.inPlace) {
    const size_t inOff = ag ? r * o.count : 0;
    outOff = rs ? r * o.count : 0;
    std::memcpy(buf.data() + inOff * es, ins[r].data(), ins[r].size());
  }
  uint8_t* out = buf.data() + outOff * es;
  const float scale = o.op == cocclAvg ? 1.0f / static_cast<float>(p) : 1.0f;
  switch (o.kind) {
    case K::AllReduce:
      if (!codec) {
        std::vector<const void*> ptrs;
        for (auto& v : ins) ptrs.push_back(v.data());
        reduceArrays(out, ptrs.data(), p, o.count, o.dt, o.op, p);
      } else {
        const CodecDesc d = codec->deviceDesc();
        const auto shards = balancedShards(o.count, p, static_cast<size_t>(d.block));
        for (int j = 0; j < p; ++j) {
          const auto& sh = shards[static_cast<size_t>(j)];
          if (!sh.count) continue;
          std::vector<std::vector<uint8_t>> pay(static_cast<size_t>(p));
          std::vector<const void*> pp(static_cast<size_t>(p), nullptr);
          for (int q = 0; q < p; ++q) {
            if (q == j) continue;
            pay[q].resize(codec->encodedBytes(sh.count, o.dt));
            codec->encode(ins[q].data() + sh.begin * es, o.dt, sh.count, pay[q].data());
            pp[q] = pay[q].data();
          }
          std::vector<uint8_t> res(codec->encodedBytes(sh.count, o.dt));
          std::vector<float> scratch(sh.count);
          codec->decodeReduceEncode(pp.data(), p, j, ins[j].data() + sh.begin * es, o.dt,
                                    sh.count, scale, res.data(), scratch.data(),
                                    out + sh.begin * es);
        }
      }
      break;
    case K::ReduceScatter:
      if (!codec) {
        std::vector<const void*> ptrs;
        for (auto& v : ins) ptrs.push_back(v.data() + r * o.count * es);
        reduceArrays(out, ptrs.data(), p, o.count, o.dt, o.op, p);
      } else {
        std::vector<float> acc(o.count), z(o.count);
        for (int q = 0; q < p; ++q) {
          const uint8_t* src = ins[q].data() + r * o.count * es;
          if (q == r) {
            for (size_t i = 0; i < o.count; ++i) z[i] = toFloat(o.dt, src + i * es);
          } else {
            std::vector<uint8_t> pay(codec->encodedBytes(o.count, o.dt));
            codec->encode(src, o.dt, o.count, pay.data());
            codec->decode(pay.data(), o.count, cocclFloat32, z.data());
          }
          for (size_t i = 0; i < o.count; ++i) acc[i] = q == 0 ? z[i] : acc[i] + z[i];
        }
        if (scale != 1.0f)
          for (float& v : acc) v = v * scale;
        convertFromFloat(acc.data(), o.count, o.dt, out);
      }
      break;
    case K::Reduce:
      if (r == o.root) {
        std::vector<const void*> ptrs;
        for (auto& v : ins) ptrs.push_back(v.data());
        reduceArrays(out, ptrs.data(), p, o.count, o.dt, o.op, p);
      }
      break;
    case K::AllGather:
      for (int q = 0; q < p; ++q) {
        uint8_t* dst = buf.data() + q * o.count * es;
        if (!codec) {
          std::memcpy(dst, ins[q].data(), o.count * es);
        } else {
          std::vector<uint8_t> pay(codec->encodedBytes(o.count, o.dt));
          codec->encode(ins[q].data(), o.dt, o.count, pay.data());
          codec->decode(pay.data(), o.count, o.dt, dst);
        }
      }
      break;
    case K::Broadcast:
      std::memcpy(out, ins[o.root].data(), o.count * es);
      break;
    default:
      break;
  }
  return buf;
}

// ---- the test -----------------------------------------------------------------------------------

// kinds: the op kinds drawn from (0..8 as in the switch below); codecs: the codec specs.
struct PlanSpace {
  std::vector<const char*> codecs = {"fp8_ash_ds:block=32", "int8:block=64", "fp8_ash_ds",
                                     "fp8_ash_ds:block=32,format=e5m2", "int8:block=32,rotate=0",
                                     "fp8_ash_ds:block=64,rotate=0"};
  std::vector<size_t> counts = {1, 7, 33, 130, 1001, 4099};
  int kinds = 9;
  bool timePhases = false;  // COCCL_PHASE_TIMES: Ctx::phases set on every rank, then checked
};

std::vector<Op> plan(int p, uint64_t seed, int n, const PlanSpace& sp = PlanSpace()) {
  std::mt19937_64 g(seed);
  const cocclDataType_t exactTypes[] = {cocclFloat32, cocclBfloat16, cocclInt32, cocclFloat64,
                                        cocclUint8,   cocclFloat8e4m3, cocclInt64};
  const cocclDataType_t codecTypes[] = {cocclBfloat16, cocclFloat16, cocclFloat32};
  const auto& codecs = sp.codecs;
  const auto& counts = sp.counts;
  const uint64_t nc = codecs.size(), nn = counts.size();
  std::vector<Op> ops;
  for (int i = 0; i < n; ++i) {
    Op o;
    const int k = static_cast<int>(g() % static_cast<uint64_t>(sp.kinds));
    o.count = counts[g() % nn];
    o.inPlace = g() % 2;
    o.root = static_cast<int>(g() % static_cast<uint64_t>(p));
    const bool compressed = g() % 2 == 0;
    if (compressed && k < 5) {
      o.codec = codecs[g() % nc];
      o.dt = codecTypes[g() % 3];
      o.op = g() % 3 == 0 ? cocclAvg : cocclSum;
    } else {
      o.dt = exactTypes[g() % 7];
      o.op = static_cast<cocclRedOp_t>(g() % 5);
    }
    switch (k) {
      case 0: case 1: o.kind = K::AllReduce; break;
      case 2: o.kind = K::ReduceScatter; break;
      case 3: case 4: o.kind = K::AllGather; break;
      case 5: o.kind = K::Broadcast; o.codec.clear(); break;
      case 6: o.kind = K::Reduce; o.codec.clear(); break;
      case 7: o.kind = K::Ring; o.codec.clear(); o.dt = cocclUint8; o.count = counts[g() % nn] * 9 + 3; break;
      default: o.kind = K::AllToAll; o.codec.clear(); o.dt = cocclUint8; o.count = counts[g() % nn] + 5; break;
    }
    if (o.codec.empty() && (o.kind == K::AllReduce || o.kind == K::ReduceScatter) &&
        (o.dt == cocclUint8))
      o.dt = cocclInt32;
    ops.push_back(o);
  }
  return ops;
}

// The phase counters (dev_types.h PhaseWord) after a run: channel 0 runs in every collective
// call, so its kernel count is the number of collectives; every block ran at least one round a
// kernel; the phases of a block lie inside its whole time; nothing past the channels.
void checkPhases(const World& w, const std::vector<Op>& ops,
                 const std::vector<std::vector<uint64_t>>& phases) {
  uint64_t colls = 0;
  for (const Op& o : ops) colls += o.kind == K::Ring || o.kind == K::AllToAll ? 0 : 1;
  ASSERT_GT(colls, 0u);
  for (int r = 0; r < w.p; ++r)
    for (int b = 0; b < kMaxBlocks; ++b) {
      const uint64_t* c = &phases[r][static_cast<size_t>(b) * kPhaseWords];
      if (b >= w.nb) {
        for (int i = 0; i < kPhaseWords; ++i) EXPECT_EQ(c[i], 0u) << "rank " << r << " block " << b;
        continue;
      }
      if (b == 0) {
        EXPECT_EQ(c[kPhRuns], colls) << "rank " << r;
        EXPECT_GT(c[kPhTotal], 0u) << "rank " << r;
      }
      EXPECT_GE(c[kPhRounds], c[kPhRuns]) << "rank " << r << " block " << b;
      uint64_t parts = 0;
      for (int i = 0; i < kPhTotal; ++i) parts += c[i];
      EXPECT_LE(parts, c[kPhTotal]) << "rank " << r << " block " << b;
      if (c[kPhRuns] == 0) {
        EXPECT_EQ(c[kPhTotal], 0u) << "rank " << r << " block " << b;
      }
    }
}

void runWorld(int p, int nb, uint64_t staging, uint64_t seed, int nops,
              const PlanSpace& sp = PlanSpace(), uint64_t blockBytes = kCallBlockBytes,
              int minBlocks = kMinCallBlocks) {
  World w(p, nb, staging);
  w.blockBytes = blockBytes;
  w.minBlocks = minBlocks;
  std::vector<std::vector<uint64_t>> phases(static_cast<size_t>(p));
  if (sp.timePhases)
    for (int r = 0; r < p; ++r) {
      phases[r].assign(static_cast<size_t>(kMaxBlocks) * kPhaseWords, 0);
      w.ctx[static_cast<size_t>(r)].phases = phases[r].data();
    }
  const std::vector<Op> ops = plan(p, seed, nops, sp);
  if (std::getenv("COCCL_EMU_VERBOSE"))
    for (size_t i = 0; i < ops.size(); ++i)
      std::fprintf(stderr, "%s\n", describe(ops[i], static_cast<int>(i)).c_str());
  std::vector<std::vector<Buffers>> results(static_cast<size_t>(p), std::vector<Buffers>(ops.size()));
  std::vector<std::string> errors(static_cast<size_t>(p));
  std::vector<std::thread> ranks;
  for (int r = 0; r < p; ++r)
    ranks.emplace_back([&, r] {
      EmuDevice d(nb);
      for (size_t i = 0; i < ops.size(); ++i) {
        std::string err;
        if (i == 1 && std::getenv("COCCL_EMU_VERBOSE")) coccl_emu_trace_on = true;
        runOp(w, d, r, ops[i], static_cast<int>(i), &results[r][i], &err);
        if (!err.empty() || w.host[static_cast<size_t>(r)].error) {
          errors[r] = describe(ops[i], static_cast<int>(i)) + ": " +
                      (err.empty() ? "device error " + std::to_string(w.host[r].error) : err);
          return;
        }
      }
    });
  for (auto& t : ranks) t.join();
  bool anyError = false;
  for (int r = 0; r < p; ++r) anyError = anyError || !errors[r].empty();
  if (anyError && std::getenv("COCCL_EMU_VERBOSE")) {
    for (int r = 0; r < p; ++r) std::fprintf(stderr, "rank %d error: %s (errPeer %d block %d)\n", r, errors[r].c_str(), w.host[r].errPeer, w.host[r].errBlock);
    for (int r = 0; r < p; ++r) {
      const auto* m = reinterpret_cast<const uint64_t*>(w.mem[r].get());
      for (int q = 0; q < p; ++q)
        for (int b = 0; b < nb; ++b) {
          const size_t i = static_cast<size_t>(q) * nb + b;
          std::fprintf(stderr, "rank %d peer %d block %d: seq %llu push %llu pull %llu free %llu\n",
                       r, q, b, (unsigned long long)m[w.lay.offSeq / 8 + i],
                       (unsigned long long)m[w.lay.offPush / 8 + i],
                       (unsigned long long)m[w.lay.offPull / 8 + i],
                       (unsigned long long)m[w.lay.offFree / 8 + i]);
        }
    }
  }
  for (int r = 0; r < p; ++r) ASSERT_TRUE(errors[r].empty()) << "rank " << r << ": " << errors[r];
  for (size_t i = 0; i < ops.size(); ++i)
    for (int r = 0; r < p; ++r) {
      const std::vector<uint8_t> want = expected(w, r, ops[i], static_cast<int>(i));
      const std::vector<uint8_t>& got = results[r][i].recv;
      ASSERT_EQ(got.size(), want.size()) << describe(ops[i], static_cast<int>(i));
      size_t bad = 0, first = 0;
      const bool flt = ops[i].dt == cocclFloat32 || ops[i].dt == cocclFloat64;
      const size_t es = flt ? dtypeSize(ops[i].dt) : 1;
      for (size_t k = 0; k < got.size(); k += es) {
        if (std::memcmp(&got[k], &want[k], es) == 0) continue;
        if (flt) {  // NaN payloads depend on operand order (compiler, GPU canonical NaN)
          const bool gn = es == 4 ? std::isnan(*reinterpret_cast<const float*>(&got[k]))
                                  : std::isnan(*reinterpret_cast<const double*>(&got[k]));
          const bool wn = es == 4 ? std::isnan(*reinterpret_cast<const float*>(&want[k]))
                                  : std::isnan(*reinterpret_cast<const double*>(&want[k]));
          if (gn && wn) continue;
        }
        if (bad++ == 0) first = k;
      }
      std::string detail;
      if (bad) {
        const size_t es = ops[i].kind == K::Ring || ops[i].kind == K::AllToAll ? 1 : dtypeSize(ops[i].dt);
        const size_t e0 = first / es * es;
        char hex[8];
        detail = " got";
        for (size_t k = e0 + es; k-- > e0;) std::snprintf(hex, sizeof(hex), "%02x", got[k]), detail += hex;
        detail += " want ";
        for (size_t k = e0 + es; k-- > e0;) std::snprintf(hex, sizeof(hex), "%02x", want[k]), detail += hex;
      }
      EXPECT_EQ(bad, 0u) << "rank " << r << " " << describe(ops[i], static_cast<int>(i))
                         << ": " << bad << " bytes differ, first " << first << " of " << got.size()
                         << detail;
      if (bad) return;
    }
  // Every pair's round numbers agree and every staged round was acknowledged (what
  // CudaIpcExecutor::quiesce waits for before freeing).
  for (int r = 0; r < p; ++r)
    for (int q = 0; q < p; ++q)
      for (int b = 0; b < nb && q != r; ++b) {
        const auto* mr = reinterpret_cast<const char*>(w.mem[r].get());
        const auto* mq = reinterpret_cast<const char*>(w.mem[q].get());
        const size_t i = static_cast<size_t>(q) * nb + b, j = static_cast<size_t>(r) * nb + b;
        const uint64_t seqRQ = reinterpret_cast<const uint64_t*>(mr + w.lay.offSeq)[i];
        const uint64_t seqQR = reinterpret_cast<const uint64_t*>(mq + w.lay.offSeq)[j];
        EXPECT_EQ(seqRQ, seqQR) << "pair " << r << "," << q << " block " << b;
        EXPECT_EQ(reinterpret_cast<const uint64_t*>(mr + w.lay.offFree)[i], seqRQ);
      }
  if (sp.timePhases) checkPhases(w, ops, phases);
}

TEST(DeviceEmulated, TwoRanks) { runWorld(2, 3, 24 << 10, 11, 150); }
TEST(DeviceEmulated, ThreeRanks) { runWorld(3, 2, 24 << 10, 12, 150); }
TEST(DeviceEmulated, FourRanks) { runWorld(4, 3, 32 << 10, 13, 150); }
TEST(DeviceEmulated, FourRanksOneBlockManyRounds) { runWorld(4, 1, 8 << 10, 14, 100); }
TEST(DeviceEmulated, FiveRanksFourBlocks) { runWorld(5, 4, 48 << 10, 15, 100); }
// Calls of one communicator on different numbers of its channels (small messages on fewer
// blocks): every channel keeps its own round numbers with every peer.
TEST(DeviceEmulated, BlocksPerCallVary) {
  runWorld(3, 4, 32 << 10, 18, 150, PlanSpace(), 1024, 1);
  runWorld(2, 5, 24 << 10, 19, 100, PlanSpace(), 4096, 2);
}
// Reductions and gathers only, with the large codec blocks and counts of several rounds.
TEST(DeviceEmulated, LargeBlocksManyRounds) {
  PlanSpace sp;
  sp.codecs = {"int8:block=512,rotate=0", "fp8_ash_ds:block=256", "fp8_ash_ds:block=512"};
  sp.counts = {7, 4099, 20011};
  sp.kinds = 5;
  runWorld(2, 3, 64 << 10, 16, 40, sp);
  runWorld(3, 2, 64 << 10, 17, 30, sp);
}

// COCCL_PHASE_TIMES: the kernels time their phases (a barrier at each phase's end) and give
// the same bytes.
TEST(DeviceEmulated, PhaseTimes) {
  PlanSpace sp;
  sp.timePhases = true;
  runWorld(3, 3, 24 << 10, 21, 80, sp);
  runWorld(2, 4, 32 << 10, 22, 60, sp, 1024, 1);
}

// COCCL_DEVICE_BLOCKS=0: on a GPU of its own a communicator takes 128 blocks (at most what the
// GPU holds at once); k ranks sharing a GPU leave room for two kernels each (residency.h).
TEST(DeviceBlocks, AutoRuleFitsTheGpu) {
  EXPECT_EQ(dev::autoBlocks(1, 132), 128);
  EXPECT_EQ(dev::autoBlocks(1, 108), 108);
  EXPECT_EQ(dev::autoBlocks(1, 0), 128);  // capacity unknown
  EXPECT_EQ(dev::autoBlocks(2, 132), 32);
  EXPECT_EQ(dev::autoBlocks(3, 132), 22);
  EXPECT_EQ(dev::autoBlocks(4, 132), 16);
  EXPECT_EQ(dev::autoBlocks(8, 132), 8);
  EXPECT_EQ(dev::autoBlocks(2, 0), 32);
  EXPECT_EQ(dev::autoBlocks(100, 132), 1);
  for (int k = 2; k <= dev::kMaxRanks; ++k)
    for (int cap : {16, 56, 108, 132, 264, 1056}) {
      const int nb = dev::autoBlocks(k, cap);
      EXPECT_GE(nb, 1);
      EXPECT_LE(nb, dev::kAutoBlocksSharedGpu);
      if (cap >= 2 * k) {
        EXPECT_LE(2 * k * nb, cap) << k << " ranks, capacity " << cap;
      }
    }
}

}  // namespace
