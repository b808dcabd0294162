// The one HTTP client (remote/http_client.hpp) against hostile servers, and
// the OCI registry client on top of it (remote/oci.hpp): a registry whose
// upload Location points at another origin (user info naming another host,
// a longer port) gets no blob and no credentials; a blob download
// redirected (307) to object storage on another origin is followed without
// them; a body trickling 4 B/s is cut by the stall rule in about 10 s, not
// at the 10-minute deadline, while a registry committing an upload for
// longer than the stall window is waited for; a TLS mismatch names
// --plain-http; an oci:// reference holding a password never shows it.
#include "kcache/bundle/bundle.hpp"
#include "kcache/remote/bundle_http.hpp"
#include "kcache/remote/http_client.hpp"
#include "kcache/remote/oci.hpp"

#include "fake_server.hpp"
#include "test_bundle_support.hpp"
#include "test_support.hpp"

#include <sodium.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>

using namespace kcache;
using namespace kcache::remote;
using namespace std::chrono_literals;

namespace http_client_test {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool contains(const std::string& text, std::string_view what) { return text.find(what) != std::string::npos; }

/// One request as a fake server read it.
struct Request {
  std::string method, target, body;
  std::map<std::string, std::string> headers;  ///< names lowercased
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

/// Reads one request (its head, then Content-Length bytes of body) from
/// `fd`, `buf` holding what was read past the previous one; nullopt when
/// the peer closed first.
std::optional<Request> read_request(int fd, std::string& buf, const std::atomic<bool>& stop) {
  auto more = [&]() {
    char chunk[65536];
    while (!stop) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      auto n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buf.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    return false;
  };
  std::size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos)
    if (!more()) return std::nullopt;
  const std::string head = buf.substr(0, end + 2);
  buf.erase(0, end + 4);
  Request r;
  auto eol = head.find("\r\n");
  auto line = head.substr(0, eol);
  r.method = line.substr(0, line.find(' '));
  r.target = line.substr(r.method.size() + 1, line.rfind(' ') - r.method.size() - 1);
  for (auto pos = eol + 2; pos < head.size();) {
    auto next = head.find("\r\n", pos);
    auto h = head.substr(pos, next - pos);
    pos = next + 2;
    auto colon = h.find(':');
    if (colon == std::string::npos) continue;
    std::string name = h.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = h.substr(h.find_first_not_of(' ', colon + 1));
  }
  const std::size_t length = r.headers.contains("content-length") ? std::stoul(r.headers["content-length"]) : 0;
  while (buf.size() < length)
    if (!more()) return std::nullopt;
  r.body = buf.substr(0, length);
  buf.erase(0, length);
  return r;
}

std::string answer(int status, const std::vector<std::string>& headers = {}, std::string_view body = {}) {
  std::string out = fmt::format("HTTP/1.1 {} X\r\n", status);
  for (const auto& h : headers) out += h + "\r\n";
  return out + fmt::format("Content-Length: {}\r\n\r\n", body.size()) + std::string(body);
}

/// The requests a fake server received.
struct Log {
  std::mutex mutex;
  std::vector<Request> requests;
  void add(const Request& r) {
    std::lock_guard lock(mutex);
    requests.push_back(r);
  }
  std::vector<Request> all() {
    std::lock_guard lock(mutex);
    return requests;
  }
};

using Respond = std::function<std::string(const Request&)>;

/// A handler that answers each request of a connection with `respond`,
/// logging it, until the peer closes.
test::FakeServer::Handler serve(Log& log, Respond respond) {
  return [&log, respond](int fd, const std::atomic<bool>& stop) {
    std::string buf;
    while (auto r = read_request(fd, buf, stop)) {
      log.add(*r);
      if (!test::send_all(fd, respond(*r))) return;
    }
  };
}

std::string sha256(std::string_view bytes) {
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(out, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  std::string hex = "sha256:";
  for (auto b : out) hex += fmt::format("{:02x}", b);
  return hex;
}

std::string base64(std::string_view text) {
  std::string out(sodium_base64_ENCODED_LEN(text.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(text.data()), text.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(std::strlen(out.c_str()));
  return out;
}

/// A registry of one repository that asks for basic auth ("ci:s3cret-pw")
/// and keeps what is pushed in memory: what the OCI distribution API needs
/// for a monolithic push and a pull (oci.cpp's requests, OCI.md).
class FakeRegistry {
 public:
  explicit FakeRegistry(std::uint16_t port = 0)
      : m_server(serve(log, [this](const Request& r) { return respond(r); }), INADDR_LOOPBACK, port) {}

  bool bound() const { return m_server.bound(); }
  std::uint16_t port() const { return m_server.port(); }
  std::string host() const { return fmt::format("127.0.0.1:{}", port()); }

  /// The Location a POST to blobs/uploads/ answers with.
  std::string upload_location = "/v2/k/x/blobs/uploads/1";
  /// When set, a blob GET answers 307 to http://127.0.0.1:PORT/o/DIGEST.
  std::atomic<std::uint16_t> redirect_blobs_to{0};

  std::string blob(const std::string& digest) {
    std::lock_guard lock(m_mutex);
    return m_blobs[digest];
  }

  Log log;

 private:
  std::string respond(const Request& r) {
    if (r.header("authorization") != "Basic " + base64("ci:s3cret-pw"))
      return answer(401, {"WWW-Authenticate: Basic realm=\"fake\""});
    const std::string path = r.target.substr(0, r.target.find('?'));
    std::lock_guard lock(m_mutex);
    if (path == "/v2/k/x/blobs/uploads/" && r.method == "POST") return answer(202, {"Location: " + upload_location});
    if (path.starts_with("/v2/k/x/blobs/uploads/") && r.method == "PUT") {
      auto d = r.target.find("digest=");
      if (d == std::string::npos || sha256(r.body) != r.target.substr(d + 7)) return answer(400);
      m_blobs[r.target.substr(d + 7)] = r.body;
      return answer(201);
    }
    if (path.starts_with("/v2/k/x/blobs/")) {
      auto it = m_blobs.find(path.substr(14));
      if (it == m_blobs.end()) return answer(404);
      if (r.method == "HEAD") return answer(200);
      if (redirect_blobs_to)
        return answer(307, {fmt::format("Location: http://127.0.0.1:{}/o/{}", redirect_blobs_to.load(), it->first)},
                      "<a>Temporary Redirect</a>");
      return answer(200, {}, it->second);
    }
    if (path.starts_with("/v2/k/x/manifests/")) {
      if (r.method == "PUT") {
        m_manifests[path] = r.body;
        return answer(201);
      }
      auto it = m_manifests.find(path);
      if (it == m_manifests.end()) return answer(404);
      return answer(200, {"Content-Type: application/vnd.oci.image.manifest.v1+json"}, it->second);
    }
    return answer(404);
  }

  std::mutex m_mutex;
  std::map<std::string, std::string> m_blobs, m_manifests;
  test::FakeServer m_server;
};

/// A bundle file of one SPIR-V namespace, to push (`n` entries: other
/// bytes, other blobs).
std::filesystem::path bundle_file(const test::TempDir& dir, std::size_t n = 3) {
  const auto entries = test::make_entries(n, 64);
  auto path = dir.path() / fmt::format("b{}.kcb", n);
  auto header = bundle::make_header(spirv_namespace("vulkan1.2"), test::tool_versions(), 1'700'000'000, entries);
  REQUIRE(bundle::write_bundle_file(path, header, bundle::entries_from(entries), {}).has_value());
  return path;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

OciOptions registry_options() {
  OciOptions o;
  o.credentials = OciCredentials{"ci", "s3cret-pw"};
  o.timeout_ms = 20000;
  return o;
}

OciRef ref_at(const std::string& host) {
  auto ref = parse_oci_ref("oci://" + host + "/k/x:t");
  REQUIRE(ref);
  return *ref;
}

/// A server that answers every request with `reply` and logs it.
struct Thief {
  Log log;
  test::FakeServer server;
  Thief(std::uint32_t address, std::uint16_t port)
      : server(serve(log, [](const Request&) { return answer(201); }), address, port) {}
};

TEST_CASE("parse_http_url: origins are compared after parsing, user info is refused") {
  auto base = parse_http_url("https://registry.example.com/v2/k/x/");
  REQUIRE(base);
  CHECK(base->origin == HttpOrigin{"https", "registry.example.com", 443});
  auto same = parse_http_url("HTTPS://Registry.Example.COM:443/v2/k/x/blobs/uploads/1?_state=abc");
  REQUIRE(same);
  CHECK(same->origin == base->origin);
  // What "starts with the registry's URL" let through.
  auto suffix = parse_http_url("https://registry.example.com.evil.net/v2/k/x/blobs/uploads/1");
  REQUIRE(suffix);
  CHECK_FALSE(suffix->origin == base->origin);
  auto local = parse_http_url("http://127.0.0.1:5000/v2/");
  auto longer = parse_http_url("http://127.0.0.1:50001/v2/");
  REQUIRE(local);
  REQUIRE(longer);
  CHECK_FALSE(local->origin == longer->origin);
  auto with_user = parse_http_url("http://127.0.0.1:5000@127.0.0.2:5000/steal");
  REQUIRE_FALSE(with_user);
  CHECK(contains(with_user.error().message, "user or password"));
  CHECK_FALSE(contains(with_user.error().message, "127.0.0.1:5000@"));
  // Relative Locations resolve against the request's URL.
  auto relative = parse_http_url("/v2/k/x/blobs/uploads/2?_state=s", &*local);
  REQUIRE(relative);
  CHECK(relative->text == "http://127.0.0.1:5000/v2/k/x/blobs/uploads/2?_state=s");
  CHECK(relative->origin == local->origin);
  auto scheme_relative = parse_http_url("//127.0.0.2:5000/x", &*local);
  REQUIRE(scheme_relative);
  CHECK(scheme_relative->origin == HttpOrigin{"http", "127.0.0.2", 5000});
  CHECK_FALSE(parse_http_url("ftp://127.0.0.1/x"));
  CHECK_FALSE(parse_http_url("file:///etc/passwd"));
  CHECK_FALSE(parse_http_url("http://127.0.0.1:5000/a b"));
}

TEST_CASE("oci push: an upload Location on another origin gets no blob and no credentials") {
  test::TempDir dir;
  const auto file = bundle_file(dir);
  // A registry port P whose longer form P*10+1 is a port too, with a thief
  // on that port and one on 127.0.0.2:P (the host user info hides).
  std::mt19937 rng(static_cast<unsigned>(::getpid()));
  std::unique_ptr<FakeRegistry> registry;
  std::unique_ptr<Thief> other_host, longer_port;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto p = static_cast<std::uint16_t>(2000 + rng() % 4500);
    registry = std::make_unique<FakeRegistry>(p);
    other_host = std::make_unique<Thief>(INADDR_LOOPBACK + 1, p);
    longer_port = std::make_unique<Thief>(INADDR_LOOPBACK, static_cast<std::uint16_t>(p * 10 + 1));
    if (registry->bound() && other_host->server.bound() && longer_port->server.bound()) break;
  }
  REQUIRE(registry->bound());
  REQUIRE(other_host->server.bound());
  REQUIRE(longer_port->server.bound());
  const auto ref = ref_at(registry->host());
  const std::string origin = "http://" + registry->host();

  SUBCASE("user info naming another host") {
    registry->upload_location = fmt::format("{}@127.0.0.2:{}/steal", origin, registry->port());
    auto pushed = oci_push(file, ref, registry_options());
    REQUIRE_FALSE(pushed);
    INFO(pushed.error().message);
    CHECK(contains(pushed.error().message, "upload Location is refused"));
    CHECK(contains(pushed.error().message, "user or password"));
    CHECK_FALSE(contains(pushed.error().message, "s3cret"));
  }
  SUBCASE("a longer port") {
    registry->upload_location = origin + "1/steal";
    auto pushed = oci_push(file, ref, registry_options());
    REQUIRE_FALSE(pushed);
    INFO(pushed.error().message);
    CHECK(contains(pushed.error().message, "sends the upload to another origin"));
    CHECK_FALSE(contains(pushed.error().message, "s3cret"));
  }
  SUBCASE("the registry's own origin, relative or absolute with a query: pushed") {
    auto pushed = oci_push(file, ref, registry_options());
    INFO((pushed ? "" : pushed.error().message));
    REQUIRE(pushed);
    CHECK(pushed->uploaded == 2);
    registry->upload_location = origin + "/v2/k/x/blobs/uploads/2?_state=abc";
    auto again = oci_push(bundle_file(dir, 4), ref, registry_options());
    INFO((again ? "" : again.error().message));
    REQUIRE(again);
    CHECK(again->uploaded == 2);
  }
  CHECK(other_host->log.all().empty());
  CHECK(longer_port->log.all().empty());
  for (const auto& r : registry->log.all())
    if (r.method == "PUT") CHECK(r.header("authorization").starts_with("Basic "));
}

TEST_CASE("oci pull: a blob redirected (307) to another origin is followed without the credentials") {
  test::TempDir dir;
  const auto file = bundle_file(dir);
  FakeRegistry registry;
  Log storage_log;
  test::FakeServer storage(serve(storage_log, [&](const Request& r) {
    if (!r.target.starts_with("/o/")) return answer(404);
    return answer(200, {}, registry.blob(r.target.substr(3)));
  }));
  const auto ref = ref_at(registry.host());
  auto pushed = oci_push(file, ref, registry_options());
  INFO((pushed ? "" : pushed.error().message));
  REQUIRE(pushed);
  registry.redirect_blobs_to = storage.port();
  auto pulled = oci_pull(ref, dir.path() / "pulled.kcb", registry_options());
  INFO((pulled ? "" : pulled.error().message));
  REQUIRE(pulled);
  // The pulled release is the release head followed by the pushed bundle.
  const auto bundle = slurp(file), got = slurp(dir.path() / "pulled.kcb");
  CHECK(got.size() > bundle.size());
  CHECK(got.substr(got.size() - bundle.size()) == bundle);
  const auto fetched = storage_log.all();
  CHECK(fetched.size() == 2);  // the config and the one layer
  for (const auto& r : fetched) CHECK(r.header("authorization").empty());
  std::size_t redirected = 0;
  for (const auto& r : registry.log.all())
    if (r.method == "GET" && contains(r.target, "/blobs/sha256:") && !r.header("authorization").empty()) ++redirected;
  CHECK(redirected == 2);
}

TEST_CASE("stall rule: a body trickling 4 B/s is cut in about 10 s, not at the 10-minute deadline") {
  // 120 bytes at 4 B/s would take 30 s; the bundle URL has no timeout-ms,
  // so its deadline is 600 s: only the stall rule ends it sooner.
  test::FakeServer server([](int fd, const std::atomic<bool>& stop) {
    if (test::read_until(fd, "\r\n\r\n", stop).empty()) return;
    if (!test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 120\r\n\r\n")) return;
    test::trickle(fd, std::string(120, 'x'), 250ms, stop);
  });
  auto t0 = std::chrono::steady_clock::now();
  auto download = HttpDownload::start(fmt::format("http://127.0.0.1:{}/b.kcb", server.port()));
  REQUIRE(download);
  char buf[256];
  while (::read((*download)->fd(), buf, sizeof buf) > 0) {}
  auto done = (*download)->finish();
  const double s = seconds_since(t0);
  REQUIRE_FALSE(done);
  INFO(done.error().message);
  CHECK(contains(done.error().message, "stalled: fewer than 1024 bytes moved in 10 s"));
  CHECK(s > 9.0);
  CHECK(s < 14.0);
}

TEST_CASE("stall rule: waiting for the answer after an upload's last byte is not a stall") {
  // A registry that takes 2.5 s to commit a blob, under a 1 s stall window.
  Log log;
  test::FakeServer server([&](int fd, const std::atomic<bool>& stop) {
    std::string buf;
    while (auto r = read_request(fd, buf, stop)) {
      log.add(*r);
      for (int i = 0; i < 250 && !stop; ++i) std::this_thread::sleep_for(10ms);
      if (!test::send_all(fd, answer(201))) return;
    }
  });
  HttpClient client(HttpClientOptions{"test", k_stall_bytes, 1000ms});
  const std::string data(5000, 'b');
  const HttpBody body{{reinterpret_cast<const std::uint8_t*>(data.data()), data.size()}};
  HttpRequest put;
  put.method = "PUT";
  put.url = fmt::format("http://127.0.0.1:{}/blob", server.port());
  put.body = &body;
  put.deadline = std::chrono::steady_clock::now() + 10s;
  put.timeout_ms = 10000;
  auto done = client.perform(put);
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  CHECK(done->status == 201);
  // A GET whose answer does not come is a stall.
  HttpRequest get;
  get.url = put.url;
  get.deadline = put.deadline;
  get.timeout_ms = 10000;
  auto t0 = std::chrono::steady_clock::now();
  test::FakeServer silent([](int fd, const std::atomic<bool>& stop) { test::read_until(fd, "never", stop); });
  get.url = fmt::format("http://127.0.0.1:{}/x", silent.port());
  auto stalled = client.perform(get);
  REQUIRE_FALSE(stalled);
  CHECK(contains(stalled.error().message, "stalled"));
  CHECK(seconds_since(t0) < 4.0);
}

TEST_CASE("a TLS mismatch with the registry names --plain-http") {
  test::TempDir dir;
  SUBCASE("https to a server that speaks plain http") {
    test::FakeServer plain([](int fd, const std::atomic<bool>& stop) {
      if (test::read_until(fd, "\x16", stop).empty()) return;  // a TLS ClientHello
      test::send_all(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    // 0.0.0.0 reaches 127.0.0.1 on Linux but is no loopback name: https.
    auto ref = ref_at(fmt::format("0.0.0.0:{}", plain.port()));
    REQUIRE_FALSE(ref.plain_http);
    auto pulled = oci_pull(ref, dir.path() / "p.kcb", registry_options());
    REQUIRE_FALSE(pulled);
    INFO(pulled.error().message);
    CHECK(contains(pulled.error().message, "serves plain http (no TLS), pass --plain-http"));
  }
  SUBCASE("--plain-http to a server that speaks TLS: a TLS alert") {
    test::FakeServer tls([](int fd, const std::atomic<bool>& stop) {
      if (test::read_until(fd, "\r\n\r\n", stop).empty()) return;
      test::send_all(fd, std::string("\x15\x03\x03\x00\x02\x02\x46", 7));
    });
    auto ref = ref_at(fmt::format("0.0.0.0:{}", tls.port()));
    ref.plain_http = true;
    auto pulled = oci_pull(ref, dir.path() / "p.kcb", registry_options());
    REQUIRE_FALSE(pulled);
    INFO(pulled.error().message);
    CHECK(contains(pulled.error().message, "the registry may speak TLS: leave out --plain-http"));
  }
  SUBCASE("--plain-http to a server that speaks TLS: Go's 400 answer") {
    test::FakeServer tls([](int fd, const std::atomic<bool>& stop) {
      if (test::read_until(fd, "\r\n\r\n", stop).empty()) return;
      test::send_all(fd, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n");
    });
    auto ref = ref_at(fmt::format("0.0.0.0:{}", tls.port()));
    ref.plain_http = true;
    auto pulled = oci_pull(ref, dir.path() / "p.kcb", registry_options());
    REQUIRE_FALSE(pulled);
    INFO(pulled.error().message);
    CHECK(contains(pulled.error().message, "answered HTTP 400; the registry may speak TLS: leave out --plain-http"));
  }
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("an oci:// reference holding a password is refused without showing any of it") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"oci://fleet:p4ss-s3cret@registry.example.com/k/x:t", "oci://fleet:***@registry.example.com/k/x:t"},
      {"oci://fleet:p@ss/s3cret@registry.example.com/k/x:t", "oci://fleet:***@registry.example.com/k/x:t"},
      {"oci://tok3n-s3cret@registry.example.com/k/x:t", "oci://***@registry.example.com/k/x:t"},
      {"oci://fleet:p4ss-s3cret@registry.example.com/k/x@sha256:" + std::string(64, 'a'),
       "oci://fleet:***@registry.example.com/k/x@sha256:" + std::string(64, 'a')},
  };
  for (const auto& [text, shown] : cases) {
    auto ref = parse_oci_ref(text);
    REQUIRE_FALSE(ref);
    INFO(ref.error().message);
    CHECK(contains(ref.error().message, "'" + shown + "'"));
    CHECK_FALSE(contains(ref.error().message, "s3cret"));
    CHECK(contains(ref.error().message, "credentials do not go in the reference"));
  }
  // A digest is no user info.
  CHECK(parse_oci_ref("oci://registry.example.com/k/x@sha256:" + std::string(64, 'a')));
}

}  // namespace http_client_test
