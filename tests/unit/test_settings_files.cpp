// Settings files and their precedence (lib/kcache/settings/settings.hpp):
// the version-1 golden file, round trips, every way a damaged file is
// refused naming the file and line. The levels are test_settings_resolver.cpp's.
#include "kcache/settings/resolver.hpp"
#include "kcache/settings/settings.hpp"

#include "kcache/util/file.hpp"
#include "test_support.hpp"

#include <sys/stat.h>

using namespace kcache;
using namespace kcache::settings;

namespace {

std::string refused(std::string_view text, Category want = Category::corruption) {
  auto r = parse_settings(text, "STORE/config");
  REQUIRE_FALSE(r);
  CHECK(r.error().category == want);
  return r.error().message;
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

// The golden file of version 1: what `kcache config set` writes, with a
// comment, an empty line and the spaces a person may add. Never regenerated.
TEST_CASE("golden: settings version 1 are read in order") {
  auto path = std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/settings/config-v1.txt";
  auto text = util::read_file(path);
  REQUIRE(text);
  auto r = parse_settings(*text, path.string());
  REQUIRE(r);
  REQUIRE(r->size() == 8);
  CHECK((*r)[0] == Setting{"max_size", "10G"});
  CHECK((*r)[0].line == 3);
  CHECK((*r)[1] == Setting{"jobs", "8"});
  CHECK((*r)[2] == Setting{"trust", "/etc/kcache/ci.pub"});
  CHECK(find_setting(*r, "pipeline_timeout") == "60.5");
  CHECK(find_setting(*r, "stats_zeroed") == "1764892800");
  // Written again, the settings come back as they were (comments are not kept).
  auto again = parse_settings(format_settings(*r), "x");
  REQUIRE(again);
  CHECK(*again == *r);
  // Its nvrtc line is read (a store's file may hold one, written by an older
  // kcache); the resolver does not honour it (test_settings_resolver.cpp).
  CHECK(find_setting(*r, "nvrtc") == "/usr/local/cuda/lib64/libnvrtc.so.12");
}

TEST_CASE("a damaged settings file names the file and line and what to do") {
  auto m = refused("");
  CHECK(has(m, "STORE/config:1"));
  m = refused("kcache-configs 1\n");
  CHECK(has(m, "STORE/config:1: the first line is"));
  CHECK(has(m, "kcache config set"));
  refused("kcache-config x\n");
  m = refused("kcache-config 2\njobs = 1\n", Category::version_mismatch);
  CHECK(has(m, "version 2 is newer"));
  CHECK(has(refused("kcache-config 1\njobs 8\n"), "STORE/config:2: 'jobs 8' is not KEY = VALUE"));
  CHECK(has(refused("kcache-config 1\n\njobz = 8\n"),
            "STORE/config:3: 'jobz' is not a kcache setting — did you mean 'jobs'?"));
  CHECK(has(refused("kcache-config 1\njobs = 0\n"), "not a number of threads from 1 to 4096"));
  CHECK(has(refused("kcache-config 1\njobs = 99999\n"), "STORE/config:2"));
  CHECK(has(refused("kcache-config 1\nmax_size = 5X\n"), "is not a size"));
  CHECK(has(refused("kcache-config 1\njobs = 2\njobs = 3\n"), "STORE/config:3: 'jobs' is set twice"));
  CHECK(has(refused("kcache-config 1\njobs = 2\x01\n"), "a control byte 0x01"));
  // A bad remote URL's password is not repeated in the message.
  m = refused("kcache-config 1\nremote = ftp://u:hunter2@h/\n");
  CHECK_FALSE(has(m, "hunter2"));
  CHECK(has(refused(std::string("kcache-config 1\n") + std::string(k_max_settings_bytes, '#')), "over"));
}

TEST_CASE("values: sizes by the one parser, remotes by the URL parser") {
  CHECK(check_setting("max_size", "500M"));
  CHECK(check_setting("max_size", "1.5G"));
  CHECK_FALSE(check_setting("max_size", "0"));
  CHECK_FALSE(check_setting("max_size", " 5G"));
  CHECK(check_setting("map_size", "8M"));
  CHECK_FALSE(check_setting("map_size", "2048T"));
  CHECK(check_setting("remote", "redis://h/0 http://c/kc/?read-only"));
  CHECK_FALSE(check_setting("remote", "redis://h/0 gopher://x"));
  CHECK_FALSE(check_setting("namespace", "spirv/vulkan1.2 spirv/vulkan1.3"));
  CHECK_FALSE(check_setting("pipeline_timeout", "-1"));
  auto unknown = check_setting("max-size", "1G");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().category == Category::not_found);
  CHECK(has(unknown.error().message, "did you mean 'max_size'?"));
}

TEST_CASE("files: written mode 0600, removed when empty, a link refused; the user's path by XDG rules") {
  test::TempDir temp;
  const auto& dir = temp.path();
  auto path = dir / "sub" / "config";
  Settings s;
  set_setting(s, "max_size", "1G");
  set_setting(s, "jobs", "4");
  set_setting(s, "max_size", "2G");  // in place
  REQUIRE(write_settings(path, s));
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto back = read_settings(path);
  REQUIRE(back);
  CHECK(*back == Settings{{"max_size", "2G"}, {"jobs", "4"}});
  CHECK(unset_setting(s, "max_size"));
  CHECK_FALSE(unset_setting(s, "max_size"));
  CHECK(read_settings(dir / "none")->empty());
  std::filesystem::create_symlink(path, dir / "link");
  auto link = read_settings(dir / "link");
  REQUIRE_FALSE(link);
  CHECK(link.error().category == Category::corruption);
  REQUIRE(write_settings(path, {}));
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(user_settings_path("/x/cfg", "/home/u") == std::filesystem::path("/x/cfg/kcache/config"));
  CHECK(user_settings_path("relative", "/home/u") == std::filesystem::path("/home/u/.config/kcache/config"));
  CHECK_FALSE(user_settings_path("", ""));
}

TEST_CASE("launcher_validate: POLICY and PATTERN=POLICY words; the first matching pattern, else the bare policy") {
  using definition::ValidatePolicy;
  auto rules = parse_validate_rules("strict out/coopmat_*.spv=known gen/*=off");
  REQUIRE_MESSAGE(rules, rules.error().message);
  REQUIRE(rules->size() == 3);
  CHECK(validate_policy_for(*rules, "out/coopmat_1.spv") == ValidatePolicy::known);
  CHECK(validate_policy_for(*rules, "gen/deep/a.spv") == ValidatePolicy::off);  // '*' crosses '/'
  CHECK(validate_policy_for(*rules, "out/plain.spv") == ValidatePolicy::strict);
  auto bare = parse_validate_rules("known");
  REQUIRE(bare);
  CHECK(validate_policy_for(*bare, "anything.spv") == ValidatePolicy::known);
  CHECK(validate_policy_for({}, "anything.spv") == ValidatePolicy::strict);
  for (const char* bad : {"lenient", "a=lenient", "=known", "known off", "a=b=c"}) {
    CAPTURE(bad);
    auto r = parse_validate_rules(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().category == Category::invalid_argument);
  }
  CHECK(check_setting("launcher_validate", "strict *coopmat*=known"));
  CHECK_FALSE(check_setting("launcher_validate", "sometimes"));
  // A store may not weaken validation: config set refuses it, the resolver passes it over.
  CHECK_FALSE(store_refusal("launcher_validate", "known").empty());
  std::string many;
  for (std::size_t i = 0; i <= k_max_validate_rules; ++i) many += "p" + std::to_string(i) + "=known ";
  CHECK_FALSE(parse_validate_rules(many));
}
