#include "device_cases.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "coll_util.h"

namespace coccl::test {

const char* dcollName(DColl c) {
  static const char* n[] = {"AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce"};
  return n[static_cast<int>(c)];
}

std::string describe(const DCase& c) {
  std::ostringstream os;
  os << dcollName(c.coll) << " " << typeName(c.dt) << " " << opName(c.op) << " count " << c.count
     << (c.inPlace ? " in-place" : " out-of-place") << " root " << c.root << " codec "
     << (c.codec ? cocclCodecName(c.codec) : "none/policy") << " seed " << c.seed;
  return os.str();
}

namespace {

cocclResult_t call(const DCase& c, const void* s, void* r, cocclComm_t comm, cudaStream_t st) {
  switch (c.coll) {
    case DColl::AllReduce:
      return c.codec ? cocclAllReduceCodec(s, r, c.count, c.dt, c.op, c.codec, comm, st)
                     : cocclAllReduce(s, r, c.count, c.dt, c.op, comm, st);
    case DColl::ReduceScatter:
      return c.codec ? cocclReduceScatterCodec(s, r, c.count, c.dt, c.op, c.codec, comm, st)
                     : cocclReduceScatter(s, r, c.count, c.dt, c.op, comm, st);
    case DColl::AllGather:
      return c.codec ? cocclAllGatherCodec(s, r, c.count, c.dt, c.codec, comm, st)
                     : cocclAllGather(s, r, c.count, c.dt, comm, st);
    case DColl::Broadcast:
      return cocclBroadcast(s, r, c.count, c.dt, c.root, comm, st);
    case DColl::Reduce:
      return cocclReduce(s, r, c.count, c.dt, c.op, c.root, comm, st);
  }
  return cocclInternalError;
}

}  // namespace

DResult runAndCompare(const Rank& r, const DCase& c, cudaStream_t s) {
  DResult res;
  const size_t n = static_cast<size_t>(r.nranks), me = static_cast<size_t>(r.rank);
  const size_t es = elemSize(c.dt);
  const size_t sendElems = c.coll == DColl::ReduceScatter ? n * c.count : c.count;
  const size_t recvElems = c.coll == DColl::AllGather ? n * c.count : c.count;
  const size_t bigElems = std::max(sendElems, recvElems);
  std::vector<uint8_t> input =
      c.input ? *c.input : randomInput(c.dt, sendElems, c.seed, r.rank);
  EXPECT_EQ(input.size(), sendElems * es);
  // Placement (offsets in elements into the receive buffer for in-place).
  size_t inOff = 0, outOff = 0;
  if (c.inPlace) {
    if (c.coll == DColl::ReduceScatter) outOff = me * c.count;
    if (c.coll == DColl::AllGather) inOff = me * c.count;
  }
  res.outOffset = outOff * es;
  res.outBytes = recvElems * es;
  const bool rootOnlyOut = c.coll == DColl::Reduce && !c.inPlace && r.rank != c.root;

  // Device.
  DevBuf dsend(sendElems * es, 0xEE), drecv(bigElems * es, 0xCD);
  const void* dS;
  void* dR;
  if (c.inPlace) {
    drecv.upload(input.data(), input.size(), inOff * es);
    dS = drecv.data() + inOff * es;
    dR = drecv.data() + outOff * es;
  } else {
    dsend.upload(input.data(), input.size());
    dS = dsend.data();
    dR = rootOnlyOut ? nullptr : drecv.data();
  }
  // Host.
  std::vector<uint8_t> hsend(sendElems * es + 1, 0xEE), hrecv(bigElems * es + 1, 0xCD);
  const void* hS;
  void* hR;
  if (c.inPlace) {
    std::memcpy(hrecv.data() + inOff * es, input.data(), input.size());
    hS = hrecv.data() + inOff * es;
    hR = hrecv.data() + outOff * es;
  } else {
    std::memcpy(hsend.data(), input.data(), input.size());
    hS = hsend.data();
    hR = rootOnlyOut ? nullptr : hrecv.data();
  }

  static const bool trace = std::getenv("COCCL_TEST_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "rank %d: %s\n", r.rank, describe(c).c_str());
  cocclResult_t rd = call(c, dS, dR, r.comm, s);
  EXPECT_EQ(rd, cocclSuccess) << "device " << describe(c) << ": " << cocclGetLastError(r.comm);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess) << describe(c);
  cocclResult_t async = cocclSuccess;
  EXPECT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
  EXPECT_EQ(async, cocclSuccess) << "device " << describe(c);
  cocclCollStats_t st{};
  EXPECT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
  res.deviceAlgorithm = st.algorithm ? st.algorithm : "";
  cocclResult_t rh = call(c, hS, hR, r.comm, nullptr);
  EXPECT_EQ(rh, cocclSuccess) << "host " << describe(c) << ": " << cocclGetLastError(r.comm);

  res.device = drecv.download();
  hrecv.pop_back();
  res.host = std::move(hrecv);
  EXPECT_TRUE(drecv.guardsIntact()) << describe(c);
  EXPECT_TRUE(dsend.guardsIntact()) << describe(c);
  if (c.coll == DColl::ReduceScatter && c.codec && (c.dt == cocclFloat32 || c.dt == cocclFloat16 ||
                                                    c.dt == cocclBfloat16)) {
    // Host ReduceScatter accumulates from +0 (0 + -0 = +0), the device starts from the first
    // term: the two agree except on the sign of an all-(-0) sum.
    EXPECT_TRUE(sameFloatsUpToZeroSign(res.device, res.host, c.dt))
        << "rank " << r.rank << " " << describe(c);
  } else {
    EXPECT_TRUE(sameValues(res.device, res.host, c.dt)) << "rank " << r.rank << " " << describe(c);
  }
  return res;
}

std::vector<uint8_t> hostReference(const Rank& r, size_t n, cocclDataType_t dt, int a, int b,
                                   cocclCodec_t codec) {
  std::vector<uint8_t> in = hostPattern(n, dt, a, b + r.rank), out(in.size());
  EXPECT_EQ(codec ? cocclAllReduceCodec(in.data(), out.data(), n, dt, cocclSum, codec, r.comm,
                                        nullptr)
                  : cocclAllReduce(in.data(), out.data(), n, dt, cocclSum, r.comm, nullptr),
            cocclSuccess)
      << cocclGetLastError(r.comm);
  return out;
}

void checkGraphReplay(const Rank& r, cocclCodec_t codec, int steps, int eagerEvery) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const cocclDataType_t dt = cocclBfloat16;
  const size_t count = 3 * 65536 + 1001;
  const size_t bytes = count * 2;
  DevBuf in(bytes), out(bytes);
  uint8_t* pinned = nullptr;
  CUDA_OK(cudaMallocHost(&pinned, 2 * bytes));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ASSERT_EQ(cocclAllReduceCodec(in.data(), out.data(), count, dt, cocclSum, codec, r.comm, s),
            cocclSuccess)
      << cocclGetLastError(r.comm);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<uint8_t> prev;
  for (int step = 0; step < steps; ++step) {
    std::vector<uint8_t> inHost = hostPattern(count, dt, 4, step + r.rank);
    std::memcpy(pinned, inHost.data(), bytes);
    CUDA_OK(cudaMemcpyAsync(in.data(), pinned, bytes, cudaMemcpyHostToDevice, s));
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaMemcpyAsync(pinned + bytes, out.data(), bytes, cudaMemcpyDeviceToHost, s));
    if (eagerEvery > 0 && step % eagerEvery == eagerEvery / 2) {  // an eager call between replays
      DevBuf e(4096 * 4);
      ASSERT_EQ(cocclAllReduce(e.data(), e.data(), 4096, cocclFloat32, cocclSum, r.comm, s),
                cocclSuccess);
      CUDA_OK(cudaStreamSynchronize(s));
    }
    CUDA_OK(cudaStreamSynchronize(s));
    std::vector<uint8_t> got(pinned + bytes, pinned + 2 * bytes);
    std::vector<uint8_t> want = hostReference(r, count, dt, 4, step, codec);
    ASSERT_TRUE(sameBytes(got, want, 2)) << "replay " << step << " rank " << r.rank;
    ASSERT_NE(got, prev) << "replay " << step << " returned the previous step's output";
    prev = got;
  }
  cocclResult_t async;
  ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
  EXPECT_EQ(async, cocclSuccess);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
}

}  // namespace coccl::test
