#include "kcache/remote/url.hpp"

#include "test_support.hpp"

using namespace kcache;
using namespace kcache::remote;

namespace {
/// "%40%40..." for a string of '@'s: user info as a URL must carry it.
std::string encode_all(const std::string& s) {
  std::string out;
  for (char c : s) out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
  return out;
}
}  // namespace

TEST_CASE("remote URLs: every form and option") {
  auto r =
      parse_remote_url("redis://ci:p%40ss@cache.internal:6380/3?read-only&timeout-ms=500&prefix=proj/a&max-failures=7");
  REQUIRE(r);
  CHECK(r->scheme == Scheme::redis);
  CHECK(r->user == "ci");
  CHECK(r->password == "p@ss");
  CHECK(r->host == "cache.internal");
  CHECK(r->port == 6380);
  CHECK(r->db == 3);
  CHECK(r->read_only);
  CHECK(r->timeout_ms == 500);
  CHECK(r->prefix == "proj/a");
  CHECK(r->max_failures == 7);
  CHECK(r->shown() == "redis://ci:***@cache.internal:6380/3?read-only&prefix=proj/a");

  auto h = parse_remote_url("http://127.0.0.1:8080/kc");
  REQUIRE(h);
  CHECK(h->scheme == Scheme::http);
  CHECK(h->path == "/kc/");
  CHECK(h->http_base() == "http://127.0.0.1:8080/kc/");
  CHECK(h->timeout_ms == 2000);
  CHECK(h->max_failures == 3);
  auto v6 = parse_remote_url("https://[::1]:8443/");
  REQUIRE(v6);
  CHECK(v6->host == "[::1]");
  CHECK(v6->http_base() == "https://[::1]:8443/");
  auto f = parse_remote_url("file:///mnt/shared/kc/");
  REQUIRE(f);
  CHECK(f->path == "/mnt/shared/kc");
  auto bare = parse_remote_url("redis://localhost");
  REQUIRE(bare);
  CHECK(bare->port == 0);
  CHECK(bare->db == 0);
}

TEST_CASE("remote URLs from elsewhere are refused with a reason, the password never shown") {
  for (const char* bad : {"",
                          "ftp://h/",
                          "redis://",
                          "redis://h:0",
                          "redis://h:65536",
                          "redis://h:12x",
                          "redis://h/db",
                          "redis://h/70000",
                          "http://h/a/../b/",
                          "http://h/a//b/",
                          "http://h/a b/",
                          "http://h/%2e%2e/",
                          "file://relative",
                          "file:///a/../b",
                          "redis://h?nope",
                          "redis://h?timeout-ms=0",
                          "redis://h?timeout-ms=600001",
                          "redis://h?max-failures=0",
                          "redis://h?prefix=../x",
                          "redis://h?prefix=/abs",
                          "redis://h?read-only=1",
                          "http://h\x1b[31m/",
                          "redis://u:pa%0ass@h",
                          "redis://u:pa%zzss@h",
                          "http://[::1/",
                          "http://h#frag",
                          "redis://h:"}) {
    auto r = parse_remote_url(bad);
    INFO(bad);
    CHECK_FALSE(r);
    if (!r) {
      CHECK(r.error().category == Category::invalid_argument);
      CHECK(r.error().message.find("\x1b") == std::string::npos);
    }
  }
  auto r = parse_remote_url("redis://admin:hunter2@h:99999");
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("hunter2") == std::string::npos);
  CHECK_FALSE(parse_remote_url(std::string(5000, 'a')));

  // A password holding '@', or one long enough to reach past the first 200
  // bytes shown: the user info is hidden whatever the parser made of it.
  for (const std::string& bad : std::vector<std::string>{
           "redis://admin:hun@ter2@h:99999", "redis://admin:hun@ter2@h/x", "http://u:hun@ter2@h/a b/",
           "redis:/admin:hunter2@h:99999", "redis://admin:" + std::string(300, 'Q') + "hunter2@h:99999",
           "redis://admin:" + std::string(300, 'Q') + "hunter2@h/" + std::string(300, 'x')}) {
    auto refused = parse_remote_url(bad);
    INFO(bad);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("ter2") == std::string::npos);
    CHECK(refused.error().message.find("QQQQ") == std::string::npos);
    CHECK(refused.error().message.find("***@h") != std::string::npos);
  }

  // User info is bounded so that the shown form (each '@' in a user name
  // becomes "%40") parses back: a fuzz finding had a 3,900-byte user name
  // whose shown() was over k_max_url_bytes.
  const std::string long_user(k_max_userinfo_bytes + 1, '@');
  CHECK_FALSE(parse_remote_url("redis://" + long_user + "@h"));
  CHECK_FALSE(parse_remote_url("redis://u:" + std::string(k_max_userinfo_bytes + 1, 'p') + "@h"));
  auto longest = parse_remote_url("redis://" + encode_all(std::string(k_max_userinfo_bytes, '@')) + "@" +
                                  std::string(253, 'h') + ":65535/65535?prefix=" + std::string(128, 'p'));
  REQUIRE(longest);
  auto again = parse_remote_url(longest->shown());
  REQUIRE(again);
  CHECK(again->user == longest->user);
}

TEST_CASE("KCACHE_REMOTE lists URLs separated by white space") {
  CHECK(split_remote_list("  redis://a \n http://b/\tfile:///c  ") ==
        std::vector<std::string>{"redis://a", "http://b/", "file:///c"});
  CHECK(split_remote_list("   ").empty());
}
