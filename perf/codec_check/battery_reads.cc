// The battery's bounded_reads check: encode reads at most `count` input elements, decode,
// decodeAccumulate and decodeReduceEncode at most encodedBytes(count) payload bytes. Every
// input and payload ends exactly where an inaccessible page begins (its start rounded down to
// its alignment: the element size for typed input, 4 bytes for payloads, so a read of up to 3
// bytes past a payload whose size is not a multiple of 4 goes unseen); a read past it raises
// SIGSEGV, which the check catches and reports instead of crashing.
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include "battery.h"
#include "battery_util.h"

namespace coccl {
namespace check {

using namespace detail;

namespace {

// `bytes` bytes that end at a PROT_NONE page.
class EdgeBuffer {
 public:
  EdgeBuffer(size_t bytes, size_t align) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    total_ = (bytes + align + page - 1) / page * page + page;
    void* p = mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("bounded_reads: mmap failed");
    base_ = static_cast<uint8_t*>(p);
    uint8_t* end = base_ + total_ - page;
    if (mprotect(end, page, PROT_NONE) != 0) throw std::runtime_error("bounded_reads: mprotect failed");
    const uintptr_t start = (reinterpret_cast<uintptr_t>(end) - bytes) / align * align;
    data_ = reinterpret_cast<uint8_t*>(start);
  }
  EdgeBuffer(const std::vector<uint8_t>& v, size_t align) : EdgeBuffer(v.size(), align) {
    if (!v.empty()) std::memcpy(data_, v.data(), v.size());
  }
  ~EdgeBuffer() { munmap(base_, total_); }
  EdgeBuffer(const EdgeBuffer&) = delete;
  EdgeBuffer& operator=(const EdgeBuffer&) = delete;
  uint8_t* data() { return data_; }

 private:
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t total_ = 0;
};

sigjmp_buf* g_jump = nullptr;
void onFault(int) { siglongjmp(*g_jump, 1); }

// Runs fn; false when it touched an inaccessible page (then the codec may be left in any state:
// the caller stops calling it).
template <class Fn>
bool withinBounds(Fn fn) {
  struct sigaction sa {}, oldSegv{}, oldBus{};
  sa.sa_handler = onFault;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NODEFER;
  sigaction(SIGSEGV, &sa, &oldSegv);
  sigaction(SIGBUS, &sa, &oldBus);
  sigjmp_buf jump;
  g_jump = &jump;
  bool ok = true;
  if (sigsetjmp(jump, 1) == 0) fn();
  else ok = false;
  sigaction(SIGSEGV, &oldSegv, nullptr);
  sigaction(SIGBUS, &oldBus, nullptr);
  g_jump = nullptr;
  return ok;
}

}  // namespace

CheckResult checkBoundedReads(const Codec& c, const Options& opt) {
  const size_t G = std::max<size_t>(c.blockElems(), 1);
  std::set<size_t> counts;
  for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{1000}, G + 1, 3 * G + 5, G - 1, G})
    if (n > 0) counts.insert(countFor(c, n));
  size_t calls = 0;
  CheckResult r{"bounded_reads", true, "", ""};
  for (cocclDataType_t dt : kTypes) {
    if (!c.supportsType(dt)) continue;
    const size_t es = typeSize(dt);
    for (size_t n : counts) {
      const std::string at = fmt("%s count %zu", typeName(dt), n);
      const std::vector<uint8_t> raw = toType(makeInput("normal", n, opt.seed + 700 + n, G), dt);
      const size_t eb = c.encodedBytes(n, dt);
      EdgeBuffer in(raw, es);
      Guarded pay(eb, 0x00);
      const char* what = "encode (input)";
      bool ok = withinBounds([&] { c.encode(in.data(), dt, n, pay.data()); });
      std::vector<uint8_t> payload = pay.body();
      if (ok) {
        EdgeBuffer a(payload, 4), b(payload, 4), self(raw, es);
        Guarded dec(n * es, 0x00), acc(n * 4, 0x00), out(eb, 0x00), outDec(n * es, 0x00),
            scratch(n * 4, 0x00);
        std::memset(acc.data(), 0, n * 4);
        const void* ins[3] = {a.data(), nullptr, b.data()};
        what = "decode (payload)";
        ok = withinBounds([&] { c.decode(a.data(), n, dt, dec.data()); });
        if (ok) {
          what = "decodeAccumulate (payload)";
          ok = withinBounds([&] { c.decodeAccumulate(a.data(), n, dt, acc.floats()); });
        }
        if (ok) {
          what = "decodeReduceEncode (payloads or owner input)";
          ok = withinBounds([&] {
            c.decodeReduceEncode(ins, 3, 1, self.data(), dt, n, 1.0f, out.data(), scratch.floats(),
                                 outDec.data());
          });
        }
      }
      calls += 4;
      if (!ok) {
        r.pass = false;
        r.detail = at + ": " + what + ": read past the end of its buffer (SIGSEGV at the "
                   "inaccessible page after it)";
        r.numbers = fmt("calls %zu  buffers end at an inaccessible page  fault after %zu calls",
                        calls, calls);
        return r;  // the codec may be in any state now
      }
    }
  }
  r.numbers = fmt("calls %zu  buffers end at an inaccessible page  faults 0", calls);
  return r;
}

}  // namespace check
}  // namespace coccl
