// The CUDA IPC kernels' agreement on the CPU emulator (emu/): the runs that the agreement
// tests share. Rank r of a World runs its calls, Send/Recv groups or staged steps on its own
// thread and EmuDevice; the results carry the device error each rank recorded and, for a
// mismatch, the message built from the two descriptors (callDescPairMismatch /
// p2pPairMismatch). Only agree_runs.cc includes the kernels (compiled once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coccl.h"
#include "collectives/call_desc.h"
#include "emu_world.h"

namespace agree_emu {

using coccl::CallDesc;
using coccl_emu::World;

struct Spec {
  coccl::Coll coll = coccl::Coll::AllReduce;
  size_t count = 1000;  // float32 elements
  cocclRedOp_t op = cocclSum;
  int root = 0;
  // the descriptor's datatype (the kernels move float32: a type of the same size, as int32,
  // is a difference that only the descriptor shows)
  cocclDataType_t dt = cocclFloat32;
};

struct Result {
  std::vector<std::vector<float>> out;  // per call
  uint32_t error = 0;
  std::string message;  // callDescPairMismatch of the recorded descriptors
};

// The descriptor of call number `seq` of spec s (exact; float32 unless s.dt says otherwise).
CallDesc descOf(const Spec& s, uint64_t seq);

// Rank r runs calls[r][0..] back to back (exact float32, inputs rank + 1), stopping at the
// first device error.
std::vector<Result> runCalls(World& w, const std::vector<std::vector<Spec>>& calls);

// ---- device Send/Recv ------------------------------------------------------------------------
struct Msg {
  int peer;
  bool send;
  size_t bytes;
};

struct P2PResult {
  uint32_t error = 0;
  std::string message;                     // p2pPairMismatch of the recorded pair descriptors
  std::vector<std::vector<uint8_t>> recv;  // per message (send: empty)
};

// Rank r runs one group of msgs[r] (send bytes: rank * 16 + message index; receive buffers
// start as 0xCD).
std::vector<P2PResult> runP2P(World& w, const std::vector<std::vector<Msg>>& msgs);

// ---- the staged pipeline's exchanges (P2PArgs::callAgree) -----------------------------------
// One step of a rank: a fused exact AllReduce (agreeCall at its start), or a staged exchange
// (the P2P kernel, pair agreement off as IpcMover runs it) that carries the call's descriptor
// when `agree` (the call's first exchange).
struct Step {
  bool poison = false;  // the abort's poison kernel (this rank's pipeline failed)
  bool fused = false;
  Spec spec;         // the call (its descriptor); fused: also what runs
  uint64_t seq = 0;  // the call number
  bool agree = false;
  std::vector<Msg> msgs;  // exchange: this rank's group
};

struct StepsResult {
  uint32_t error = 0, from = 0;
  std::string message;
  std::vector<std::vector<std::vector<uint8_t>>> recv;  // per exchange step, per message
  std::vector<std::vector<float>> out;                  // per fused step
};

// Rank r runs steps[r] back to back, stopping at the first device error. Exchange bytes: rank *
// 16 + step; receive buffers start as 0xCD; fused inputs rank + 1, outputs start at -7.
std::vector<StepsResult> runSteps(World& w, const std::vector<std::vector<Step>>& steps);

// runSteps, and its wall time in seconds.
std::vector<StepsResult> runStepsTimed(World& w, const std::vector<std::vector<Step>>& steps,
                                       double* secs);

// Every exchange with every peer, `bytes` each way.
std::vector<Msg> allToAll(int p, int me, size_t bytes);

// Rank r's first exchange of a staged call: 3000 bytes each way with every peer, agreeing.
Step firstExchange(int p, int r);

}  // namespace agree_emu
