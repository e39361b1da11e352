// Socket helpers: IPv4/IPv6 loopback transfers, EOF and peerClosed(), deadlines, connect
// retries, interface selection (COCCL_SOCKET_IFNAME) and host:port parsing.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <cstring>
#include <thread>
#include <vector>

#include "core/socket.h"
#include "core_test_util.h"

namespace coccl {
namespace {

using test::codeOf;
using test::msSince;

SocketAddress loopback4(uint16_t port = 0) {
  SocketAddress a;
  std::memset(&a, 0, sizeof(a));
  a.u.sin.sin_family = AF_INET;
  a.u.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.u.sin.sin_port = htons(port);
  return a;
}

SocketAddress loopback6(uint16_t port = 0) {
  SocketAddress a;
  std::memset(&a, 0, sizeof(a));
  a.u.sin6.sin6_family = AF_INET6;
  a.u.sin6.sin6_addr = in6addr_loopback;
  a.u.sin6.sin6_port = htons(port);
  return a;
}

uint16_t portOf(const SocketAddress& a) {
  return ntohs(a.u.sa.sa_family == AF_INET ? a.u.sin.sin_port : a.u.sin6.sin6_port);
}

bool ipv6Available() {
  try {
    SocketAddress bound;
    Socket s = Socket::listen(loopback6(), &bound);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// A connected pair over `listenAddr`.
void makePair(const SocketAddress& listenAddr, Socket* client, Socket* server) {
  SocketAddress bound;
  Socket l = Socket::listen(listenAddr, &bound);
  *client = Socket::connect(bound, Deadline(2000));
  *server = l.accept(Deadline(2000));
}

void exerciseTransfer(const SocketAddress& listenAddr) {
  Socket c, s;
  makePair(listenAddr, &c, &s);
  ASSERT_TRUE(c.valid());
  ASSERT_TRUE(s.valid());
  // 8 MiB each way: exceeds the socket buffers, so the poll paths run.
  const size_t n = 8u << 20;
  std::vector<char> a(n), b(n), ra(n), rb(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<char>(i * 7 + 1);
    b[i] = static_cast<char>(i * 13 + 5);
  }
  std::thread t([&] {
    EXPECT_EQ(codeOf([&] {
                s.recvAll(rb.data(), n, Deadline(5000));
                s.sendAll(b.data(), n, Deadline(5000));
              }),
              cocclSuccess);
  });
  c.sendAll(a.data(), n, Deadline(5000));
  c.recvAll(ra.data(), n, Deadline(5000));
  t.join();
  EXPECT_EQ(ra, b);
  EXPECT_EQ(rb, a);

  // Pending data is not a closed peer; EOF is.
  char x = 42;
  c.sendAll(&x, 1, Deadline(1000));
  for (int i = 0; i < 100 && !s.peerClosed(); ++i) {
    pollfd p{s.fd(), POLLIN, 0};
    if (::poll(&p, 1, 10) > 0) break;
  }
  EXPECT_FALSE(s.peerClosed());
  EXPECT_FALSE(c.peerClosed());
  c.close();
  char y = 0;
  s.recvAll(&y, 1, Deadline(1000));
  EXPECT_EQ(y, 42);
  auto t0 = std::chrono::steady_clock::now();
  while (!s.peerClosed() && msSince(t0) < 2000)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(s.peerClosed());
  std::string msg;
  EXPECT_EQ(codeOf([&] { s.recvAll(&y, 1, Deadline(1000)); }, &msg), cocclRemoteError);
  EXPECT_NE(msg.find("peer closed the connection"), std::string::npos) << msg;
  // Writing into a closed connection: cocclRemoteError, no SIGPIPE.
  EXPECT_EQ(codeOf([&] {
              for (int i = 0; i < 100; ++i) {
                s.sendAll(a.data(), 4096, Deadline(1000));
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
              }
            }),
            cocclRemoteError);
}

TEST(Socket, Ipv4LoopbackTransfer) {
  exerciseTransfer(loopback4());
}

TEST(Socket, Ipv6LoopbackTransfer) {
  if (!ipv6Available()) GTEST_SKIP() << "no IPv6 loopback here";
  exerciseTransfer(loopback6());
}

TEST(Socket, AddressToString) {
  EXPECT_EQ(loopback4(1234).toString(), "127.0.0.1:1234");
  EXPECT_EQ(loopback6(80).toString(), "[::1]:80");
  EXPECT_EQ(loopback4().length(), sizeof(sockaddr_in));
  EXPECT_EQ(loopback6().length(), sizeof(sockaddr_in6));
}

TEST(Socket, ConnectRetriesUntilListenerAppears) {
  SocketAddress bound;
  { Socket probe = Socket::listen(loopback4(), &bound); }  // a port nobody listens on now
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    SocketAddress b2;
    Socket l = Socket::listen(bound, &b2);
    Socket s = l.accept(Deadline(3000));
    char c = 0;
    s.recvAll(&c, 1, Deadline(3000));
    EXPECT_EQ(c, 7);
  });
  Socket c = Socket::connect(bound, Deadline(5000));
  char v = 7;
  c.sendAll(&v, 1, Deadline(1000));
  late.join();
}

TEST(Socket, DeadlinesRaiseSystemError) {
  SocketAddress bound;
  { Socket probe = Socket::listen(loopback4(), &bound); }
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(codeOf([&] { Socket::connect(bound, Deadline(300)); }), cocclSystemError);
  double ms = msSince(t0);
  EXPECT_GE(ms, 250);
  EXPECT_LT(ms, 2000);

  Socket l = Socket::listen(loopback4(), &bound);
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(codeOf([&] { l.accept(Deadline(200)); }), cocclSystemError);
  EXPECT_LT(msSince(t0), 2000);

  Socket c = Socket::connect(bound, Deadline(1000));
  Socket s = l.accept(Deadline(1000));
  char buf[4];
  t0 = std::chrono::steady_clock::now();
  std::string msg;
  EXPECT_EQ(codeOf([&] { s.recvAll(buf, sizeof(buf), Deadline(200)); }, &msg), cocclSystemError);
  EXPECT_NE(msg.find("timed out"), std::string::npos) << msg;
  EXPECT_LT(msSince(t0), 2000);
}

TEST(Socket, ShutdownWakesPoller) {
  Socket c, s;
  makePair(loopback4(), &c, &s);
  auto t0 = std::chrono::steady_clock::now();
  std::thread t([&] {
    char b;
    EXPECT_NE(codeOf([&] { s.recvAll(&b, 1, Deadline(10000)); }), cocclSuccess);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  s.shutdown();
  t.join();
  EXPECT_LT(msSince(t0), 2000);
}

TEST(Socket, InterfaceSelection) {
  std::string name;
  SocketAddress def = findInterfaceAddress(&name);
  EXPECT_FALSE(name.empty());
  EXPECT_TRUE(def.u.sa.sa_family == AF_INET || def.u.sa.sa_family == AF_INET6);
  EXPECT_EQ(portOf(def), 0);
  EXPECT_NE(name.rfind("docker", 0), 0u);
  {
    test::ScopedEnv e("COCCL_SOCKET_IFNAME", "lo");
    SocketAddress a = findInterfaceAddress(&name);
    EXPECT_EQ(name, "lo");
    EXPECT_EQ(a.u.sa.sa_family, AF_INET);
    EXPECT_EQ(a.toString(), "127.0.0.1:0");
  }
  {
    test::ScopedEnv e("COCCL_SOCKET_IFNAME", "=lo");
    findInterfaceAddress(&name);
    EXPECT_EQ(name, "lo");
  }
  {
    test::ScopedEnv e("COCCL_SOCKET_IFNAME", "=l");  // exact: "l" is no interface
    EXPECT_EQ(codeOf([&] { findInterfaceAddress(&name); }), cocclSystemError);
  }
  {
    test::ScopedEnv e("COCCL_SOCKET_IFNAME", "^lo");
    cocclResult_t rc = codeOf([&] { findInterfaceAddress(&name); });
    if (rc == cocclSuccess)
      EXPECT_NE(name, "lo");
    else
      EXPECT_EQ(rc, cocclSystemError);  // a host with loopback only
  }
  {
    test::ScopedEnv e("COCCL_SOCKET_IFNAME", "nosuchif0,nosuchif1");
    std::string msg;
    EXPECT_EQ(codeOf([&] { findInterfaceAddress(&name); }, &msg), cocclSystemError);
    EXPECT_NE(msg.find("COCCL_SOCKET_IFNAME"), std::string::npos) << msg;
  }
}

TEST(Socket, ParseHostPort) {
  EXPECT_EQ(parseHostPort("127.0.0.1:1234").toString(), "127.0.0.1:1234");
  EXPECT_EQ(parseHostPort("[::1]:80").toString(), "[::1]:80");
  SocketAddress a = parseHostPort("localhost:99");
  EXPECT_TRUE(a.u.sa.sa_family == AF_INET || a.u.sa.sa_family == AF_INET6);
  EXPECT_EQ(portOf(a), 99);
  for (const char* bad : {"", "nohost", "1.2.3.4:", "1.2.3.4:0", "1.2.3.4:99999", "1.2.3.4:12x",
                          "[::1]80", "[::1", ":80"})
    EXPECT_EQ(codeOf([&] { parseHostPort(bad); }), cocclInvalidArgument) << bad;
}

}  // namespace
}  // namespace coccl
