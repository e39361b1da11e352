// The lane scheduler behind emu/cuda_runtime.h: 32 ucontext coroutines per warp, switched at
// every shuffle / vote. When every live lane waits, each mask group whose lanes all wait at an
// exchange of the same kind and mask completes it; a wait that can never complete is an error.
#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_runtime.h"

namespace cuda_emu {
namespace {

constexpr int kLanes = 32;
constexpr size_t kStack = 512 * 1024;

enum State { kRunnable, kWaiting, kDone };

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

struct Warp {
  ucontext_t sched;
  Lane lanes[kLanes];
  int cur = -1;
  int warpInBlock = 0;
  void (*body)(void*) = nullptr;
  void* bodyCtx = nullptr;
  Dim3 tid{0, 0, 0};
};

thread_local Warp* gWarp = nullptr;

void laneEntry() {
  Warp* w = gWarp;
  w->body(w->bodyCtx);
  w->lanes[w->cur].state = kDone;
  // returning resumes uc_link (the scheduler)
}

}  // namespace

const Dim3& currentThreadIdx() {
  if (gWarp == nullptr) {
    std::fprintf(stderr, "cuda_emu: threadIdx outside runWarp\n");
    std::abort();
  }
  return gWarp->tid;
}

uint64_t exchange(int kind, unsigned mask, uint64_t value, int arg) {
  Warp* w = gWarp;
  Lane& l = w->lanes[w->cur];
  l.state = kWaiting;
  l.kind = kind;
  l.mask = mask;
  l.value = value;
  l.arg = arg;
  swapcontext(&l.ctx, &w->sched);
  return l.result;
}

bool runWarp(int warpInBlock, void (*body)(void*), void* ctx, const char** error) {
  static thread_local Warp* warp = nullptr;
  if (warp == nullptr) {
    warp = new Warp;
    for (Lane& l : warp->lanes) l.stack.resize(kStack);
  }
  Warp* w = warp;
  Warp* saved = gWarp;
  gWarp = w;
  w->warpInBlock = warpInBlock;
  w->body = body;
  w->bodyCtx = ctx;
  for (int i = 0; i < kLanes; ++i) {
    Lane& l = w->lanes[i];
    l.state = kRunnable;
    getcontext(&l.ctx);
    l.ctx.uc_stack.ss_sp = l.stack.data();
    l.ctx.uc_stack.ss_size = l.stack.size();
    l.ctx.uc_link = &w->sched;
    makecontext(&l.ctx, laneEntry, 0);
  }
  bool ok = true;
  for (;;) {
    bool live = false;
    for (int i = 0; i < kLanes; ++i) {
      Lane& l = w->lanes[i];
      if (l.state != kRunnable) continue;
      w->cur = i;
      w->tid = Dim3{static_cast<unsigned>(warpInBlock * kLanes + i), 0, 0};
      swapcontext(&w->sched, &l.ctx);
    }
    // every lane now waits or is done: complete the groups that are all there
    bool progress = false;
    for (int i = 0; i < kLanes; ++i) {
      Lane& l = w->lanes[i];
      if (l.state == kDone) continue;
      live = true;
      if (l.state != kWaiting) continue;
      const unsigned mask = l.mask;
      bool complete = (mask >> i) & 1u;
      for (int k = 0; k < kLanes && complete; ++k) {
        if (!((mask >> k) & 1u)) continue;
        const Lane& o = w->lanes[k];
        complete = o.state == kWaiting && o.mask == mask && o.kind == l.kind;
      }
      if (!complete) continue;
      uint64_t all = 1, any = 0;
      for (int k = 0; k < kLanes; ++k)
        if ((mask >> k) & 1u) {
          all &= w->lanes[k].value;
          any |= w->lanes[k].value;
        }
      for (int k = 0; k < kLanes; ++k) {
        if (!((mask >> k) & 1u)) continue;
        Lane& o = w->lanes[k];
        if (l.kind == kShflXor) {
          const int src = k ^ o.arg;
          if (src >= kLanes || !((mask >> src) & 1u)) {
            *error = "shuffle from a lane outside the mask";
            ok = false;
          }
          o.result = src < kLanes ? w->lanes[src].value : 0;
        } else {
          o.result = l.kind == kAll ? all : any;
        }
      }
      for (int k = 0; k < kLanes; ++k)
        if ((mask >> k) & 1u) w->lanes[k].state = kRunnable;
      progress = true;
    }
    if (!live) break;
    if (!progress) {
      *error = "lanes wait at shuffles / votes that their mask partners never reach";
      ok = false;
      break;
    }
    if (!ok) break;
  }
  gWarp = saved;
  return ok;
}

}  // namespace cuda_emu
