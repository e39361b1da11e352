// kernels::decodeAccumulate: acc += decode(ins[0]) + ... in one pass (codec x block size; the
// accumulator is fp32 whatever the payload's input type).
#include "kernels/cuda/codec_kernels.cuh"
#include "codecs/none/none_kernels.cuh"

namespace coccl {
namespace kernels {

void decodeAccumulate(const CodecDesc& d, const void* const* ins, int p, size_t count,
                      cocclDataType_t dt, float* acc, cudaStream_t stream) {
  constexpr const char* kWhat = "kernels::decodeAccumulate";
  detail::checkDesc(d, kWhat);
  detail::checkCodecType(d, dt, kWhat);
  detail::checkInputCount(p, -1, kWhat);
  if (count == 0) return;  // a no-op before any pointer is looked at
  detail::checkInputs(ins, p, -1, kWhat);
  detail::checkPtr(acc, "acc", kWhat);
  if (d.kind == CodecKind::None) {
    detail::noneReduce(ins, p, -1, nullptr, dt, count, 1.0f, true, acc, nullptr, stream, kWhat);
    return;
  }
  // reduceChunkT with the accumulator as the raw input of rank 0 and the payloads after it
  detail::ReduceArgs a{};
  a.d = d;
  a.ins[0] = nullptr;
  for (int r = 0; r < p; ++r) a.ins[r + 1] = static_cast<const uint8_t*>(ins[r]);
  a.p = p + 1;
  a.self = 0;
  a.selfIn = acc;
  a.n = count;
  a.scale = 1.0f;
  a.out = nullptr;
  a.userOut = acc;
  const size_t nb = (count + static_cast<size_t>(d.block) - 1) / static_cast<size_t>(d.block);
  detail::dispatchFamily(d, [&](auto fam) {
    detail::dispatchG(d.block, [&](auto g) {
      using Fam = decltype(fam);
      constexpr int G = decltype(g)::value;
      detail::launch<detail::accumulateKernel<Fam, G>>(a, detail::warpsFor<G, kdev::Fp32Tag>(nb),
                                                       stream, kWhat);
    });
  });
}

}  // namespace kernels
}  // namespace coccl
