// Co-residency of the collective kernels on one GPU. A block of a collective kernel waits for
// block b of its peers (kernels.cuh); a peer block that cannot become resident, because the SMs
// are full of blocks that themselves wait, is never scheduled, and the wait ends only at
// COCCL_TIMEOUT_MS. So the blocks of the coccl kernels that run at the same time on one GPU
// (ranks sharing it, collectives of several communicators in flight) must fit on it at once.
// The compressed kernels use up to 230 registers a thread at 256 threads: one block per SM.
#pragma once

namespace coccl {
namespace dev {

// Blocks of coccl's collective kernels that `device` holds at once: the lowest per-SM
// occupancy of any of them times the SM count. Cached per device; the first call (with
// `device` current) loads every kernel, as eager module loading would, so that no lazy load
// happens later while kernels of other ranks spin. 0 when unknown.
int residentBlocks(int device);

// The channels (blocks) that the live CUDA IPC communicators of this process hold on each
// device: add returns the total after adding `n`.
int addCommBlocks(int device, int n);
void removeCommBlocks(int device, int n);

}  // namespace dev
}  // namespace coccl
