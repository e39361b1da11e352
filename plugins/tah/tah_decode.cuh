// tah's decode kernel (included by tah_device.cu, inside its anonymous namespace): batches of
// 32 tiles a warp (tah_slab.cuh), lane l decoding tile l into the slab; tiles with the Hadamard
// flag go to groups of 8 lanes (tah_group.cuh).
#pragma once

// A lane's tile from its codes c (B bits each: 4-bit, word m is codes 8m .. 8m+7; 3-bit, bytes
// 3m .. 3m+2) into v (add: v +=); a tile that cannot lie in the code section decodes with z and
// s 0 (each value 0 + c * 0 = +0, the host's 0). Partly unrolled: the loop's code stays small.
template <int B>
__device__ __forceinline__ void decodeLane(const uint8_t* c, float z, float s, bool add, float* v) {
#pragma unroll 2
  for (int m = 0; m < 8; ++m) {
    const uint32_t g =
        B == 4 ? reinterpret_cast<const uint32_t*>(c)[m]
               : c[3 * m] | c[3 * m + 1] << 8 | static_cast<uint32_t>(c[3 * m + 2]) << 16;
    float d[8];
    for (int k = 0; k < 8; ++k) d[k] = tah_value((g >> (B * k)) & ((1u << B) - 1u), z, s);
    for (int k = 0; k < 8; k += 4) {
      float4 o = make_float4(d[k], d[k + 1], d[k + 2], d[k + 3]);
      if (add) {
        const float4 a = *reinterpret_cast<const float4*>(v + 8 * m + k);
        o = make_float4(TAH_ADD(a.x, o.x), TAH_ADD(a.y, o.y), TAH_ADD(a.z, o.z), TAH_ADD(a.w, o.w));
      }
      *reinterpret_cast<float4*>(v + 8 * m + k) = o;
    }
  }
}

// A tile whose codes are read from the payload itself (a garbage header's batch, whose codes
// are not contiguous) or that decodes as zeros: out of line, so that the common path's codes are
// known to be in shared memory (shared loads, not generic ones).
__device__ __noinline__ void decodeLaneFromPayload(const uint8_t* c, int three, float z, float s,
                                                   bool add, float* v) {
  if (three)
    decodeLane<3>(c, z, s, add, v);
  else
    decodeLane<4>(c, z, s, add, v);
}

// Group of 8 lanes: tile `tile` (slab row ti) with the Hadamard flag into the slab (add: +=).
// Out of line: rare, and the main loop's code must stay small.
__device__ __noinline__ void hadamardDecode(Slab& S, const uint8_t* pay, const Geo& geo,
                                            size_t tile, int ti, bool add) {
  size_t rt, tt;
  tileRT(geo, tile, &rt, &tt);
  float d[8];
  gDecodeTile(groupMask(), pay, geo.L, geo.R, rt, tt, d);
  float* v = S.v + ti * kPitch + 8 * (laneId() & 7);
  for (int k = 0; k < 8; ++k) v[k] = add ? TAH_ADD(v[k], d[k]) : d[k];
}

// A batch's tile placement, scale, zero and flag, lane l's tile's (loaded by loadHead; the
// loads are issued there, their values used by stageCodes and decodeStaged).
struct BatchHead {
  LaneTile lt;
  uint32_t meta;
  unsigned flag;
};
__device__ __forceinline__ BatchHead loadHead(const uint8_t* pay, const Geo& geo, const Batch& bt) {
  BatchHead h;
  h.lt = laneTile(pay, geo, bt);
  h.meta = 0;
  h.flag = 0;
  if (h.lt.act && h.lt.ok) {
    h.meta = reinterpret_cast<const uint32_t*>(pay + geo.L.metaOff)[h.lt.tile];
    h.flag = pay[geo.L.flagOff + h.lt.tile];
  }
  return h;
}

// One 4-byte copy from global to shared memory: asynchronous on the GPU (cp.async, sm_80 on;
// codesArrived() waits for the lane's copies), a plain copy elsewhere.
__device__ __forceinline__ void copyWordAsync(uint32_t* dst, const uint32_t* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src) : "memory");
#else
  *dst = *src;
#endif
}
// The lane's copies issued so far have arrived, and (after the __syncwarp) every lane's.
__device__ __forceinline__ void codesArrived() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory");
#endif
  __syncwarp();
}

// Where a lane's codes lie: in `codes` (staged: the batch's codes are contiguous, as in every
// valid payload), else (a garbage header) in the payload itself; rel: bytes from the batch's
// first code (staged).
struct BatchCodes {
  bool staged;
  size_t rel;
};
// The batch's codes into `codes` when they are contiguous (asynchronously on the GPU: the
// lanes' copies are issued, codesArrived() waits for them); reads only inside the code section.
__device__ __forceinline__ BatchCodes stageCodes(uint32_t* codes, const uint8_t* pay,
                                                 const Geo& geo, const BatchHead& h) {
  const LaneTile& lt = h.lt;
  const bool live = lt.act && lt.ok;
  const size_t off0 = shfl64(lt.off, 0);
  const bool contiguous = !live || (lt.off >= off0 && lt.off - off0 <= 4u * kCodeWords - lt.size);
  BatchCodes bc;
  bc.staged = __all_sync(0xffffffffu, contiguous) && __shfl_sync(0xffffffffu, lt.ok ? 1u : 0u, 0);
  bc.rel = lt.off - off0;
  if (bc.staged) {
    const unsigned span = warpMax(live ? static_cast<unsigned>(bc.rel) + lt.size : 0u);
    const uint32_t* src = reinterpret_cast<const uint32_t*>(pay + geo.L.codeOff + off0);
    for (unsigned i = laneId(); i < span / 4; i += 32) copyWordAsync(codes + i, src + i);
  }
  return bc;
}

// The lane's tile (lane < nt) of payload `pay` into the slab: v = decoded (add: v += decoded),
// its codes where stageCodes put them (arrived: codesArrived() was called after it).
__device__ void decodeStaged(Slab& S, const uint8_t* pay, const Geo& geo, const Batch& bt,
                             const BatchHead& h, const BatchCodes& bc, bool add) {
  const int lane = laneId();
  const LaneTile& lt = h.lt;
  const bool had = lt.ok && (h.flag & TAH_FLAG_HAD);
  float z, s;
  tah_meta_zs(h.meta, h.flag, &z, &s);
  // where a NaN can come out: a non-finite scale or zero, or a transform's overflow
  if (lt.act) S.flag[lane] |= (had || tah_fin(z) != z || tah_fin(s) != s) ? kExact : 0u;
  if (lt.act && !had) {
    float* v = S.v + lane * kPitch;
    if (lt.ok && bc.staged) {
      const uint8_t* c = reinterpret_cast<const uint8_t*>(S.codes) + bc.rel;
      if (lt.three)
        decodeLane<3>(c, z, s, add, v);
      else
        decodeLane<4>(c, z, s, add, v);
    } else if (lt.ok) {
      decodeLaneFromPayload(pay + geo.L.codeOff + lt.off, lt.three, z, s, add, v);
    } else {  // the staging's bytes, read as 0 * anything
      decodeLaneFromPayload(reinterpret_cast<const uint8_t*>(S.codes), lt.three, 0.0f, 0.0f, add,
                            v);
    }
  }
  __syncwarp();
  for (unsigned todo = __ballot_sync(0xffffffffu, lt.act && had); todo;) {
    const int ti = gTake(&todo);
    if (ti >= 0) hadamardDecode(S, pay, geo, bt.tile0 + static_cast<size_t>(ti), ti, add);
    __syncwarp();
  }
}

// The three steps back to back (the reductions' decodes, one input after another).
__device__ void decodeBatchInto(Slab& S, const uint8_t* pay, const Geo& geo, const Batch& bt,
                                bool add) {
  const BatchHead h = loadHead(pay, geo, bt);
  const BatchCodes bc = stageCodes(S.codes, pay, geo, h);
  codesArrived();
  decodeStaged(S, pay, geo, bt, h, bc, add);
}

// Mode 0 (out (dtype) = decode(pay)), software-pipelined: the next batch's placement, scales
// and flags are loaded before this batch is decoded, and its codes copied into the slab
// (asynchronously) before this batch is stored, so a warp waits on memory only when a batch
// is shorter than a load.
__device__ void decodePipelined(Slab& S, const uint8_t* pay, const Geo& geo, int dtype, bool vec,
                                void* out) {
  const size_t count = geo.count;
  Batch bt, nx;
  size_t b = firstBatch();
  if (!nextBatch(geo, &b, &bt)) return;
  BatchHead h = loadHead(pay, geo, bt);
  BatchCodes bc = stageCodes(S.codes, pay, geo, h);
  for (;;) {
    const bool more = nextBatch(geo, &b, &nx);
    BatchHead hn;
    if (more) hn = loadHead(pay, geo, nx);
    const size_t e0 = bt.tile0 * TAH_TILE;
    const bool real = e0 < count;  // else padding tiles only (whole warp)
    codesArrived();
    if (real) {
      S.flag[laneId()] = 0;  // the lane's own until decodeStaged's __syncwarp
      decodeStaged(S, pay, geo, bt, h, bc, false);
    }
    if (more) {
      __syncwarp();  // the codes were read: the next batch's may come in
      bc = stageCodes(S.codes, pay, geo, hn);
    }
    if (real) {
      if (vec && bt.nt == kBatch && e0 + kBatch * TAH_TILE <= count && dtype != TAH_DT_F32) {
        if (dtype == TAH_DT_BF16)
          slabStoreWhole16<TAH_DT_BF16>(S, e0, out);
        else
          slabStoreWhole16<TAH_DT_F16>(S, e0, out);
      } else {
        slabStore(S, dtype, count, e0, bt.nt, vec, 1.0f, out);
      }
    }
    if (!more) break;
    __syncwarp();  // the slab's values were read
    bt = nx;
    h = hn;
  }
}

// Mode 1: acc += decode(ins[0]) + ... in order; 2 (the owner step's sum): acc (fp32) = sum over r
// of (r == self ? selfIn : decode(ins[r])), times scale. A batch at a time, its inputs one after
// another.
template <int Mode>
__device__ void decodeSumInto(Slab& S, const Inputs& ins, int n, int self, const void* selfIn,
                              float scale, const Geo& geo, int dtype, bool vec, float* acc) {
  const size_t count = geo.count;
  Batch bt;
  for (size_t b = firstBatch(); nextBatch(geo, &b, &bt);) {
    const size_t e0 = bt.tile0 * TAH_TILE;
    if (e0 >= count) continue;  // padding tiles only (whole warp)
    S.flag[laneId()] = 0;
    if (Mode == 1)  // acc is read as is (no non-finite mapping), 0 past count
      slabLoad<false, false>(acc, TAH_DT_F32, count, e0, bt.nt, vec, 1.0f, S.v);
    __syncwarp();
    for (int q = 0; q < n; ++q) {
      const bool add = Mode == 1 || q > 0;
      if (Mode == 2 && q == self) {
        if (add)
          slabLoad<false, true>(selfIn, dtype, count, e0, bt.nt, vec, 1.0f, S.v);
        else
          slabLoad<false, false>(selfIn, dtype, count, e0, bt.nt, vec, 1.0f, S.v);
        __syncwarp();
      } else {
        decodeBatchInto(S, ins.p[q], geo, bt, add);
      }
    }
    slabStore(S, TAH_DT_F32, count, e0, bt.nt, vec, Mode == 2 ? scale : 1.0f, acc);
    __syncwarp();
  }
}

// Mode 0: out (dtype) = decode(ins[0]) (decodePipelined); 1 and 2: decodeSumInto.
template <int Mode>
__global__ void __launch_bounds__(kThreads)
    decodeTilesKernel(Inputs ins, int n, int self, const void* selfIn, float scale, Geo geo,
                      int dtype, bool vec, void* out) {
  __shared__ Slab slabs[kWarps];
  Slab& S = slabs[threadIdx.x / 32];
  if constexpr (Mode == 0)
    decodePipelined(S, ins.p[0], geo, dtype, vec, out);
  else
    decodeSumInto<Mode>(S, ins, n, self, selfIn, scale, geo, dtype, vec, static_cast<float*>(out));
}
