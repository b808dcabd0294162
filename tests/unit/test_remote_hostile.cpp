// Remote servers that misbehave on purpose (fake servers on 127.0.0.1, see
// fake_server.hpp): a Redis or HTTP server trickling its answer a byte at a
// time must not hold a request past its timeout-ms; a Redis reply announced
// over the size bound is refused before it is read; a redirect is named as
// one; bundle transfers send the URL's credentials.
#include "kcache/remote/backend.hpp"
#include "kcache/remote/bundle_http.hpp"
#include "kcache/remote/url.hpp"

#include "fake_server.hpp"
#include "test_bundle_support.hpp"
#include "test_support.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

using namespace kcache;
using namespace kcache::remote;
using namespace std::chrono_literals;

namespace {

RemoteUrl url(const std::string& text) {
  auto u = parse_remote_url(text);
  REQUIRE(u);
  return *u;
}

std::string local(const test::FakeServer& s, const std::string& rest) {
  return fmt::format("127.0.0.1:{}{}", s.port(), rest);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Reads `fd` to its end (a download's pipe).
std::string drain(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

/// The arguments of the first whole RESP command in `buf` ("*N\r\n" then N
/// "$LEN\r\nARG\r\n") and its length; a length of 0 while it is incomplete.
std::pair<std::vector<std::string>, std::size_t> command_in(const std::string& buf) {
  auto eol = buf.find("\r\n");
  if (eol == std::string::npos) return {{}, 0};
  std::size_t argc = std::stoul(buf.substr(1, eol - 1)), pos = eol + 2;
  std::vector<std::string> args;
  while (args.size() < argc) {
    eol = buf.find("\r\n", pos);
    if (eol == std::string::npos) return {{}, 0};
    std::size_t len = std::stoul(buf.substr(pos + 1, eol - pos - 1));
    if (buf.size() < eol + 2 + len + 2) return {{}, 0};
    args.push_back(buf.substr(eol + 2, len));
    pos = eol + 2 + len + 2;
  }
  return {args, pos};
}

/// A Redis that answers every command as a real one would (GETRANGE with a
/// 3-byte value, SET with OK, EXISTS and DEL with 1), one command at a time.
void polite_redis(int fd, const std::atomic<bool>& stop) {
  std::string buf;
  while (!stop) {
    auto [args, used] = command_in(buf);
    if (used == 0) {
      auto more = test::read_until(fd, "\r\n", stop);
      if (more.empty()) return;
      buf += more;
      continue;
    }
    buf.erase(0, used);
    std::string answer = args[0] == "GETRANGE" ? "$3\r\nabc\r\n" : args[0] == "SET" ? "+OK\r\n" : ":1\r\n";
    if (!test::send_all(fd, answer)) return;
  }
}

}  // namespace

TEST_CASE("redis: the fake server's answers come through the request loop") {
  test::FakeServer server(polite_redis);
  auto backend = make_backend(url("redis://" + local(server, "?timeout-ms=1000")));
  auto got = backend->get("k", 100);
  REQUIRE(got);
  REQUIRE(*got);
  CHECK(std::string((*got)->begin(), (*got)->end()) == "abc");
  std::vector<std::uint8_t> value(100000, 7);
  CHECK(backend->put("k", value));
  auto there = backend->exists("k");
  REQUIRE(there);
  CHECK(*there);
  CHECK(backend->remove("k"));
  CHECK(server.connections() == 1);  // one pooled connection served all four
}

TEST_CASE("redis: timeout-ms bounds the whole request, not each read (a byte every 0.5 s)") {
  // Every byte arrives well within the timeout, so only a deadline over the
  // whole request stops it: the answer would take 27 x 0.5 s.
  test::FakeServer server([](int fd, const std::atomic<bool>& stop) {
    if (test::read_until(fd, "\r\n", stop).empty()) return;
    test::trickle(fd, "$20\r\n01234567890123456789\r\n", 500ms, stop);
  });
  auto backend = make_backend(url("redis://" + local(server, "?timeout-ms=1000")));
  auto t0 = std::chrono::steady_clock::now();
  auto got = backend->get("k", 1000);
  const double s = seconds_since(t0);
  REQUIRE_FALSE(got);
  CHECK(got.error().category == Category::io_error);
  CHECK(got.error().message.find("timed out after 1000 ms") != std::string::npos);
  CHECK(s < 2.5);
}

TEST_CASE("redis: a reply announced over the bound is refused unread and its connection dropped") {
  // 64 MiB announced where 1 MiB is allowed; the server sends as fast as
  // the client reads, so reading it would cost 64 MiB or more.
  std::atomic<std::uint64_t> sent{0};
  test::FakeServer server([&](int fd, const std::atomic<bool>& stop) {
    if (test::read_until(fd, "\r\n", stop).empty()) return;
    if (!test::send_all(fd, "$67108864\r\n")) return;
    const std::string chunk(1 << 20, '\0');
    for (int i = 0; i < 64 && !stop; ++i) {
      if (!test::send_all(fd, chunk)) return;
      sent += chunk.size();
    }
    test::send_all(fd, "\r\n");
  });
  auto backend = make_backend(url("redis://" + local(server, "?timeout-ms=5000")));
  const auto base = test::begin_peak_measure();
  auto got = backend->get("k", 1 << 20);
  const auto grew_kib = test::peak_growth_kib(base);
  REQUIRE_FALSE(got);
  CHECK(got.error().category == Category::corruption);
  CHECK(got.error().message.find("67108864") != std::string::npos);
  if (base != 0) CHECK(grew_kib < 16 * 1024);
  // The rest of that reply is still in flight: the connection is not reused.
  (void)backend->get("k", 1 << 20);
  CHECK(server.connections() == 2);
}

TEST_CASE("redis: an array announcing a huge element inside it is refused too") {
  test::FakeServer server([](int fd, const std::atomic<bool>& stop) {
    if (test::read_until(fd, "\r\n", stop).empty()) return;
    test::send_all(fd, "*2\r\n$1\r\n0\r\n*1\r\n$1073741824\r\n");
    test::read_until(fd, "never", stop);
  });
  auto backend = make_backend(url("redis://" + local(server, "?timeout-ms=3000")));
  auto t0 = std::chrono::steady_clock::now();
  auto counted = backend->count_values("kcache1/");
  REQUIRE_FALSE(counted);
  CHECK(counted.error().message.find("1073741824") != std::string::npos);
  CHECK(seconds_since(t0) < 2.0);
}

TEST_CASE("http: a redirect is reported as one, naming where it points") {
  test::FakeServer server([](int fd, const std::atomic<bool>& stop) {
    while (!stop) {
      if (test::read_until(fd, "\r\n\r\n", stop).empty()) return;
      if (!test::send_all(
              fd, "HTTP/1.1 302 Found\r\nLocation: http://elsewhere.example/b.kcb\r\nContent-Length: 0\r\n\r\n"))
        return;
    }
  });
  auto backend = make_backend(url("http://" + local(server, "/c/?timeout-ms=2000")));
  auto got = backend->get("k", 100);
  REQUIRE_FALSE(got);
  CHECK(got.error().message.find("redirect to http://elsewhere.example/b.kcb") != std::string::npos);
  CHECK(got.error().message.find("does not follow redirects") != std::string::npos);

  auto download = HttpDownload::start("http://" + local(server, "/b.kcb?timeout-ms=2000"));
  REQUIRE(download);
  drain((*download)->fd());
  auto done = (*download)->finish();
  REQUIRE_FALSE(done);
  CHECK(done.error().message.find("redirect to http://elsewhere.example/b.kcb") != std::string::npos);
}

TEST_CASE("bundle download and upload: timeout-ms bounds the whole transfer") {
  // The body comes at 3 bytes a second: never a stall, but 40 bytes take 13 s.
  test::FakeServer slow_get([](int fd, const std::atomic<bool>& stop) {
    if (test::read_until(fd, "\r\n\r\n", stop).empty()) return;
    if (!test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n")) return;
    test::trickle(fd, std::string(40, 'x'), 300ms, stop);
  });
  auto t0 = std::chrono::steady_clock::now();
  auto download = HttpDownload::start("http://" + local(slow_get, "/b.kcb?timeout-ms=1000"));
  REQUIRE(download);
  drain((*download)->fd());
  auto done = (*download)->finish();
  CHECK(seconds_since(t0) < 3.0);
  REQUIRE_FALSE(done);
  CHECK(done.error().message.find("timed out after 1000 ms") != std::string::npos);

  // The answer to the PUT comes a byte every 0.3 s.
  test::FakeServer slow_put([](int fd, const std::atomic<bool>& stop) {
    if (test::read_until(fd, "\r\n\r\n", stop).empty()) return;
    test::trickle(fd, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", 300ms, stop);
  });
  test::TempDir dir;
  auto file = dir.write("b.kcb", "bundle bytes");
  t0 = std::chrono::steady_clock::now();
  auto sent = http_upload_file("http://" + local(slow_put, "/b.kcb?timeout-ms=1000"), file);
  CHECK(seconds_since(t0) < 3.0);
  REQUIRE_FALSE(sent);
  CHECK(sent.error().message.find("timed out after 1000 ms") != std::string::npos);
}

TEST_CASE("bundle download and upload send the URL's credentials (basic auth), and never show the password") {
  std::mutex mutex;
  std::vector<std::string> requests;
  test::FakeServer server([&](int fd, const std::atomic<bool>& stop) {
    auto head = test::read_until(fd, "\r\n\r\n", stop);
    if (head.empty()) return;
    {
      std::lock_guard lock(mutex);
      requests.push_back(head);
    }
    if (head.starts_with("PUT")) {
      if (head.find("bundle bytes") == std::string::npos) test::read_until(fd, "bundle bytes", stop);
      test::send_all(fd, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
    } else {
      test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    }
  });
  test::TempDir dir;
  auto file = dir.write("b.kcb", "bundle bytes");
  const std::string target = "http://ci:s3cret-pw@" + local(server, "/b.kcb");
  auto sent = http_upload_file(target, file);
  INFO((sent ? std::string() : sent.error().message));
  REQUIRE(sent);
  auto download = HttpDownload::start(target);
  REQUIRE(download);
  CHECK(drain((*download)->fd()) == "hello");
  CHECK((*download)->finish());
  CHECK((*download)->shown().find("s3cret") == std::string::npos);
  std::lock_guard lock(mutex);
  REQUIRE(requests.size() == 2);
  for (const auto& r : requests) {
    INFO(r);
    CHECK(r.find("Authorization: Basic Y2k6czNjcmV0LXB3") != std::string::npos);  // "ci:s3cret-pw"
  }
}
