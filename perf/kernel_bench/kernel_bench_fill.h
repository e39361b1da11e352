// Random device data for kernel_bench (no zeros unless asked for).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kernel_bench {

// n approximately normal values (mean 0, sd 1, a few large outliers) of type
// 0 = fp32, 1 = bf16, 2 = fp16 into p, a fraction `zeros` (0..1) of them +0 (as after a
// ReLU); enqueued on the default stream.
void fillRandom(void* p, size_t n, int type, uint32_t seed, double zeros = 0.0);

}  // namespace kernel_bench
