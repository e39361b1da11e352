// What UCX prints because a peer died, kept off the survivors' stderr.
//
// A rank whose peer died (or aborted) gets coccl's error from the call; UCX adds lines of its
// own that say the same thing less clearly:
// - at teardown, one "object ... was not returned to mpool ucp_requests" warning per request
//   that a failed call freed while it was still in flight (a rendezvous send whose peer never
//   fetched the data, a receive matched to a message the peer never finished: shared-memory
//   endpoints have no peer error handling, so UCX can never complete them), and one
//   "unexpected tag-receive descriptor ... was not matched" per message that live peers sent
//   for calls this rank no longer makes: dozens of lines for one dead rank;
// - during a call, "shmat(shmid=N) failed: Invalid argument" (UCX's SysV shared memory) when
//   it attaches the segment of a peer whose process is gone (the segment went with it).
// While a UCX transport exists, a UCX log handler drops exactly these (the two warnings only
// inside Teardown on the same thread; the shmat error only with errno EINVAL) and reports them
// as coccl log lines (COCCL_DEBUG=WARN: one count per teardown; INFO: each shmat). Every other
// UCX message passes. With UCX_LOG_LEVEL set in the environment nothing is filtered.
#pragma once

namespace coccl {

class UcxLogFilter {
 public:
  UcxLogFilter();   // installs the handler (the first of the process's live filters)
  ~UcxLogFilter();  // removes it with the last
  UcxLogFilter(const UcxLogFilter&) = delete;
  UcxLogFilter& operator=(const UcxLogFilter&) = delete;

  // Scope of a transport's teardown (endpoint close, worker destroy, cleanup) on this thread.
  class Teardown {
   public:
    Teardown();
    ~Teardown();
    Teardown(const Teardown&) = delete;
    Teardown& operator=(const Teardown&) = delete;
  };

 private:
  bool installed_;
};

}  // namespace coccl
