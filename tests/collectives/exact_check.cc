#include "exact_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "coll_util.h"

namespace coccl::test {

const char* collName(Coll c) {
  static const char* n[] = {"AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce"};
  return n[static_cast<int>(c)];
}

namespace {

bool same(cocclDataType_t dt, double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want;
}

}  // namespace

size_t runExactCase(const Rank& r, const ExactCase& c, cocclResult_t* res) {
  const int p = r.nranks, me = r.rank;
  const size_t es = elemSize(c.dt);
  size_t inCount = c.count, outCount = c.count;
  if (c.coll == Coll::ReduceScatter) inCount = c.count * p;
  if (c.coll == Coll::AllGather) outCount = c.count * p;

  // Every rank's input (deterministic), so the reference needs no communication.
  std::vector<std::vector<uint8_t>> inputs(p, std::vector<uint8_t>(inCount * es + 1));
  for (int q = 0; q < p; ++q) fillExact(c.dt, c.op, inputs[q].data(), inCount, q, c.salt);

  Guarded out(outCount * es, 0xFF);  // 0xFF..: NaN for float types, -1 / max for integers
  Guarded in(inCount * es, 0);
  const void* send = inCount ? in.data() : nullptr;
  void* recv = outCount ? out.data() : nullptr;
  if (inCount) std::memcpy(in.data(), inputs[me].data(), inCount * es);
  if (c.inPlace) {
    // NCCL's in-place positions; the input is placed inside the output buffer.
    char* o = static_cast<char*>(out.data());
    switch (c.coll) {
      case Coll::AllGather:
        send = o ? o + static_cast<size_t>(me) * c.count * es : nullptr;
        if (c.count) std::memcpy(o + me * c.count * es, inputs[me].data(), c.count * es);
        break;
      case Coll::ReduceScatter:
        // recvbuff == sendbuff + rank*recvcount: receive inside the input buffer.
        recv = in.data() ? static_cast<char*>(in.data()) + static_cast<size_t>(me) * c.count * es
                         : nullptr;
        break;
      default:
        send = o;
        if (inCount) std::memcpy(o, inputs[me].data(), inCount * es);
        break;
    }
  }

  switch (c.coll) {
    case Coll::AllReduce:
      *res = cocclAllReduce(send, recv, c.count, c.dt, c.op, r.comm, nullptr);
      break;
    case Coll::ReduceScatter:
      *res = cocclReduceScatter(send, recv, c.count, c.dt, c.op, r.comm, nullptr);
      break;
    case Coll::AllGather:
      *res = cocclAllGather(send, recv, c.count, c.dt, r.comm, nullptr);
      break;
    case Coll::Broadcast:
      *res = cocclBroadcast(send, recv, c.count, c.dt, c.root, r.comm, nullptr);
      break;
    case Coll::Reduce:
      *res = cocclReduce(send, recv, c.count, c.dt, c.op, c.root, r.comm, nullptr);
      break;
  }
  if (*res != cocclSuccess) return outCount ? outCount : 1;

  size_t wrong = 0;
  if (c.coll == Coll::Reduce && me != c.root) {
    // recvbuff is not the output on non-root ranks: it must be left as it was.
    const uint8_t* o = static_cast<const uint8_t*>(out.data());
    for (size_t b = 0; b < outCount * es; ++b)
      if (o[b] != (c.inPlace ? inputs[me][b] : 0xFF)) ++wrong;
    if (wrong) ADD_FAILURE() << "Reduce wrote " << wrong << " bytes on non-root rank " << me;
    return wrong;
  }
  std::vector<const void*> ptrs(p);
  const void* result = recv;
  for (size_t i = 0; i < outCount; ++i) {
    double want = 0;
    switch (c.coll) {
      case Coll::AllReduce:
        for (int q = 0; q < p; ++q) ptrs[q] = inputs[q].data();
        want = expectedReduce(c.dt, c.op, ptrs, i);
        break;
      case Coll::ReduceScatter:
        for (int q = 0; q < p; ++q) ptrs[q] = inputs[q].data() + me * c.count * es;
        want = expectedReduce(c.dt, c.op, ptrs, i);
        break;
      case Coll::AllGather:
        want = getElem(c.dt, inputs[i / c.count].data(), i % c.count);
        break;
      case Coll::Broadcast:
        want = getElem(c.dt, inputs[c.root].data(), i);
        break;
      case Coll::Reduce:
        for (int q = 0; q < p; ++q) ptrs[q] = inputs[q].data();
        want = expectedReduce(c.dt, c.op, ptrs, i);
        break;
    }
    double got = getElem(c.dt, result, i);
    if (!same(c.dt, got, want)) {
      if (wrong < 3)
        ADD_FAILURE() << collName(c.coll) << " " << typeName(c.dt) << " " << opName(c.op)
                      << " count " << c.count << (c.inPlace ? " in-place" : " out-of-place")
                      << " rank " << me << "/" << p << " element " << i << ": got " << got
                      << " want " << want;
      ++wrong;
    }
  }
  if (!out.guardsIntact() || !in.guardsIntact()) {
    ADD_FAILURE() << collName(c.coll) << ": guard bytes overwritten on rank " << me;
    ++wrong;
  }
  return wrong;
}

}  // namespace coccl::test
