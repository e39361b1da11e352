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

// The lane's tile (lane < nt) of payload `pay` into the slab: v = decoded (add: v += decoded).
// Codes come through the slab when the batch's codes are contiguous (every valid payload),
// else (a garbage header) from the payload directly; both read only inside the code section.
__device__ void decodeBatchInto(Slab& S, const uint8_t* pay, const Geo& geo, const Batch& bt,
                                bool add) {
  const tah_layout_t& L = geo.L;
  const int lane = laneId();
  const LaneTile lt = laneTile(pay, geo, bt);
  const bool act = lt.act, ok = lt.ok;
  const size_t tile = lt.tile, off = lt.off;
  const int three = lt.three;
  const unsigned size = lt.size;
  uint32_t meta = 0;
  unsigned flag = 0;
  if (act && ok) {
    meta = reinterpret_cast<const uint32_t*>(pay + L.metaOff)[tile];
    flag = pay[L.flagOff + tile];
  }
  const bool had = ok && (flag & TAH_FLAG_HAD);
  float z, s;
  tah_meta_zs(meta, flag, &z, &s);
  // where a NaN can come out: a non-finite scale or zero, or a transform's overflow
  if (act) S.flag[lane] |= (had || tah_fin(z) != z || tah_fin(s) != s) ? kExact : 0u;
  const size_t off0 = shfl64(off, 0);
  const bool contiguous = !(act && ok) || (off >= off0 && off - off0 <= 4u * kCodeWords - size);
  const bool staged =
      __all_sync(0xffffffffu, contiguous) && __shfl_sync(0xffffffffu, ok ? 1u : 0u, 0);
  const size_t rel = off - off0;
  if (staged) {
    const unsigned span = warpMax(act && ok ? static_cast<unsigned>(rel) + size : 0u);
    const uint32_t* src = reinterpret_cast<const uint32_t*>(pay + L.codeOff + off0);
    for (unsigned i = lane; i < span / 4; i += 32) S.codes[i] = src[i];
    __syncwarp();
  }
  if (act && !had) {
    float* v = S.v + lane * kPitch;
    if (ok && staged) {
      const uint8_t* c = reinterpret_cast<const uint8_t*>(S.codes) + rel;
      if (three)
        decodeLane<3>(c, z, s, add, v);
      else
        decodeLane<4>(c, z, s, add, v);
    } else if (ok) {
      decodeLaneFromPayload(pay + L.codeOff + off, three, z, s, add, v);
    } else {  // the staging's bytes, read as 0 * anything
      decodeLaneFromPayload(reinterpret_cast<const uint8_t*>(S.codes), three, 0.0f, 0.0f, add, v);
    }
  }
  __syncwarp();
  for (unsigned todo = __ballot_sync(0xffffffffu, act && had); todo;) {
    const int ti = gTake(&todo);
    if (ti >= 0) hadamardDecode(S, pay, geo, bt.tile0 + static_cast<size_t>(ti), ti, add);
    __syncwarp();
  }
}

// Mode 0: out (dtype) = decode(ins[0]); 1: acc += decode(ins[0]) + ... in order; 2 (the owner
// step's sum): acc (fp32) = sum over r of (r == self ? selfIn : decode(ins[r])), times scale.
template <int Mode>
__global__ void __launch_bounds__(kThreads)
    decodeTilesKernel(Inputs ins, int n, int self, const void* selfIn, float scale, Geo geo,
                      int dtype, bool vec, void* out) {
  __shared__ Slab slabs[kWarps];
  Slab& S = slabs[threadIdx.x / 32];
  const size_t count = geo.count;
  Batch bt;
  for (size_t b = firstBatch(); nextBatch(geo, &b, &bt);) {
    const size_t e0 = bt.tile0 * TAH_TILE;
    if (e0 >= count) continue;  // padding tiles only (whole warp)
    S.flag[laneId()] = 0;
    if (Mode == 1)  // acc is read as is (no non-finite mapping), 0 past count
      slabLoad<false, false>(out, TAH_DT_F32, count, e0, bt.nt, vec, 1.0f, S.v);
    __syncwarp();
    for (int q = 0; q < (Mode == 0 ? 1 : n); ++q) {
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
    if (Mode == 0)
      slabStore(S, dtype, count, e0, bt.nt, vec, 1.0f, out);
    else
      slabStore(S, TAH_DT_F32, count, e0, bt.nt, vec, Mode == 2 ? scale : 1.0f, out);
    __syncwarp();
  }
}
