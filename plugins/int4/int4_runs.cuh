// int4 codec: the device kernels' memory side (included by int4_device.cu inside its anonymous
// namespace): typed 16-byte runs <-> fp32 values (vector and element-by-element loads and
// stores with the host's conversions), a 16-bit lane's LaneStats from its loaded words, and the
// payload's code and scale words, in int4_tile.cuh's layout.
#pragma once

// ---- typed runs: one 16-byte vector <-> R = 16 / sizeof(T) fp32 values -----------------------
// pack(v, nanFree): nanFree says no element is NaN (the hardware's paired conversions give a
// different NaN than Io<T>::store), which holds for everything but RAW blocks.
template <typename T>
struct RunIo;

template <>
struct RunIo<float> {
  static constexpr int R = 4;
  __device__ static void unpack(const uint4& r, float (&v)[R]) {
    v[0] = bitsf(r.x);
    v[1] = bitsf(r.y);
    v[2] = bitsf(r.z);
    v[3] = bitsf(r.w);
  }
  __device__ static uint4 pack(const float (&v)[R], bool) {
    return make_uint4(fbits(v[0]), fbits(v[1]), fbits(v[2]), fbits(v[3]));
  }
};

template <typename T, typename Pair>
struct RunIo16 {
  static constexpr int R = 8;
  __device__ static uint32_t pair(float lo, float hi, bool nanFree) {
    if (nanFree) return Pair::pack(lo, hi);
    return static_cast<uint32_t>(Io<T>::store(lo).v) |
           (static_cast<uint32_t>(Io<T>::store(hi).v) << 16);
  }
  __device__ static void unpack(const uint4& r, float (&v)[R]) {
    Pair::unpack(r.x, v[0], v[1]);
    Pair::unpack(r.y, v[2], v[3]);
    Pair::unpack(r.z, v[4], v[5]);
    Pair::unpack(r.w, v[6], v[7]);
  }
  __device__ static uint4 pack(const float (&v)[R], bool nanFree) {
    return make_uint4(pair(v[0], v[1], nanFree), pair(v[2], v[3], nanFree),
                      pair(v[4], v[5], nanFree), pair(v[6], v[7], nanFree));
  }
};

struct Bf16Pair {
  __device__ static void unpack(uint32_t w, float& lo, float& hi) {
    lo = bitsf(w << 16);
    hi = bitsf(w & 0xffff0000u);
  }
  __device__ static uint32_t pack(float lo, float hi) {  // cvt.rn.bf16x2.f32
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

struct HalfPair {
  __device__ static void unpack(uint32_t w, float& lo, float& hi) {  // exact widening
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w));
    lo = f.x;
    hi = f.y;
  }
  __device__ static uint32_t pack(float lo, float hi) {  // cvt.rn.f16x2.f32
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

template <>
struct RunIo<Bf16> : RunIo16<Bf16, Bf16Pair> {};
template <>
struct RunIo<Half> : RunIo16<Half, HalfPair> {};

// The lane's tile::LaneStats from its 16-bit words as loaded. |x| as a 16-bit integer (the sign
// cleared) orders as the values do, NaN above +-Inf, and is 0 exactly where x is +-0; the 16x2
// integer min and max (VIMNMX.U16x2 on sm_90) take two elements an instruction: about 1.5
// instructions an element for both figures, where the fp32 values' forms take 5.
template <typename T, int J>
__device__ __forceinline__ tile::LaneStats laneStats16(const uint4 (&r)[J]) {
  uint32_t m = 0, n = 0;  // n: a count a half (at most 4 J each: no carry)
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const uint32_t w[4] = {r[j].x, r[j].y, r[j].z, r[j].w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t t = w[i] & 0x7fff7fffu;
      m = __vmaxu2(m, t);
      n += __vminu2(t, 0x00010001u);
    }
  }
  const uint32_t h = max(m & 0xffffu, m >> 16);
  uint32_t amax;  // exact for finite values; a NaN's bits stay above 0x7f800000
  if constexpr (std::is_same<T, Bf16>::value)
    amax = h << 16;
  else
    amax = fbits(__half2float(__ushort_as_half(static_cast<unsigned short>(h))));
  return tile::LaneStats{amax, (n & 0xffffu) + (n >> 16)};
}

// The tile shape of blocks of G elements of T.
template <typename T, int G, bool Wide = false>
using ShapeOf = Shape<G, RunIo<T>::R, Wide>;

// The lane's vectors of a block (whole, 16-byte aligned) from the lane's first element p
// (= in + base + k R): the runs at fixed offsets from it.
template <class Sh, typename T>
__device__ __forceinline__ void loadVecAt(const T* p, uint4 (&r)[Sh::J]) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j)
    r[j] = __ldg(reinterpret_cast<const uint4*>(p + Sh::runStart(j, 0)));
}
// The same for the block at element `base`.
template <typename T, class Sh>
__device__ __forceinline__ void loadVec(const T* in, size_t base, int k, uint4 (&r)[Sh::J]) {
  loadVecAt<Sh>(in + base + k * Sh::R, r);
}

template <typename T, class Sh>
__device__ __forceinline__ void unpackVec(const uint4 (&r)[Sh::J], float (&x)[Sh::J][Sh::R]) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) RunIo<T>::unpack(r[j], x[j]);
}

// Element by element, +0 at and past count (Io<T>::load: the host's conversions).
template <typename T, class Sh>
__device__ __forceinline__ void loadScalar(const T* in, size_t count, size_t base, int k,
                                           float (&x)[Sh::J][Sh::R]) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) {
    const size_t i0 = base + Sh::runStart(j, k);
#pragma unroll
    for (int e = 0; e < Sh::R; ++e) x[j][e] = i0 + e < count ? Io<T>::load(in[i0 + e]) : 0.0f;
  }
}

// Loads the lane's part of the block at `base`: vectors where the block is whole and in is
// 16-byte aligned (vec), else scalars.
template <typename T, class Sh>
__device__ __forceinline__ void loadRun(const T* in, size_t count, size_t base, int k, bool vec,
                                        float (&x)[Sh::J][Sh::R]) {
  if (vec && base + Sh::G <= count) {
    uint4 r[Sh::J];
    loadVec<T, Sh>(in, base, k, r);
    unpackVec<T, Sh>(r, x);
  } else {
    loadScalar<T, Sh>(in, count, base, k, x);
  }
}

// Stream: an output that nothing in the operation reads again (decode, the owner step's decoded
// copy) is stored with st.global.cs (evict first): plain-mode decode of 256 MiB bf16 0.118 ->
// 0.104 ms on one H200; the accumulator, read again by the next accumulate, keeps plain stores.
template <typename T, class Sh, bool Stream>
__device__ __forceinline__ void storeRun(T* out, size_t count, size_t base, int k, bool vec,
                                         bool nanFree, const float (&v)[Sh::J][Sh::R]) {
  if (vec && base + Sh::G <= count) {
#pragma unroll
    for (int j = 0; j < Sh::J; ++j) {
      uint4* dst = reinterpret_cast<uint4*>(out + base + Sh::runStart(j, k));
      if constexpr (Stream)
        __stcs(dst, RunIo<T>::pack(v[j], nanFree));
      else
        *dst = RunIo<T>::pack(v[j], nanFree);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) {
    const size_t i0 = base + Sh::runStart(j, k);
#pragma unroll
    for (int e = 0; e < Sh::R; ++e)
      if (i0 + e < count) out[i0 + e] = Io<T>::store(v[j][e]);
  }
}

// The lane's code words of block b (R / 2 bytes each) and the block's scale word.
template <class Sh>
__device__ __forceinline__ uint32_t loadCodes(const uint8_t* payload, size_t nb, size_t b, int k,
                                              uint32_t (&q)[Sh::J]) {
  const uint8_t* codes = payload + b * (Sh::G / 2);
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) {
    const uint8_t* c = codes + Sh::runStart(j, k) / 2;
    if constexpr (Sh::R == 8)
      q[j] = __ldg(reinterpret_cast<const uint32_t*>(c));
    else
      q[j] = __ldg(reinterpret_cast<const unsigned short*>(c));
  }
  return __ldg(reinterpret_cast<const uint32_t*>(payload + nb * (Sh::G / 2)) + b);
}

// Stores them: the code words from the lane's first code byte c0 (= payload + b G / 2 + k R /
// 2), the scale word into scales[b] (scales = payload + nb G / 2).
template <class Sh>
__device__ __forceinline__ void storeCodesAt(uint8_t* c0, uint32_t* scales, size_t b, int k,
                                             const uint32_t (&q)[Sh::J], uint32_t word) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) {
    uint8_t* c = c0 + Sh::runStart(j, 0) / 2;
    if constexpr (Sh::R == 8)
      *reinterpret_cast<uint32_t*>(c) = q[j];
    else
      *reinterpret_cast<uint16_t*>(c) = static_cast<uint16_t>(q[j]);
  }
  if (k == 0) scales[b] = word;
}
template <class Sh>
__device__ __forceinline__ void storeCodes(uint8_t* payload, size_t nb, size_t b, int k,
                                           const uint32_t (&q)[Sh::J], uint32_t word) {
  storeCodesAt<Sh>(payload + b * (Sh::G / 2) + k * (Sh::R / 2),
                   reinterpret_cast<uint32_t*>(payload + nb * (Sh::G / 2)), b, k, q, word);
}
