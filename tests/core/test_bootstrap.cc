// Bootstrap exchanges with ranks as threads: allGather, barrier, tagged p2p out of order,
// messages to self, large messages, IPv6 root, COCCL_SOCKET_IFNAME=lo, COCCL_COMM_ID-style
// roots started late, and root-side validation (nranks mismatch, duplicate rank).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "core_test_util.h"

namespace coccl {
namespace {

using test::codeOf;
using test::msSince;
using test::runRanks;

// Message payload that names its sender, receiver, tag and sequence number.
std::vector<int> payload(int src, int dst, uint64_t tag, int seq, size_t n) {
  std::vector<int> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] =
        src * 1000003 + dst * 10007 + static_cast<int>(tag) * 101 + seq * 13 + static_cast<int>(i);
  return v;
}

class BootstrapExchange : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapExchange, AllGatherBarrierP2p) {
  const int n = GetParam();
  runRanks(n, [n](Bootstrap& b) {
    const int me = b.rank();
    EXPECT_EQ(b.nranks(), n);
    // allGather of 3 ints per slot, then of an odd size (its own tag sequence).
    std::vector<int> slots(3 * n, -1);
    for (int i = 0; i < 3; ++i) slots[3 * me + i] = me * 100 + i;
    b.allGather(slots.data(), 3 * sizeof(int));
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < 3; ++i) EXPECT_EQ(slots[3 * r + i], r * 100 + i) << "rank " << me;
    std::vector<char> odd(7 * n, 0);
    std::memset(&odd[7 * me], 'a' + me, 7);
    b.allGather(odd.data(), 7);
    for (int r = 0; r < n; ++r) EXPECT_EQ(odd[7 * r + 6], 'a' + r);
    b.barrier();

    // p2p: tags 1, 2, 3 sent in order (tag 2 twice), received 3, 2, 2, 1 from every peer,
    // peers visited in reverse order; and the same to ourselves.
    for (int p = 0; p < n; ++p) {
      for (uint64_t tag : {1, 2, 3}) {
        auto v = payload(me, p, tag, 0, 5 + tag);
        b.send(p, tag, v.data(), v.size() * sizeof(int));
      }
      auto v = payload(me, p, 2, 1, 7);
      b.send(p, 2, v.data(), v.size() * sizeof(int));
    }
    const std::pair<uint64_t, int> order[] = {{3, 0}, {2, 0}, {2, 1}, {1, 0}};
    for (int p = n - 1; p >= 0; --p) {
      for (auto [tag, seq] : order) {
        std::vector<int> got(seq == 1 ? 7 : 5 + tag);
        b.recv(p, tag, got.data(), got.size() * sizeof(int));
        EXPECT_EQ(got, payload(p, me, tag, seq, got.size())) << "rank " << me << " from " << p;
      }
    }
    // Zero-byte messages and a final barrier.
    int dummy = 0;
    b.send((me + 1) % n, 9, nullptr, 0);
    b.recv((me + n - 1) % n, 9, &dummy, 0);
    // Everyone is alive until all ranks reached the last barrier (after it, a rank that is
    // done may destroy its bootstrap, which its peers' checkPeers would report).
    EXPECT_NO_THROW(b.checkPeers());
    b.barrier();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, BootstrapExchange, ::testing::Values(1, 2, 3, 4, 8));

std::vector<uint32_t> pattern(size_t words, uint32_t seed) {
  std::vector<uint32_t> v(words);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& w : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    w = x;
  }
  return v;
}

TEST(Bootstrap, LargeMessages) {
  runRanks(2, [](Bootstrap& b) {
    const int me = b.rank(), peer = 1 - me;
    // 64 MiB from rank 0 to rank 1.
    const size_t big = (64u << 20) / sizeof(uint32_t);
    if (me == 0) {
      auto v = pattern(big, 1);
      b.send(1, 5, v.data(), v.size() * sizeof(uint32_t));
    } else {
      std::vector<uint32_t> got(big);
      b.recv(0, 5, got.data(), got.size() * sizeof(uint32_t));
      EXPECT_TRUE(got == pattern(big, 1));
    }
    // 8 MiB both ways at once (sends drain incoming data: no deadlock).
    const size_t mid = (8u << 20) / sizeof(uint32_t);
    auto mine = pattern(mid, 10 + me);
    b.send(peer, 6, mine.data(), mine.size() * sizeof(uint32_t));
    std::vector<uint32_t> got(mid);
    b.recv(peer, 6, got.data(), got.size() * sizeof(uint32_t));
    EXPECT_TRUE(got == pattern(mid, 10 + peer));
    // 16 MiB to self.
    auto self = pattern((16u << 20) / sizeof(uint32_t), 20 + me);
    b.send(me, 7, self.data(), self.size() * sizeof(uint32_t));
    std::vector<uint32_t> back(self.size());
    b.recv(me, 7, back.data(), back.size() * sizeof(uint32_t));
    EXPECT_TRUE(back == self);
  });
}

// tryRecv never waits: false before the message exists (also from a rank that never
// connected to this one), true once it arrived, in send order per (peer, tag), other tags
// left queued; to self through the local queue.
TEST(Bootstrap, TryRecvDoesNotWait) {
  runRanks(3, [](Bootstrap& b) {
    const int me = b.rank();
    int v = -1;
    EXPECT_FALSE(b.tryRecv((me + 1) % 3, 40, &v, sizeof(v)));
    EXPECT_FALSE(b.tryRecv(me, 40, &v, sizeof(v)));
    b.barrier();
    if (me == 2) {
      for (int k = 0; k < 3; ++k) b.send(0, 41, &k, sizeof(k));
      const int other = 99;
      b.send(0, 42, &other, sizeof(other));
    }
    b.send(me, 43, &me, sizeof(me));
    if (me == 0) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < 3; ++k) {
        int got = -1;
        while (!b.tryRecv(2, 41, &got, sizeof(got))) {
          ASSERT_LT(msSince(t0), 20000) << "message " << k << " never arrived";
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        EXPECT_EQ(got, k);
      }
      int got = -1;
      EXPECT_FALSE(b.tryRecv(2, 41, &got, sizeof(got)));
      b.recv(2, 42, &got, sizeof(got));  // left queued by the tryRecvs of tag 41
      EXPECT_EQ(got, 99);
    }
    int self = -1;
    EXPECT_TRUE(b.tryRecv(me, 43, &self, sizeof(self)));
    EXPECT_EQ(self, me);
    b.barrier();
  });
}

// A frame partly read into the queue (here by a tryRecv of another tag) and then finished by
// a recv of its own tag is delivered first; the next frame of that tag, already on the wire,
// goes to the queue (never straight into the caller's buffer ahead of it).
TEST(Bootstrap, PartlyQueuedFrameKeepsSendOrder) {
  runRanks(2, [](Bootstrap& b) {
    const size_t big = (32u << 20) / sizeof(uint32_t);
    if (b.rank() == 1) {
      auto v = pattern(big, 5);
      b.send(0, 50, v.data(), v.size() * sizeof(uint32_t));
      const uint32_t small = 77;
      b.send(0, 50, &small, sizeof(small));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      int dummy = 0;
      EXPECT_FALSE(b.tryRecv(1, 51, &dummy, sizeof(dummy)));  // reads part of the big frame
      std::vector<uint32_t> got(big);
      b.recv(1, 50, got.data(), got.size() * sizeof(uint32_t));
      EXPECT_TRUE(got == pattern(big, 5));
      uint32_t small = 0;
      b.recv(1, 50, &small, sizeof(small));
      EXPECT_EQ(small, 77u);
    }
    b.barrier();
  });
}

TEST(Bootstrap, LargeAllGather) {
  const int n = 4;
  const size_t words = (2u << 20) / sizeof(uint32_t);  // 2 MiB slots: past the socket buffers
  runRanks(n, [&](Bootstrap& b) {
    std::vector<uint32_t> all(words * n, 0);
    auto mine = pattern(words, 30 + b.rank());
    std::memcpy(&all[words * b.rank()], mine.data(), words * sizeof(uint32_t));
    b.allGather(all.data(), words * sizeof(uint32_t));
    for (int r = 0; r < n; ++r) {
      auto want = pattern(words, 30 + r);
      EXPECT_EQ(std::memcmp(&all[words * r], want.data(), words * sizeof(uint32_t)), 0) << r;
    }
  });
}

TEST(Bootstrap, SizeMismatchIsInternalErrorAndKeepsTheMessage) {
  runRanks(2, [](Bootstrap& b) {
    int v[2] = {11, 12};
    if (b.rank() == 0) {
      b.send(1, 3, v, sizeof(int));
      b.send(0, 4, v, sizeof(v));
    } else {
      int got[2] = {0, 0};
      std::string msg;
      EXPECT_EQ(codeOf([&] { b.recv(0, 3, got, sizeof(got)); }, &msg), cocclInternalError);
      EXPECT_NE(msg.find("expected 8"), std::string::npos) << msg;
      b.recv(0, 3, got, sizeof(int));
      EXPECT_EQ(got[0], 11);
    }
    if (b.rank() == 0) {
      int got = 0;
      EXPECT_EQ(codeOf([&] { b.recv(0, 4, &got, sizeof(got)); }), cocclInternalError);
    }
    b.barrier();
  });
}

TEST(Bootstrap, InvalidArguments) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  EXPECT_EQ(codeOf([&] { Bootstrap b(h, 0, 0, 1000); }), cocclInvalidArgument);
  EXPECT_EQ(codeOf([&] { Bootstrap b(h, 1, 1, 1000); }), cocclInvalidArgument);
  EXPECT_EQ(codeOf([&] { Bootstrap b(h, -1, 2, 1000); }), cocclInvalidArgument);
  Bootstrap b(h, 0, 1, 5000);  // the root is still there: the bad calls never reached it
  int x = 0;
  EXPECT_EQ(codeOf([&] { b.send(1, 0, &x, 4); }), cocclInvalidArgument);
  EXPECT_EQ(codeOf([&] { b.recv(-1, 0, &x, 4); }), cocclInvalidArgument);
  EXPECT_EQ(codeOf([&] { b.send(0, kBootstrapInternalTagBit | 1, &x, 4); }), cocclInvalidArgument);
  EXPECT_EQ(codeOf([&] { b.send(0, 1, nullptr, 4); }), cocclInvalidArgument);
  EXPECT_EQ(codeOf([&] { b.recv(0, 1, &x, 4); }), cocclInvalidUsage);  // self, nothing sent
  b.send(0, 1, &x, 4);
  EXPECT_EQ(codeOf([&] { b.recv(0, 1, &x, 4); }), cocclSuccess);
  b.barrier();
}

TEST(Bootstrap, Ipv6Root) {
  SocketAddress a;
  std::memset(&a, 0, sizeof(a));
  a.u.sin6.sin6_family = AF_INET6;
  a.u.sin6.sin6_addr = in6addr_loopback;
  SocketAddress bound;
  try {
    Socket probe = Socket::listen(a, &bound);  // a free port; the root reuses it below
  } catch (const Error&) {
    GTEST_SKIP() << "no IPv6 loopback here";
  }
  BootstrapHandle h;
  std::memset(&h, 0, sizeof(h));
  h.magic = 0x1234567890abcdefull;
  h.root = bound;
  bootstrapCreateRootAt(bound, h.magic);
  const int n = 3;
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      try {
        Bootstrap b(h, r, n, 10000);
        std::vector<int> v(n, -1);
        v[r] = r + 40;
        b.allGather(v.data(), sizeof(int));
        for (int i = 0; i < n; ++i) EXPECT_EQ(v[i], i + 40);
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : ts) t.join();
}

TEST(Bootstrap, SocketIfnameLo) {
  test::ScopedEnv e("COCCL_SOCKET_IFNAME", "lo");
  runRanks(3, [](Bootstrap& b) {
    std::vector<int> v(3, 0);
    v[b.rank()] = 1 + b.rank();
    b.allGather(v.data(), sizeof(int));
    EXPECT_EQ(v, (std::vector<int>{1, 2, 3}));
  });
}

// COCCL_COMM_ID style: ranks start before the root exists and connect with retries.
TEST(Bootstrap, RootAtFixedAddressStartedLate) {
  SocketAddress any = parseHostPort("127.0.0.1:1"), bound;
  any.u.sin.sin_port = 0;
  { Socket probe = Socket::listen(any, &bound); }  // a free port
  BootstrapHandle h;
  std::memset(&h, 0, sizeof(h));
  h.magic = 0xfeedull;
  h.root = parseHostPort("127.0.0.1:" + std::to_string(ntohs(bound.u.sin.sin_port)));
  const int n = 3;
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int r = 1; r < n; ++r)
    ts.emplace_back([&, r] {
      try {
        Bootstrap b(h, r, n, 10000);
        b.barrier();
        ++ok;
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  bootstrapCreateRootAt(h.root, h.magic);  // what rank 0 does inside init
  try {
    Bootstrap b(h, 0, n, 10000);
    b.barrier();
    ++ok;
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), n);
}

TEST(Bootstrap, RootRejectsInconsistentRegistrations) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  std::thread first([&] {
    // Registers first (nranks 2), then times out: rank 1 never comes.
    EXPECT_NE(codeOf([&] { Bootstrap b(h, 0, 2, 800); }), cocclSuccess);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string msg;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(codeOf([&] { Bootstrap b(h, 1, 3, 5000); }, &msg), cocclInvalidArgument);
  EXPECT_NE(msg.find("nranks"), std::string::npos) << msg;
  EXPECT_EQ(codeOf([&] { Bootstrap b(h, 0, 2, 5000); }, &msg), cocclInvalidArgument);
  EXPECT_NE(msg.find("registered this rank"), std::string::npos) << msg;
  EXPECT_LT(msSince(t0), 1000);  // rejected at once, not after a timeout
  first.join();
}

}  // namespace
}  // namespace coccl
