// default_store_dir(): the documented lookup order of environment variables.
#include "kcache/store/store.hpp"

#include "test_support.hpp"

#include <cstdlib>
#include <optional>

namespace kcache::store {
namespace {

/// Sets (or unsets, for nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (m_old) ::setenv(m_name, m_old->c_str(), 1);
    else ::unsetenv(m_name);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

}  // namespace

TEST_CASE("default_store_dir: KCACHE_STORE, then XDG_CACHE_HOME, then HOME, then ./.kcache") {
  ScopedEnv store("KCACHE_STORE", "/srv/kcache");
  ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
  ScopedEnv home("HOME", "/home/ci");
  CHECK(default_store_dir() == "/srv/kcache");
  {
    ScopedEnv unset("KCACHE_STORE", std::nullopt);
    CHECK(default_store_dir() == "/xdg/kcache");
    {
      ScopedEnv relative("XDG_CACHE_HOME", "relative/cache");  // invalid per the XDG spec
      CHECK(default_store_dir() == "/home/ci/.cache/kcache");
    }
    {
      ScopedEnv empty_xdg("XDG_CACHE_HOME", "");
      CHECK(default_store_dir() == "/home/ci/.cache/kcache");
      ScopedEnv no_home("HOME", std::nullopt);
      CHECK(default_store_dir() == ".kcache");
    }
  }
  {
    ScopedEnv empty("KCACHE_STORE", "");  // empty means unset, not "here"
    CHECK(default_store_dir() == "/xdg/kcache");
  }
}

}  // namespace kcache::store
