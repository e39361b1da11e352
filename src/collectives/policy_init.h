// A communicator's codec policy at init (collective: every rank calls it at the same point):
//   1. every rank's world rank (CommConfig::worldRank, else its rank here) is all-gathered over
//      the bootstrap: CommFacts of name, size and members;
//   2. each rank reads its policy file (PolicyConfig::file) and resolves the policy; an error on
//      any rank (unreadable file, syntax, a bad rule, a bad COCCL_CODEC* spec) fails init on
//      every rank with cocclInvalidArgument "codec policy: rank R: <the error>";
//   3. every rank's resolved policy (CodecPolicy::describe) must equal rank 0's: else every
//      rank fails with cocclInvalidArgument naming the first rank and rule that differ;
//   4. rank 0 logs the resolved policy (COCCL_DEBUG=INFO, subsystem INIT), once.
#pragma once

#include "collectives/policy.h"
#include "comm/context.h"

namespace coccl {

CodecPolicy resolvePolicy(CommContext& ctx);

}  // namespace coccl
