#include "collectives/request.h"

#include "core/dtype.h"

namespace coccl {

const char* collName(Coll c) {
  switch (c) {
    case Coll::AllReduce: return "AllReduce";
    case Coll::ReduceScatter: return "ReduceScatter";
    case Coll::AllGather: return "AllGather";
    case Coll::Broadcast: return "Broadcast";
    case Coll::Reduce: return "Reduce";
    case Coll::Send: return "Send";
    case Coll::Recv: return "Recv";
  }
  return "?";
}

const char* exactPathName(ExactPath e) {
  switch (e) {
    case ExactPath::Default:
      return "default";
    case ExactPath::Nccl:
      return "nccl";
    case ExactPath::Coccl:
      return "coccl";
  }
  return "?";
}

size_t logicalBytes(const CollRequest& r, int nranks) {
  const size_t b = r.count * dtypeSize(r.dt);
  return r.coll == Coll::ReduceScatter || r.coll == Coll::AllGather
             ? b * static_cast<size_t>(nranks)
             : b;
}

}  // namespace coccl
