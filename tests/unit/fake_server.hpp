// A fake server on 127.0.0.1 for the remote tests: it accepts connections
// on a port of its own and runs a handler per connection on a thread, so a
// test can play a hostile server (one that trickles its answer, announces
// a huge reply, redirects) that a real redis-server or nginx cannot be made
// to be on demand. The handler gets the connected socket and a stop flag;
// destruction stops every thread and joins it.
//
// Thread-safety: construct and destroy on the test's thread; the handler
// runs on the server's threads.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace kcache::test {

class FakeServer {
 public:
  using Handler = std::function<void(int fd, const std::atomic<bool>& stop)>;

  /// Listens on `address` (a loopback IPv4 address: 127.0.0.2 plays another
  /// host) and `port` (0: any free one); bound() says whether it could.
  explicit FakeServer(Handler handler, std::uint32_t address = INADDR_LOOPBACK, std::uint16_t port = 0)
      : m_handler(std::move(handler)) {
    m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(m_listen, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(address);
    addr.sin_port = htons(port);
    m_bound = ::bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::listen(m_listen, 64);
    socklen_t len = sizeof addr;
    ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&addr), &len);
    m_port = ntohs(addr.sin_port);
    m_accepter = std::thread([this] { accept_loop(); });
  }

  ~FakeServer() {
    m_stop = true;
    m_accepter.join();
    std::lock_guard lock(m_mutex);
    for (auto& t : m_threads) t.join();
    ::close(m_listen);
  }

  std::uint16_t port() const { return m_port; }
  /// Whether it listens where it was asked to.
  bool bound() const { return m_bound; }
  /// Connections accepted so far.
  int connections() const { return m_connections; }

 private:
  void accept_loop() {
    while (!m_stop) {
      pollfd p{m_listen, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++m_connections;
      std::lock_guard lock(m_mutex);
      m_threads.emplace_back([this, fd] {
        m_handler(fd, m_stop);
        ::close(fd);
      });
    }
  }

  Handler m_handler;
  int m_listen = -1;
  bool m_bound = false;
  std::uint16_t m_port = 0;
  std::atomic<bool> m_stop{false};
  std::atomic<int> m_connections{0};
  std::thread m_accepter;
  std::mutex m_mutex;
  std::vector<std::thread> m_threads;
};

/// Reads from `fd` until `text` has arrived (or the peer closes, or `stop`);
/// what was read.
inline std::string read_until(int fd, std::string_view text, const std::atomic<bool>& stop) {
  std::string got;
  char buf[4096];
  while (!stop && got.find(text) == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

/// Sends `bytes` one at a time, `gap` apart, until done, the peer is gone or
/// `stop`; false when it did not get them all out.
inline bool trickle(int fd, std::string_view bytes, std::chrono::milliseconds gap, const std::atomic<bool>& stop) {
  for (char c : bytes) {
    if (stop || ::send(fd, &c, 1, MSG_NOSIGNAL) != 1) return false;
    for (auto waited = std::chrono::milliseconds(0); waited < gap && !stop; waited += std::chrono::milliseconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/// Sends all of `bytes`; false when the peer went away first.
inline bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace kcache::test
