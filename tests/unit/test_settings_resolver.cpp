// The one settings resolver (lib/kcache/settings/resolver.hpp): every level
// (flag, environment, store, user, default) with its origin, and what a
// store's file may not do: name code to run (nvrtc, the launcher's real
// glslc / glslangValidator), choose the store folder, give numbers past its
// bounds (jobs = 4096), or replace or widen the user's trust.
#include "kcache/settings/resolver.hpp"

#include "kcache/store/store.hpp"
#include "kcache/util/text.hpp"
#include "test_support.hpp"

using namespace kcache;
using namespace kcache::settings;

namespace {

bool mentions(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

/// A user folder (XDG_CONFIG_HOME) and a store folder with settings files.
struct Folders {
  test::TempDir temp;
  std::filesystem::path store = temp.path() / "store";
  std::filesystem::path config = temp.path() / "config";
  std::filesystem::path user_file = config / "kcache" / "config";
  std::filesystem::path store_file = store / "config";

  void store_says(const std::string& lines) { temp.write("store/config", "kcache-config 1\n" + lines); }
  void user_says(const std::string& lines) { temp.write("config/kcache/config", "kcache-config 1\n" + lines); }
  Environment env(std::map<std::string, std::string, std::less<>> more = {}) const {
    Environment e;
    e.values = std::move(more);
    e.values["XDG_CONFIG_HOME"] = config.string();
    e.values["HOME"] = (temp.path() / "home").string();
    return e;
  }
};

Resolved resolved(Resolver& r, std::string_view key, const std::filesystem::path& store, std::string_view flag = "") {
  auto v = r.resolve(key, flag, store);
  REQUIRE_MESSAGE(v, (v ? "" : v.error().message));
  return *v;
}

}  // namespace

TEST_CASE("every level, highest first, each with its origin") {
  Folders f;
  f.store_says("# a comment\njobs = 3\n");
  f.user_says("jobs = 4\nmax_size = 1G\n");
  Resolver r(f.env({{"KCACHE_JOBS", "2"}}));
  auto v = resolved(r, "jobs", f.store, "1");
  CHECK(v.value == "1");
  CHECK(v.source == Source::flag);
  v = resolved(r, "jobs", f.store);
  CHECK(v.value == "2");
  CHECK(v.source == Source::env);
  CHECK(v.origin == "KCACHE_JOBS");

  Resolver no_env(f.env());
  v = resolved(no_env, "jobs", f.store);
  CHECK(v.value == "3");
  CHECK(v.source == Source::store);
  CHECK(v.origin == f.store_file.string() + ":3");
  v = resolved(no_env, "jobs", "");  // no store: the store level is skipped
  CHECK(v.value == "4");
  CHECK(v.source == Source::user);
  CHECK(v.origin == f.user_file.string() + ":2");
  v = resolved(no_env, "namespace", f.store);
  CHECK(v.source == Source::none);
  CHECK(v.value.empty());
  CHECK(v.refused.empty());

  // A malformed variable is an error naming it; an empty one is unset.
  Resolver bad(f.env({{"KCACHE_JOBS", "lots"}}));
  auto e = bad.resolve("jobs", "", f.store);
  REQUIRE_FALSE(e);
  CHECK(e.error().category == Category::invalid_argument);
  CHECK(mentions(e.error().message, "KCACHE_JOBS='lots' is not valid"));
  CHECK(capture_environment([](const char* name) -> const char* {
          return std::string_view(name) == "KCACHE_JOBS" ? "" : std::string_view(name) == "PATH" ? "/bin" : nullptr;
        }).values.empty());
}

TEST_CASE("a store never names code to run: nvrtc, glslc, glslang_validator") {
  Folders f;
  f.store_says("nvrtc = /tmp/evil.so\nglslc = /tmp/evil-glslc\nglslang_validator = /tmp/evil-gv\n");
  for (std::string_view key : {"nvrtc", "glslc", "glslang_validator"}) {
    CAPTURE(key);
    Resolver r(f.env());
    auto v = resolved(r, key, f.store);
    CHECK(v.source == Source::none);  // not the store's
    CHECK(v.value.empty());
    REQUIRE(v.refused.size() == 1);
    CHECK(v.refused[0].file == f.store_file.string());
    CHECK(v.refused[0].value.starts_with("/tmp/evil"));
    CHECK(mentions(v.refused[0].text(), f.store_file.string() + ":"));
    CHECK(mentions(v.refused[0].why, "a store may not name code to run"));
    CHECK(mentions(v.refused[0].why, "`kcache config set --user " + std::string(key)));
    CHECK_FALSE(store_refusal(key, "/x").empty());
  }
  Resolver r(f.env());
  CHECK(resolved(r, "nvrtc", f.store).refused[0].line == 2);
  CHECK(resolved(r, "glslc", f.store).refused[0].line == 3);

  // The user's own file, the environment and the command line may.
  f.user_says("nvrtc = /opt/cuda/libnvrtc.so\nglslc = /opt/vulkan/glslc\n");
  Resolver user(f.env());
  auto v = resolved(user, "nvrtc", f.store);
  CHECK(v.value == "/opt/cuda/libnvrtc.so");
  CHECK(v.source == Source::user);
  CHECK(v.refused.size() == 1);  // and the store's is still reported
  CHECK(resolved(user, "glslc", f.store).value == "/opt/vulkan/glslc");
  Resolver env(f.env({{"KCACHE_NVRTC", "/env/libnvrtc.so"}, {"KCACHE_GLSLANG_VALIDATOR", "/env/gv"}}));
  CHECK(resolved(env, "nvrtc", f.store).source == Source::env);
  CHECK(resolved(env, "glslang_validator", f.store).value == "/env/gv");
  CHECK(resolved(env, "nvrtc", f.store, "/flag/libnvrtc.so").value == "/flag/libnvrtc.so");
}

TEST_CASE("a store never chooses the store folder") {
  Folders f;
  f.store_says("store = /elsewhere\n");
  Resolver r(f.env({{"XDG_CACHE_HOME", "/xdg"}}));
  // store_dir consults no store (there is none yet), and explain reports the line.
  CHECK(r.store_dir("").value() == "/xdg/kcache");
  CHECK(r.default_value("store") == "/xdg/kcache");
  auto v = r.explain("store", f.store);
  REQUIRE(v);
  CHECK(v->source == Source::none);
  REQUIRE(v->refused.size() == 1);
  CHECK(mentions(v->refused[0].why, "a store cannot choose where the store is"));
  // flag > KCACHE_STORE > the user's `store` > XDG_CACHE_HOME > HOME.
  f.user_says("store = /users/store\n");
  Resolver user(f.env({{"XDG_CACHE_HOME", "/xdg"}}));
  CHECK(user.store_dir("").value() == "/users/store");
  CHECK(user.store_dir("/flag").value() == "/flag");
  Resolver env(f.env({{"KCACHE_STORE", "/env/store"}}));
  CHECK(env.store_dir("").value() == "/env/store");
  Resolver home(Environment{{{"HOME", "/home/u"}}});
  CHECK(home.store_dir("").value() == "/home/u/.cache/kcache");
}

TEST_CASE("a store's numbers are bounded: jobs = 4096 is refused, the next level applies") {
  Folders f;
  f.store_says("jobs = 4096\nmap_size = 8T\npipeline_timeout = 86400\nmax_size = 1T\n");
  f.user_says("jobs = 6\n");
  Resolver r(f.env());
  auto v = resolved(r, "jobs", f.store);
  CHECK(v.value == "6");
  CHECK(v.source == Source::user);
  REQUIRE(v.refused.size() == 1);
  CHECK(v.refused[0].line == 2);
  CHECK(mentions(v.refused[0].why, "a store may set at most 64"));
  v = resolved(r, "map_size", f.store);
  CHECK(v.source == Source::none);
  REQUIRE(v.refused.size() == 1);
  CHECK(mentions(v.refused[0].why, "at most 4"));
  CHECK(resolved(r, "pipeline_timeout", f.store).source == Source::none);
  CHECK(resolved(r, "max_size", f.store).source == Source::store);  // it only shrinks its own store
  // Within the bound a store's value applies; the user's and the
  // environment's are bounded only by the key's own check.
  f.store_says("jobs = 64\npipeline_timeout = 3600\nmap_size = 4T\n");
  Resolver within(f.env());
  CHECK(resolved(within, "jobs", f.store).value == "64");
  CHECK(resolved(within, "pipeline_timeout", f.store).source == Source::store);
  CHECK(resolved(within, "map_size", f.store).source == Source::store);
  CHECK(store_refusal("jobs", "64").empty());
  CHECK_FALSE(store_refusal("jobs", "65").empty());
  f.user_says("jobs = 4096\n");
  f.store_says("max_size = 1G\n");
  Resolver user(f.env());
  CHECK(resolved(user, "jobs", f.store).value == "4096");
}

TEST_CASE("a store may narrow trust to keys the user trusts, never replace or widen it") {
  Folders f;
  // The user trusts no key: a store's trust would choose one, so it does not apply.
  f.store_says("trust = theirs.pub\n");
  {
    Resolver r(f.env());
    auto v = resolved(r, "trust", f.store);
    CHECK(v.source == Source::none);
    REQUIRE(v.refused.size() == 1);
    CHECK(mentions(v.refused[0].why, "the user trusts no key"));
  }
  f.user_says("trust = /keys/ci.pub /keys/release.pub\n");
  {
    Resolver r(f.env());
    auto v = resolved(r, "trust", f.store);  // replacing: the user's applies
    CHECK(v.value == "/keys/ci.pub /keys/release.pub");
    CHECK(v.source == Source::user);
    REQUIRE(v.refused.size() == 1);
    CHECK(mentions(v.refused[0].why, "'theirs.pub' is not one of them"));
  }
  f.store_says("trust = /keys/ci.pub theirs.pub\n");  // widening
  {
    Resolver r(f.env());
    CHECK(resolved(r, "trust", f.store).source == Source::user);
  }
  f.store_says("trust = /keys/release.pub\n");  // narrowing
  {
    Resolver r(f.env());
    auto v = resolved(r, "trust", f.store);
    CHECK(v.value == "/keys/release.pub");
    CHECK(v.source == Source::store);
    CHECK(v.refused.empty());
    // The command line replaces both.
    CHECK(resolved(r, "trust", f.store, "mine.pub").value == "mine.pub");
  }
}

TEST_CASE("a store's remotes come from its remotes file; other misplaced lines are reported") {
  Folders f;
  f.store_says("remote = redis://u:hunter2@h/0\nstats_zeroed = 17\n");
  f.user_says("remote = file:///shared\nstats_zeroed = 99\n");
  Resolver none(f.env());
  auto v = resolved(none, "remote", f.store);
  CHECK(v.value == "file:///shared");  // the user's: STORE/config's remote line is not a store's remote
  REQUIRE(v.refused.size() == 1);
  CHECK(mentions(v.refused[0].why, "kept in its file 'remotes'"));
  CHECK_FALSE(mentions(v.refused[0].text(), "hunter2"));
  Resolver r(f.env(), [](const std::filesystem::path& dir) -> Result<StoreRemotes> {
    return StoreRemotes{"redis://cache/0", dir / "remotes"};
  });
  v = resolved(r, "remote", f.store);
  CHECK(v.value == "redis://cache/0");
  CHECK(v.source == Source::store);
  CHECK(v.origin == (f.store / "remotes").string());
  // stats_zeroed is the store's own: a user's is reported, not used.
  auto zeroed = r.explain("stats_zeroed", f.store);
  REQUIRE(zeroed);
  CHECK(zeroed->value == "17");
  REQUIRE(zeroed->refused.size() == 1);
  CHECK(zeroed->refused[0].level == Source::user);
}

TEST_CASE("unreachable and unreadable settings files; damaged ones name file and line") {
  Folders f;
  f.store_says("jobs = lots\n");
  Resolver r(f.env());
  auto e = r.resolve("jobs", "", f.store);
  REQUIRE_FALSE(e);
  CHECK(e.error().category == Category::corruption);
  CHECK(mentions(e.error().message, f.store_file.string() + ":2"));
  // A level that sets the key spares reading the levels below it.
  CHECK(resolved(r, "jobs", f.store, "2").value == "2");
  // A component of the path that is a file: no settings there, no error.
  f.temp.write("file", "x");
  Resolver notdir(Environment{{{"XDG_CONFIG_HOME", (f.temp.path() / "file").string()}}});
  CHECK(resolved(notdir, "jobs", "").source == Source::none);
  CHECK(notdir.take_warnings().empty());
  // (EACCES needs another user: tests/cli/config_trust_levels.sh runs as nobody.)
}

TEST_CASE("defaults `config get` prints") {
  Resolver r(Environment{{{"HOME", "/home/u"}}});
  CHECK(r.default_value("store") == "/home/u/.cache/kcache");
  CHECK(r.default_value("map_size") == "64G");
  CHECK(r.default_value("jobs").empty());
  CHECK(r.user_file() == std::filesystem::path("/home/u/.config/kcache/config"));
  CHECK_FALSE(Resolver(Environment{}).user_file());
  CHECK(util::parse_size(r.default_value("map_size")).value() == store::OpenOptions{}.map_size);
}
