// The lane scheduler behind emu/cuda_runtime.h: one coroutine per lane (ucontext); a lane runs
// until it reaches __syncthreads, a warp exchange, a spin-wait yield or its end. When no lane
// can run, warp
// exchanges whose lanes have all arrived complete, then a barrier that every live lane reached
// releases; nothing to complete means a deadlock (reported). A lane that spins on a flag
// yields to the other lanes of its block and to the other OS threads (other ranks).
#include <ucontext.h>

#include <cstdio>
#include <vector>

#include "cuda_runtime.h"

namespace block_emu {

thread_local Dim3 gThreadIdx{0, 0, 0}, gBlockIdx{0, 0, 0}, gBlockDim{1, 1, 1}, gGridDim{1, 1, 1};

namespace {

constexpr size_t kStack = 256 * 1024;
enum State { kRunnable, kAtBarrier, kAtExchange, kDone };

struct Lane {
  ucontext_t ctx;
  std::vector<char> stack;
  State state = kRunnable;
  int kind = 0;
  unsigned mask = 0;
  uint64_t value = 0;
  int arg = 0;
  uint64_t result = 0;
};

struct Block {
  ucontext_t sched;
  std::vector<Lane> lanes;
  int cur = -1;
  const std::function<void()>* body = nullptr;
};

thread_local Block* gBlock = nullptr;

void laneEntry() {
  Block* b = gBlock;
  (*b->body)();
  b->lanes[static_cast<size_t>(b->cur)].state = kDone;
}

Lane& current() { return gBlock->lanes[static_cast<size_t>(gBlock->cur)]; }

}  // namespace

uint64_t exchange(int kind, unsigned mask, uint64_t value, int arg) {
  Lane& l = current();
  l.state = kAtExchange;
  l.kind = kind;
  l.mask = mask;
  l.value = value;
  l.arg = arg;
  swapcontext(&l.ctx, &gBlock->sched);
  return l.result;
}

void yieldLane() {
  if (!gBlock) {
    sched_yield();
    return;
  }
  Lane& l = current();  // stays runnable: the scheduler resumes it on its next pass
  swapcontext(&l.ctx, &gBlock->sched);
  sched_yield();
}

void barrier() {
  Lane& l = current();
  l.state = kAtBarrier;
  swapcontext(&l.ctx, &gBlock->sched);
}

bool runBlock(unsigned block, unsigned blocks, unsigned threads, const std::function<void()>& body,
              std::string* error) {
  static thread_local Block* blk = nullptr;
  if (!blk) blk = new Block;
  Block* b = blk;
  if (b->lanes.size() != threads) {
    b->lanes.clear();
    b->lanes.resize(threads);
    for (Lane& l : b->lanes) l.stack.resize(kStack);
  }
  gBlock = b;
  b->body = &body;
  gBlockIdx = Dim3{block, 0, 0};
  gBlockDim = Dim3{threads, 1, 1};
  gGridDim = Dim3{blocks, 1, 1};
  for (Lane& l : b->lanes) {
    l.state = kRunnable;
    getcontext(&l.ctx);
    l.ctx.uc_stack.ss_sp = l.stack.data();
    l.ctx.uc_stack.ss_size = l.stack.size();
    l.ctx.uc_link = &b->sched;
    makecontext(&l.ctx, laneEntry, 0);
  }
  const int n = static_cast<int>(threads);
  for (;;) {
    for (int i = 0; i < n; ++i) {
      if (b->lanes[static_cast<size_t>(i)].state != kRunnable) continue;
      b->cur = i;
      gThreadIdx = Dim3{static_cast<unsigned>(i), 0, 0};
      swapcontext(&b->sched, &b->lanes[static_cast<size_t>(i)].ctx);
    }
    int done = 0, atBarrier = 0;
    bool progress = false;
    for (int i = 0; i < n; ++i) {
      Lane& l = b->lanes[static_cast<size_t>(i)];
      if (l.state == kDone) ++done;
      if (l.state == kAtBarrier) ++atBarrier;
      if (l.state != kAtExchange) continue;
      const int base = i & ~31;
      const unsigned mask = l.mask;
      bool complete = (mask >> (i - base)) & 1u;
      for (int k = 0; k < 32 && complete; ++k) {
        if (!((mask >> k) & 1u)) continue;
        if (base + k >= n) {
          complete = false;
          break;
        }
        const Lane& o = b->lanes[static_cast<size_t>(base + k)];
        complete = o.state == kAtExchange && o.mask == mask && o.kind == l.kind;
      }
      if (!complete) continue;
      uint64_t all = 1, any = 0, ballot = 0;
      for (int k = 0; k < 32; ++k)
        if ((mask >> k) & 1u) {
          const uint64_t v = b->lanes[static_cast<size_t>(base + k)].value;
          all &= v;
          any |= v;
          if (v) ballot |= uint64_t{1} << k;
        }
      for (int k = 0; k < 32; ++k) {
        if (!((mask >> k) & 1u)) continue;
        Lane& o = b->lanes[static_cast<size_t>(base + k)];
        switch (l.kind) {
          case kShflXor: {
            const int src = k ^ o.arg;
            if (src >= 32 || !((mask >> src) & 1u)) {
              *error = "shuffle from a lane outside the mask";
              return false;
            }
            o.result = b->lanes[static_cast<size_t>(base + src)].value;
            break;
          }
          case kAll: o.result = all; break;
          case kAny: o.result = any; break;
          case kBallot: o.result = ballot; break;
          default: o.result = 0; break;
        }
      }
      for (int k = 0; k < 32; ++k)
        if ((mask >> k) & 1u) b->lanes[static_cast<size_t>(base + k)].state = kRunnable;
      progress = true;
    }
    if (done == n) break;
    if (progress) continue;
    bool runnable = false;
    for (const Lane& l : b->lanes) runnable = runnable || l.state == kRunnable;
    if (runnable) continue;  // lanes that yielded while spinning
    if (atBarrier + done == n) {
      for (Lane& l : b->lanes)
        if (l.state == kAtBarrier) l.state = kRunnable;
      continue;
    }
    *error = "lanes deadlock: some wait at __syncthreads, others at warp exchanges that never "
             "complete";
    return false;
  }
  gBlock = nullptr;
  return true;
}

}  // namespace block_emu
