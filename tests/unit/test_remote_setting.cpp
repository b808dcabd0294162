// A store's remote setting (lib/kcache/remote/setting.hpp): the version-1
// golden file, round trips, and every way a damaged file is refused naming
// the file and line.
#include "kcache/remote/setting.hpp"

#include "kcache/util/file.hpp"
#include "test_support.hpp"

#include <sys/stat.h>

using namespace kcache;
using namespace kcache::remote;

namespace {

std::string refused(std::string_view text, Category want = Category::corruption) {
  auto r = parse_remote_setting(text, "STORE/remotes");
  REQUIRE_FALSE(r);
  CHECK(r.error().category == want);
  return r.error().message;
}

}  // namespace

// The golden file of version 1: what `kcache remote add` writes, with a
// comment and an empty line a person may add. Never regenerated.
TEST_CASE("golden: setting version 1 is read in order, passwords kept but never shown") {
  auto path = std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/remote/remotes-v1.txt";
  auto text = util::read_file(path);
  REQUIRE(text);
  auto r = parse_remote_setting(*text, path.string());
  REQUIRE(r);
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].text == "redis://ci:s3cret@cache.internal:6379/2?prefix=proj");
  CHECK((*r)[0].url.password == "s3cret");
  CHECK((*r)[0].url.shown() == "redis://ci:***@cache.internal:6379/2?prefix=proj");
  CHECK((*r)[1].url.read_only);
  CHECK((*r)[1].url.timeout_ms == 500);
  CHECK((*r)[2].url.scheme == Scheme::file);
  // Written again, the URLs come back as they were (comments are not kept).
  auto again = parse_remote_setting(format_remote_setting(*r), "x");
  REQUIRE(again);
  REQUIRE(again->size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK((*again)[i].text == (*r)[i].text);
}

TEST_CASE("a damaged setting names the file and line and what to do") {
  auto m = refused("");
  CHECK(m.find("STORE/remotes:1") != std::string::npos);
  m = refused("kcache-remote 1\n");
  CHECK(m.find("STORE/remotes:1: the first line is") != std::string::npos);
  CHECK(m.find("kcache remote add") != std::string::npos);
  refused("kcache-remotes x\n");
  refused("kcache-remotes 1x\n");
  m = refused("kcache-remotes 2\nredis://h/0\n", Category::version_mismatch);
  CHECK(m.find("version 2 is newer") != std::string::npos);
  m = refused("kcache-remotes 1\nredis://h/0\nftp://h/\n");
  CHECK(m.find("STORE/remotes:3") != std::string::npos);
  CHECK(m.find("unknown scheme") != std::string::npos);
  // A bad URL's password is not repeated in the message.
  m = refused("kcache-remotes 1\nredis://u:topsecret@h:99999/0\n");
  CHECK(m.find("topsecret") == std::string::npos);
  CHECK(m.find(":2:") != std::string::npos);
  m = refused("kcache-remotes 1\r\nredis://h/0\n");
  CHECK(m.find("control byte 0x0d") != std::string::npos);
  m = refused(std::string("kcache-remotes 1\nredis://h/0\x1b[2J\n"));
  CHECK(m.find("STORE/remotes:2: a control byte 0x1b") != std::string::npos);
  refused(std::string("kcache-remotes 1\nredis://h/0\0\n", 29));
  std::string many = "kcache-remotes 1\n";
  for (std::size_t i = 0; i <= k_max_setting_remotes; ++i) many += "redis://h/" + std::to_string(i) + "\n";
  m = refused(many);
  CHECK(m.find("more than 64 remotes") != std::string::npos);
  std::string big = "kcache-remotes 1\n" + std::string(k_max_setting_bytes, '#');
  m = refused(big);
  CHECK(m.find("over 65536 bytes") != std::string::npos);
  // Comments and empty lines only: no remotes.
  auto none = parse_remote_setting("kcache-remotes 1\n# nothing\n\n", "x");
  REQUIRE(none);
  CHECK(none->empty());
}

TEST_CASE("the setting file: written atomically with mode 0600, removed when empty, read back") {
  test::TempDir dir;
  auto store = dir.path() / "store";
  auto empty = read_remote_setting(store);  // no folder, no file: no remotes
  REQUIRE(empty);
  CHECK(empty->empty());
  std::vector<SettingRemote> remotes;
  for (auto text : {"redis://u:pw@h:6379/1", "http://c/kc/?read-only"})
    remotes.push_back({text, *parse_remote_url(text)});
  REQUIRE(write_remote_setting(store, remotes));
  struct stat st {};
  REQUIRE(::stat(remote_setting_path(store).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto back = read_remote_setting(store);
  REQUIRE(back);
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].url.password == "pw");
  CHECK((*back)[1].url.read_only);
  REQUIRE(write_remote_setting(store, {}));
  CHECK_FALSE(std::filesystem::exists(remote_setting_path(store)));
  // A damaged file on disk: its path and line in the error.
  dir.write("store/remotes", "kcache-remotes 1\nnot a url\n");
  auto bad = read_remote_setting(store);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find((store / "remotes").string() + ":2") != std::string::npos);
  // A huge file is not read whole.
  dir.write("store/remotes", "kcache-remotes 1\n" + std::string(k_max_setting_bytes * 4, '#'));
  bad = read_remote_setting(store);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().category == Category::corruption);
}

TEST_CASE("same_remote: the password and read-only set aside, everything else counts") {
  auto u = [](const char* t) { return *parse_remote_url(t); };
  CHECK(same_remote(u("redis://a:pw@h:1/0"), u("redis://a@h:1/0")));
  CHECK(same_remote(u("redis://a:pw@h:1/0"), u("redis://a:***@h:1/0?read-only")));
  CHECK_FALSE(same_remote(u("redis://h:1/0"), u("redis://h:1/1")));
  CHECK_FALSE(same_remote(u("redis://h/0?prefix=a"), u("redis://h/0?prefix=b")));
  CHECK_FALSE(same_remote(u("http://h/a/"), u("http://h/b/")));
}
