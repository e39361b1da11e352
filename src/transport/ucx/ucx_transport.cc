// UCX (ucp tag matching) transport for host memory. One ucp context and worker per
// communicator, so ranks that are threads of one process are as separate as ranks in separate
// processes. Worker addresses travel through the bootstrap. Requests are polled
// (ucp_request_check_status); the owning thread drives progress.
#include <ucp/api/ucp.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "transport/transport.h"
#include "transport/ucx/ucx_log_filter.h"

namespace coccl {
namespace {

// `peer` >= 0: the rank at the other end, named in the message. A peer's shared memory
// segment that is gone (UCS_ERR_SHMEM_SEGMENT: the process exited, e.g. killed before its
// first call) is a remote error like a reset connection.
[[noreturn]] void throwUcs(const char* what, ucs_status_t st, int peer = -1) {
  cocclResult_t code = cocclSystemError;
  switch (st) {
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_CANCELED:
    case UCS_ERR_SHMEM_SEGMENT:
      code = cocclRemoteError;
      break;
    default:
      break;
  }
  if (peer < 0) COCCL_THROW(code, "UCX %s failed: %s", what, ucs_status_string(st));
  COCCL_THROW(code, "UCX %s rank %d failed: %s%s", what, peer, ucs_status_string(st),
              code == cocclRemoteError ? " (did that rank exit or abort?)" : "");
}

constexpr uint64_t kRankBits = 16;

class UcxRequest final : public Request {
 public:
  UcxRequest(ucp_worker_h worker, void* req, bool isRecv, size_t bytes, int peer)
      : worker_(worker), req_(req), isRecv_(isRecv), bytes_(bytes), peer_(peer) {}
  ~UcxRequest() override {
    if (req_) {
      // Still in flight (an error path unwinding): cancel an unmatched receive so UCX never
      // writes into a buffer that is about to be reused; release the handle either way.
      if (isRecv_ && ucp_request_check_status(req_) == UCS_INPROGRESS)
        ucp_request_cancel(worker_, req_);
      ucp_request_free(req_);
    }
  }
  bool done() override {
    if (!req_) return true;
    ucs_status_t st;
    if (isRecv_) {
      ucp_tag_recv_info_t info;
      st = ucp_tag_recv_request_test(req_, &info);
      if (st == UCS_INPROGRESS) return false;
      if (st == UCS_OK && info.length != bytes_) {
        ucp_request_free(req_);
        req_ = nullptr;
        COCCL_THROW(cocclInvalidUsage,
                    "a peer sent %zu bytes where this rank expected %zu: do all ranks call the "
                    "same collectives in the same order with the same count, datatype and "
                    "codec?",
                    info.length, bytes_);
      }
    } else {
      st = ucp_request_check_status(req_);
      if (st == UCS_INPROGRESS) return false;
    }
    ucp_request_free(req_);
    req_ = nullptr;
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
      COCCL_THROW(cocclInvalidUsage,
                  "a peer sent more than the %zu bytes this rank expected: do all ranks call the "
                  "same collectives in the same order with the same count, datatype and codec?",
                  bytes_);
    if (st != UCS_OK) throwUcs(isRecv_ ? "receive from" : "send to", st, peer_);
    return true;
  }

 private:
  ucp_worker_h worker_;
  void* req_;
  bool isRecv_;
  size_t bytes_;
  int peer_;
};

class UcxTransport final : public Transport {
 public:
  UcxTransport(Bootstrap& bs, const CommTopology& topo)
      : rank_(bs.rank()), nranks_(bs.nranks()) {
    if (nranks_ >= (1 << kRankBits))
      COCCL_THROW(cocclInvalidArgument, "UCX transport supports at most %d ranks",
                  (1 << kRankBits) - 1);
    local_.resize(static_cast<size_t>(nranks_));
    for (int r = 0; r < nranks_; ++r) local_[static_cast<size_t>(r)] = topo.sameHost(rank_, r);
    ucp_config_t* config = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK) throwUcs("ucp_config_read", st);
    // A dead peer must give the others an error, never take their process down. Unless the user
    // chose transports with UCX_TLS:
    // - CMA (process_vm_readv) aborts the whole process when the peer process has died: out;
    // - when every rank is on this host, TCP is out too: UCX would otherwise add loopback TCP
    //   lanes, and a TCP connection that breaks under an endpoint without peer error handling
    //   hits an assertion in UCX (seen with UCX 1.13: "got REQ message"). Shared memory stays;
    //   it cannot report peer failure, so a dead local peer just goes silent and the
    //   bootstrap's connection watch turns that into cocclRemoteError (README "Failures").
    // Endpoints to other hosts use peer error handling (TCP / RDMA support it).
    if (!std::getenv("UCX_TLS")) {
      const char* tls = topo.nodes == 1 ? "^cma,tcp" : "^cma";
      st = ucp_config_modify(config, "TLS", tls);
      if (st != UCS_OK) COCCL_WARN("UCX: could not set TLS=%s: %s", tls, ucs_status_string(st));
    }
    ucp_params_t params;
    std::memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_TAG;
    params.mt_workers_shared = 0;
    st = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (st != UCS_OK) throwUcs("ucp_init", st);

    ucp_worker_params_t wparams;
    std::memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(context_, &wparams, &worker_);
    if (st != UCS_OK) {
      ucp_cleanup(context_);
      throwUcs("ucp_worker_create", st);
    }
    try {
      connect(bs);
    } catch (...) {
      teardown();
      throw;
    }
    COCCL_INFO(kLogTransport, "UCX transport up: rank %d of %d", rank_, nranks_);
  }

  ~UcxTransport() override { teardown(); }

  const char* name() const override { return "ucx"; }

  RequestPtr isend(int peer, uint64_t tag, const void* buf, size_t bytes) override {
    checkOpen();
    ucp_request_param_t p;
    std::memset(&p, 0, sizeof(p));
    ucs_status_ptr_t r = ucp_tag_send_nbx(eps_[peer], buf, bytes, fullTag(tag, rank_), &p);
    if (UCS_PTR_IS_ERR(r)) throwUcs("send to", UCS_PTR_STATUS(r), peer);
    return std::make_unique<UcxRequest>(worker_, r, false, bytes, peer);  // r == NULL: completed in place
  }

  RequestPtr irecv(int peer, uint64_t tag, void* buf, size_t bytes) override {
    checkOpen();
    ucp_request_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;  // always a request: the length is checked
    ucs_status_ptr_t r =
        ucp_tag_recv_nbx(worker_, buf, bytes, fullTag(tag, peer), ~uint64_t{0}, &p);
    if (UCS_PTR_IS_ERR(r)) throwUcs("receive from", UCS_PTR_STATUS(r), peer);
    return std::make_unique<UcxRequest>(worker_, r, true, bytes, peer);
  }

  bool progress() override {
    if (!worker_) return false;
    return ucp_worker_progress(worker_) != 0;
  }

  void close() override { teardown(); }

 private:
  static uint64_t fullTag(uint64_t tag, int src) {
    return ((tag & kTransportTagMask) << kRankBits) | static_cast<uint64_t>(src);
  }

  void checkOpen() const {
    if (!worker_) COCCL_THROW(cocclInvalidUsage, "UCX transport is closed");
  }

  void connect(Bootstrap& bs) {
    ucp_address_t* addr = nullptr;
    size_t len = 0;
    ucs_status_t st = ucp_worker_get_address(worker_, &addr, &len);
    if (st != UCS_OK) throwUcs("ucp_worker_get_address", st);
    std::vector<uint64_t> lens(nranks_);
    lens[rank_] = len;
    bs.allGather(lens.data(), sizeof(uint64_t));
    size_t maxLen = 0;
    for (auto l : lens) maxLen = l > maxLen ? l : maxLen;
    std::vector<char> all(maxLen * nranks_);
    std::memcpy(all.data() + maxLen * rank_, addr, len);
    ucp_worker_release_address(worker_, addr);
    bs.allGather(all.data(), maxLen);

    eps_.assign(nranks_, nullptr);
    for (int r = 0; r < nranks_; ++r) {
      ucp_ep_params_t ep;
      std::memset(&ep, 0, sizeof(ep));
      ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
      ep.address = reinterpret_cast<const ucp_address_t*>(all.data() + maxLen * r);
      // Same host: NONE (the shared-memory transports support no other mode; peer death is
      // detected by the bootstrap: Waiter::idle -> Bootstrap::checkPeers). Other hosts: PEER.
      ep.err_mode = local_[static_cast<size_t>(r)] ? UCP_ERR_HANDLING_MODE_NONE
                                                   : UCP_ERR_HANDLING_MODE_PEER;
      st = ucp_ep_create(worker_, &ep, &eps_[r]);
      if (st != UCS_OK) throwUcs("ucp_ep_create", st);
    }
  }

  void teardown() {
    if (!worker_) return;
    UcxLogFilter::Teardown quiet;
    for (auto& ep : eps_) {
      if (!ep) continue;
      ucp_request_param_t p;
      std::memset(&p, 0, sizeof(p));
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;  // never wait on a peer that may be gone
      ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &p);
      if (UCS_PTR_IS_PTR(r)) {
        for (int i = 0; i < 100000 && ucp_request_check_status(r) == UCS_INPROGRESS; ++i)
          ucp_worker_progress(worker_);
        ucp_request_free(r);
      }
      ep = nullptr;
    }
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
    ucp_cleanup(context_);
    context_ = nullptr;
  }

  UcxLogFilter logFilter_;  // installed while this transport exists (first member: last out)
  int rank_;
  int nranks_;
  std::vector<bool> local_;  // peer r on this host
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<ucp_ep_h> eps_;
};

}  // namespace

std::unique_ptr<Transport> makeUcxTransport(Bootstrap& bs, const CommTopology& topo) {
  return std::make_unique<UcxTransport>(bs, topo);
}

}  // namespace coccl
