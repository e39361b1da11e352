// same_bytes_as_reference (coccl_codec_check --against PLUGIN.so): the codec's host operations
// against those of another build of the same plug-in, loaded with dlopen beside the registry
// (the registry holds one codec per name). encode, decode, decodeAccumulate and
// decodeReduceEncode on every input kind, every type, partial and whole blocks, non-finite
// values where the codec carries them, compared byte for byte. The descriptor's formatVersion
// promises that equal versions give equal bytes (include/coccl_codec.h): bytes that differ
// under one formatVersion fail; under different versions they are reported, not failed.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "battery.h"
#include "battery_util.h"
#include "coccl_codec.h"

namespace coccl {
namespace check {

using namespace detail;

namespace {

// The reference plug-in: its descriptor and one instance of the codec's spec.
class Reference {
 public:
  Reference(const std::string& path, const Codec& c) {
    lib_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) throw std::runtime_error("cannot load " + path + ": " + dlerror());
    d_ = static_cast<const cocclCodecPlugin_v1_t*>(dlsym(lib_, "cocclCodecPlugin_v1"));
    if (!d_) throw std::runtime_error(path + " exports no cocclCodecPlugin_v1");
    if (d_->abiVersion != COCCL_CODEC_ABI_V1 || d_->structSize < sizeof(cocclCodecPlugin_v1_t))
      throw std::runtime_error(path + ": not a v1 codec plug-in (abiVersion " +
                               std::to_string(d_->abiVersion) + ")");
    if (std::string(d_->name) != c.name())
      throw std::runtime_error(path + " holds codec '" + d_->name + "', not '" + c.name() + "'");
    const std::string& spec = c.spec();
    const size_t colon = spec.find(':');
    const std::string params = colon == std::string::npos ? "" : spec.substr(colon + 1);
    char err[256] = {0};
    if (d_->create(params.c_str(), &inst_, err, sizeof err) != 0)
      throw std::runtime_error(path + " refuses '" + params + "': " + err);
    char canon[512] = {0};
    d_->canonicalSpec(inst_, canon, sizeof canon);
    if (spec != canon)
      throw std::runtime_error(path + " reads the spec as '" + std::string(canon) + "', not '" +
                               spec + "'");
  }
  ~Reference() {
    if (inst_ && d_->destroy) d_->destroy(inst_);
    // not dlclose'd: a plug-in may keep thread-local or static state alive past its last call
  }
  const cocclCodecPlugin_v1_t& desc() const { return *d_; }
  void* inst() const { return inst_; }
  // A workspace of the size the reference asks for (host operations), 256-byte aligned.
  void* workspace(size_t n, cocclDataType_t dt, int p) {
    const size_t bytes = d_->workspaceBytes ? d_->workspaceBytes(inst_, n, dt, p, 0) : 0;
    ws_.assign(bytes + 256, 0);
    if (!bytes) return nullptr;
    const uintptr_t a = reinterpret_cast<uintptr_t>(ws_.data());
    return ws_.data() + ((256 - a % 256) % 256);
  }

 private:
  void* lib_ = nullptr;
  const cocclCodecPlugin_v1_t* d_ = nullptr;
  void* inst_ = nullptr;
  std::vector<uint8_t> ws_;
};

std::string firstDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i]) return fmt("byte %zu: 0x%02x here, 0x%02x in the reference", i, a[i], b[i]);
  return fmt("sizes %zu and %zu", a.size(), b.size());
}

}  // namespace

CheckResult checkAgainst(const Codec& c, const Options& opt) {
  Reference ref(opt.against, c);
  const cocclCodecPlugin_v1_t& d = ref.desc();
  const bool dre = (d.capabilities & COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE) != 0;
  const bool nonFinite = (c.capabilities() & COCCL_CODEC_CAP_NONFINITE) != 0;
  const size_t G = c.blockElems();
  std::vector<size_t> counts = {1, G > 1 ? G - 1 : 1, 3 * G + 17, 64 * G};
  if (opt.quick) counts.pop_back();
  Tally t;
  size_t compared = 0;
  auto same = [&](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                  const std::string& what) {
    ++t.calls;
    compared += a.size();
    if (a != b) t.fail(what + ": " + firstDiff(a, b));
  };
  std::vector<std::string> kinds = inputKinds();
  if (nonFinite) kinds.push_back("non_finite");
  for (cocclDataType_t dt : kTypes) {
    if (!c.supportsType(dt) || !(d.dtypeMask & COCCL_CODEC_DTYPE_BIT(dt))) continue;
    for (const std::string& kind : kinds)
      for (size_t want : counts) {
        const size_t n = countFor(c, want);
        const std::string at = fmt("%s %s n=%zu", kind.c_str(), typeName(dt), n);
        std::vector<std::vector<uint8_t>> in, mine;
        for (int r = 0; r < 3; ++r) {
          std::vector<float> v =
              makeInput(kind == "non_finite" ? "normal" : kind, n, opt.seed + 7 * r + n, G);
          if (kind == "non_finite")
            for (size_t i = r; i < n; i += 37) v[i] = i % 3 == 0 ? NAN : (i % 3 == 1 ? INFINITY : -INFINITY);
          in.push_back(toType(v, dt));
          const size_t eb = c.encodedBytes(n, dt);
          std::vector<uint8_t> a(eb), b(eb);
          c.encode(in[r].data(), dt, n, a.data());
          if (d.host.encode(ref.inst(), in[r].data(), dt, n, b.data(), ref.workspace(n, dt, 1)) != 0)
            t.fail(at + ": the reference's encode failed");
          same(a, b, at + " encode");
          mine.push_back(std::move(a));
        }
        std::vector<uint8_t> a(n * typeSize(dt)), b(n * typeSize(dt));
        c.decode(mine[0].data(), n, dt, a.data());
        d.host.decode(ref.inst(), mine[0].data(), n, dt, b.data(), ref.workspace(n, dt, 1));
        same(a, b, at + " decode");
        const void* ins[3] = {mine[0].data(), mine[1].data(), mine[2].data()};
        std::vector<uint8_t> accA(4 * n), accB(4 * n);
        for (size_t i = 0; i < n; ++i) {
          const float q = 0.25f * static_cast<float>(i % 5);
          std::memcpy(&accA[4 * i], &q, 4);
          std::memcpy(&accB[4 * i], &q, 4);
        }
        c.decodeAccumulateMany(ins, 3, n, dt, reinterpret_cast<float*>(accA.data()));
        d.host.decodeAccumulate(ref.inst(), ins, 3, n, dt, reinterpret_cast<float*>(accB.data()),
                                ref.workspace(n, dt, 3));
        same(accA, accB, at + " decodeAccumulate");
        if (!dre || !d.host.decodeReduceEncode) continue;
        for (float scale : {1.0f, 1.0f / 3}) {
          const size_t eb = c.encodedBytes(n, dt);
          std::vector<uint8_t> oa(eb), ob(eb), xa(n * typeSize(dt)), xb(n * typeSize(dt));
          std::vector<float> scratch(n);
          c.decodeReduceEncode(ins, 3, 1, in[1].data(), dt, n, scale, oa.data(), scratch.data(),
                               xa.data());
          d.host.decodeReduceEncode(ref.inst(), ins, 3, 1, in[1].data(), dt, n, scale, ob.data(),
                                    xb.data(), ref.workspace(n, dt, 3));
          same(oa, ob, at + fmt(" decodeReduceEncode (scale %g)", scale));
          same(xa, xb, at + fmt(" decodeReduceEncode's decoded output (scale %g)", scale));
        }
      }
  }
  const bool sameFormat = d.formatVersion == c.formatVersion();
  std::string numbers = fmt("calls %zu  bytes %zu  differ %zu  formatVersion %u here, %u there",
                            t.calls, compared, t.bad, c.formatVersion(), d.formatVersion);
  if (!sameFormat)
    numbers += t.bad ? "  (bytes differ: the versions say so)" : "  (the bytes did not change)";
  std::string detail = t.first;
  if (t.bad && sameFormat)
    detail += " (the same formatVersion must give the same bytes: bump it, or fix the change)";
  return {"same_bytes_as_reference", t.bad == 0 || !sameFormat, numbers, detail};
}

}  // namespace check
}  // namespace coccl
