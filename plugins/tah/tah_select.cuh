// tah's 3-bit row selection on the device (included by tah_device.cu, inside its anonymous
// namespace): the payload header (3-bit row bits and prefixes) from the rows' entropy keys.
#pragma once

// Header: the n3 rows of smallest (key, index) are 3-bit; per group of 32 rows the bit word and
// the count of 3-bit rows before it. One CTA of 1024 threads (32 warps): a radix select of the
// n3-th key, 8 bits a pass, then the header.
__global__ void selectKernel(const uint32_t* keys, uint32_t rows, uint32_t n3, uint32_t* hdr) {
  __shared__ unsigned hist[256];
  __shared__ uint32_t sPrefix, sK, sCnt[32], sEq[32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  uint32_t prefix = 0, mask = 0, k = n3 > 0 ? n3 - 1 : 0;
  if (n3 > 0) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      if (tid < 256) hist[tid] = 0;
      __syncthreads();
      for (uint32_t base0 = 0; base0 < rows; base0 += 8 * kSelectThreads) {
        uint32_t kk[8];  // 8 loads in flight before the histogram's atomics
        for (int u = 0; u < 8; ++u) {
          const uint32_t i = base0 + u * kSelectThreads + tid;
          kk[u] = i < rows ? keys[i] : 0u;
        }
        for (int u = 0; u < 8; ++u) {
          // warp-aggregated: the keys share their top digits, one atomic per distinct digit
          const uint32_t i = base0 + u * kSelectThreads + tid, key = kk[u];
          const bool in = i < rows && (key & mask) == prefix;
          const unsigned digit = in ? (key >> shift) & 255u : 256u;
          const unsigned peers = __match_any_sync(0xffffffffu, digit);
          if (in && lane == __ffs(peers) - 1) atomicAdd(&hist[digit], __popc(peers));
        }
      }
      __syncthreads();
      if (warp == 0) {  // the digit where the count passes k: lanes hold 8 bins each
        unsigned h[8], loc = 0;
        for (int b = 0; b < 8; ++b) h[b] = hist[lane * 8 + b], loc += h[b];
        unsigned incl = loc;
        for (int o = 1; o < 32; o <<= 1) {
          const unsigned t = __shfl_up_sync(0xffffffffu, incl, o);
          if (lane >= o) incl += t;
        }
        const unsigned excl = incl - loc;
        const unsigned hit = __ballot_sync(0xffffffffu, k >= excl && k < incl);
        if (lane == __ffs(hit) - 1) {
          unsigned cum = excl;
          int d = lane * 8;
          for (int b = 0; b < 8; ++b, ++d) {
            if (k < cum + h[b]) break;
            cum += h[b];
          }
          sK = k - cum;
          sPrefix = prefix | static_cast<uint32_t>(d) << shift;
        }
      }
      __syncthreads();
      k = sK;
      prefix = sPrefix;
      mask |= 255u << shift;
      __syncthreads();
    }
  }
  // The header from the n3-th key thr: rows with a smaller key are 3-bit, and of those equal to
  // it the first `need` by index. Warp w walks a contiguous range of row groups twice: counts,
  // then (after the warps' prefixes) the bit words and the 3-bit counts before each group.
  const uint32_t thr = prefix, need = k + 1, groups = (rows + 31) / 32;
  const uint32_t per = (groups + 31) / 32, g0 = warp * per < groups ? warp * per : groups;
  const uint32_t g1 = g0 + per < groups ? g0 + per : groups;
  auto load8 = [&](uint32_t g, uint32_t* kk) {  // groups g .. g+7: 8 loads in flight
    for (uint32_t u = 0; u < 8; ++u) {
      const uint32_t r = 32 * (g + u) + static_cast<uint32_t>(lane);
      kk[u] = g + u < g1 && r < rows ? keys[r] : 0xffffffffu;
    }
  };
  auto classify = [&](uint32_t g, uint32_t key, unsigned* eqBits, unsigned* lessBits) {
    const uint32_t r = 32 * g + static_cast<uint32_t>(lane);
    *eqBits = __ballot_sync(0xffffffffu, n3 > 0 && r < rows && key == thr);
    *lessBits = __ballot_sync(0xffffffffu, n3 > 0 && r < rows && key < thr);
  };
  uint32_t eqW = 0, lessW = 0;
  for (uint32_t gb = g0; gb < g1; gb += 8) {
    uint32_t kk[8];
    load8(gb, kk);
    for (uint32_t u = 0; u < 8 && gb + u < g1; ++u) {
      unsigned eq, less;
      classify(gb + u, kk[u], &eq, &less);
      eqW += static_cast<uint32_t>(__popc(eq)), lessW += static_cast<uint32_t>(__popc(less));
    }
  }
  if (lane == 0) sEq[warp] = eqW, sCnt[warp] = lessW;
  __syncthreads();
  // lane w: warp w's equal keys before its range (exclusive prefix), then its 3-bit rows
  const uint32_t eqL = sEq[lane], lessL = sCnt[lane];
  uint32_t eqIncl = eqL;
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t v = __shfl_up_sync(0xffffffffu, eqIncl, o);
    if (lane >= o) eqIncl += v;
  }
  const uint32_t eqBefore = eqIncl - eqL;
  const uint32_t eqTaken = need > eqBefore ? (need - eqBefore < eqL ? need - eqBefore : eqL) : 0u;
  const uint32_t threeL = lessL + eqTaken;
  uint32_t threeIncl = threeL;
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t v = __shfl_up_sync(0xffffffffu, threeIncl, o);
    if (lane >= o) threeIncl += v;
  }
  uint32_t eqBase = __shfl_sync(0xffffffffu, eqBefore, warp);
  uint32_t base3 = __shfl_sync(0xffffffffu, threeIncl - threeL, warp);
  for (uint32_t gb = g0; gb < g1; gb += 8) {
    uint32_t kk[8];
    load8(gb, kk);
    for (uint32_t u = 0; u < 8 && gb + u < g1; ++u) {
      const uint32_t g = gb + u;
      unsigned eq, less;
      classify(g, kk[u], &eq, &less);
      const bool mineEq = (eq >> lane) & 1u, mineLess = (less >> lane) & 1u;
      const uint32_t eqRank = eqBase + static_cast<uint32_t>(__popc(eq & ((1u << lane) - 1u)));
      const unsigned bits = __ballot_sync(0xffffffffu, mineLess || (mineEq && eqRank < need));
      if (lane == 0) hdr[2 * g] = bits, hdr[2 * g + 1] = base3;
      base3 += static_cast<uint32_t>(__popc(bits));
      eqBase += static_cast<uint32_t>(__popc(eq));
    }
  }
}
