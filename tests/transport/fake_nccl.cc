// A stand-in for the real libnccl.so.2, for testing the shim's forwarding without a GPU: it
// records every call (fakeNcclCount / fakeNcclEntry read the record) and runs nothing.
// Version 2.28.99; ncclCommWindowRegister and a few others are missing on purpose.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_abi.h"

#define FAKE extern "C" __attribute__((visibility("default")))

struct ncclComm {
  int rank, nranks, color;
  int pendingPolls;  // a non-blocking init reports ncclInProgress this many times
};

namespace {
std::mutex g_mutex;
std::vector<std::string> g_log;
thread_local int t_depth = 0;
int g_idCounter = 0;

void rec(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void rec(const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_log.emplace_back(buf);
}
int rankOf(ncclComm_t c) { return c ? c->rank : -1; }
}  // namespace

FAKE int fakeNcclCount(const char* prefix) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int n = 0;
  for (auto& e : g_log) n += e.compare(0, strlen(prefix), prefix) == 0;
  return n;
}
FAKE const char* fakeNcclLast(const char* prefix) {  // the last entry starting with prefix
  thread_local std::string copy;
  std::lock_guard<std::mutex> lock(g_mutex);
  copy.clear();
  for (auto& e : g_log)
    if (e.compare(0, strlen(prefix), prefix) == 0) copy = e;
  return copy.c_str();
}

FAKE ncclResult_t ncclGetVersion(int* v) {
  *v = 22899;
  return ncclSuccess;
}
FAKE const char* ncclGetLastError(ncclComm_t) { return "fake nccl error"; }
FAKE const char* ncclGetErrorString(ncclResult_t r) {
  return r == ncclSuccess ? "no error" : "fake error string";
}
FAKE ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 0, sizeof(*id));
  int n;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    n = ++g_idCounter;
  }
  snprintf(id->internal, sizeof(id->internal), "fake-id-%d", n);
  rec("ncclGetUniqueId %s", id->internal);
  return ncclSuccess;
}
FAKE ncclResult_t ncclCommInitRankConfig(ncclComm_t* c, int n, ncclUniqueId id, int rank,
                                         ncclConfig_t* cfg) {
  bool nb = cfg && cfg->blocking == 0;
  const char* name = cfg && cfg->size >= offsetof(ncclConfig_t, collnetEnable) && cfg->commName
                         ? cfg->commName : "-";
  *c = new ncclComm{rank, n, 0, nb ? 3 : 0};
  rec("ncclCommInitRankConfig rank=%d n=%d id=%s name=%s", rank, n, id.internal, name);
  return nb ? ncclInProgress : ncclSuccess;
}
FAKE ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t* e) {
  if (c->pendingPolls > 0) {
    --c->pendingPolls;
    *e = ncclInProgress;
  } else {
    *e = ncclSuccess;
  }
  return ncclSuccess;
}
FAKE ncclResult_t ncclCommSplit(ncclComm_t c, int color, int key, ncclComm_t* nc, ncclConfig_t*) {
  rec("ncclCommSplit rank=%d color=%d key=%d", c->rank, color, key);
  *nc = color == NCCL_SPLIT_NOCOLOR ? nullptr : new ncclComm{-1, -1, color, 0};
  return ncclSuccess;
}
FAKE ncclResult_t ncclCommShrink(ncclComm_t c, int*, int n, ncclComm_t* nc, ncclConfig_t*, int f) {
  rec("ncclCommShrink rank=%d excluded=%d flags=%d", c->rank, n, f);
  *nc = new ncclComm{-1, -1, 0, 0};
  return ncclSuccess;
}
FAKE ncclResult_t ncclCommCuDevice(ncclComm_t, int* d) {
  *d = 5;
  return ncclSuccess;
}
FAKE ncclResult_t ncclCommFinalize(ncclComm_t c) {
  rec("ncclCommFinalize rank=%d", rankOf(c));
  return ncclSuccess;
}
FAKE ncclResult_t ncclCommDestroy(ncclComm_t c) {
  rec("ncclCommDestroy rank=%d", rankOf(c));
  delete c;
  return ncclSuccess;
}
FAKE ncclResult_t ncclCommAbort(ncclComm_t c) {
  rec("ncclCommAbort rank=%d", rankOf(c));
  delete c;
  return ncclSuccess;
}
FAKE ncclResult_t ncclGroupStart() {
  if (t_depth++ == 0) rec("ncclGroupStart");
  return ncclSuccess;
}
FAKE ncclResult_t ncclGroupEnd() {
  if (--t_depth == 0) rec("ncclGroupEnd");
  return ncclSuccess;
}
FAKE ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* s) {
  if (--t_depth == 0) rec("ncclGroupSimulateEnd");
  s->estimatedTime = 42.f;
  return ncclSuccess;
}
FAKE ncclResult_t ncclAllReduce(const void*, void*, size_t n, ncclDataType_t t, ncclRedOp_t op,
                                ncclComm_t c, cudaStream_t) {
  rec("ncclAllReduce rank=%d count=%zu type=%d op=%d group=%d", rankOf(c), n, t, op, t_depth);
  return ncclSuccess;
}
FAKE ncclResult_t ncclReduceScatter(const void*, void*, size_t n, ncclDataType_t t, ncclRedOp_t,
                                    ncclComm_t c, cudaStream_t) {
  rec("ncclReduceScatter rank=%d count=%zu type=%d", rankOf(c), n, t);
  return ncclSuccess;
}
FAKE ncclResult_t ncclAllGather(const void*, void*, size_t n, ncclDataType_t t, ncclComm_t c,
                                cudaStream_t) {
  // Like NCCL 2.28, which calls its own exported API inside (through the PLT: a program that
  // loaded this library without RTLD_DEEPBIND binds that call to the shim's function).
  ncclResult_t state;
  if (ncclCommGetAsyncError(c, &state) != ncclSuccess) return ncclInvalidArgument;
  rec("ncclAllGather rank=%d count=%zu type=%d", rankOf(c), n, t);
  return ncclSuccess;
}
FAKE ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t, int root,
                                ncclComm_t c, cudaStream_t) {
  rec("ncclBroadcast rank=%d count=%zu root=%d inplace=%d", rankOf(c), n, root, s == r);
  return ncclSuccess;
}
FAKE ncclResult_t ncclReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int,
                             ncclComm_t c, cudaStream_t) {
  rec("ncclReduce rank=%d", rankOf(c));
  return ncclInternalError;  // to check ncclGetLastError's source
}
FAKE ncclResult_t ncclSend(const void*, size_t n, ncclDataType_t, int peer, ncclComm_t c,
                           cudaStream_t) {
  rec("ncclSend rank=%d peer=%d count=%zu group=%d", rankOf(c), peer, n, t_depth);
  return ncclSuccess;
}
FAKE ncclResult_t ncclRecv(void*, size_t n, ncclDataType_t, int peer, ncclComm_t c, cudaStream_t) {
  rec("ncclRecv rank=%d peer=%d count=%zu group=%d", rankOf(c), peer, n, t_depth);
  return ncclSuccess;
}
FAKE ncclResult_t ncclMemAlloc(void** p, size_t n) {
  *p = malloc(n);
  rec("ncclMemAlloc %zu", n);
  return ncclSuccess;
}
FAKE ncclResult_t ncclMemFree(void* p) {
  free(p);
  rec("ncclMemFree");
  return ncclSuccess;
}
FAKE ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void*, ncclDataType_t,
                                           ncclScalarResidence_t, ncclComm_t c) {
  *op = static_cast<ncclRedOp_t>(ncclNumOps);
  rec("ncclRedOpCreatePreMulSum rank=%d", rankOf(c));
  return ncclSuccess;
}
