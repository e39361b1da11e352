// Runs one exact (uncompressed) collective on this rank and checks its output against the
// reference computed from every rank's (deterministic) input. Returns the number of wrong
// elements; guard bytes and untouched (pre-filled) elements count as wrong.
#pragma once

#include "coccl.h"
#include "harness/harness.h"

namespace coccl::test {

enum class Coll { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };
const char* collName(Coll c);

struct ExactCase {
  Coll coll;
  cocclDataType_t dt;
  cocclRedOp_t op;
  size_t count;  // AllReduce/Broadcast/Reduce: count; RS: recvcount; AG: sendcount
  bool inPlace;
  int root;
  int salt;
};

// Returns the number of mismatches (0 = pass); `res` receives the API result.
size_t runExactCase(const Rank& r, const ExactCase& c, cocclResult_t* res);

}  // namespace coccl::test
