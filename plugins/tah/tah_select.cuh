// tah's 3-bit row selection on the device (included by tah_device.cu, inside its anonymous
// namespace): the payload header (3-bit row bits and prefixes) from the rows' entropy keys.
#pragma once

// Header: the n3 rows of smallest (key, index) are 3-bit; per group of 32 rows the bit word and
// the count of 3-bit rows before it. One CTA of 1024 threads.
__global__ void selectKernel(const uint32_t* keys, uint32_t rows, uint32_t n3, uint32_t* hdr) {
  __shared__ unsigned hist[256];
  __shared__ uint32_t sPrefix, sK, sCnt[32], sEq[32], sCarry[2];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  uint32_t prefix = 0, mask = 0, k = n3 > 0 ? n3 - 1 : 0;
  if (n3 > 0) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      if (tid < 256) hist[tid] = 0;
      __syncthreads();
      for (uint32_t base = 0; base < rows; base += kSelectThreads) {
        // warp-aggregated: the keys share their top digits, one atomic per distinct digit
        const uint32_t i = base + tid, key = i < rows ? keys[i] : 0u;
        const bool in = i < rows && (key & mask) == prefix;
        const unsigned digit = in ? (key >> shift) & 255u : 256u;
        const unsigned peers = __match_any_sync(0xffffffffu, digit);
        if (in && lane == __ffs(peers) - 1) atomicAdd(&hist[digit], __popc(peers));
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
  const uint32_t thr = prefix, need = k + 1;  // the n3-th key; 3-bit ties: the first `need`
  if (tid == 0) sCarry[0] = sCarry[1] = 0;
  __syncthreads();
  for (uint32_t base = 0; base < rows; base += kSelectThreads) {
    const uint32_t r = base + tid;
    const uint32_t key = r < rows ? keys[r] : 0xffffffffu;
    const bool eq = n3 > 0 && r < rows && key == thr, less = n3 > 0 && r < rows && key < thr;
    const unsigned eqBits = __ballot_sync(0xffffffffu, eq);
    if (lane == 0) sEq[warp] = __popc(eqBits);
    __syncthreads();
    if (tid == 0) {  // exclusive prefixes of the warps' equal counts
      uint32_t c = sCarry[0];
      for (int w = 0; w < 32; ++w) {
        const uint32_t n = sEq[w];
        sEq[w] = c;
        c += n;
      }
      sCarry[0] = c;
    }
    __syncthreads();
    const uint32_t eqRank = sEq[warp] + __popc(eqBits & ((1u << lane) - 1u));
    const unsigned bits = __ballot_sync(0xffffffffu, less || (eq && eqRank < need));
    if (lane == 0) sCnt[warp] = __popc(bits);
    __syncthreads();
    if (tid == 0) {
      uint32_t c = sCarry[1];
      for (int w = 0; w < 32; ++w) {
        const uint32_t n = sCnt[w];
        sCnt[w] = c;
        c += n;
      }
      sCarry[1] = c;
    }
    __syncthreads();
    const uint32_t g = base / 32 + warp;
    if (lane == 0 && g < (rows + 31) / 32) hdr[2 * g] = bits, hdr[2 * g + 1] = sCnt[warp];
    __syncthreads();
  }
}
