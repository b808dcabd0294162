#include "kcache/store/default_dir.hpp"

#include "kcache/store/store.hpp"

#include <lmdb.h>

#include <cstdlib>

namespace kcache::store {

std::string lmdb_version() {
  int major = 0, minor = 0, patch = 0;
  mdb_version(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::filesystem::path default_store_dir(const StoreDirVariables& vars) {
  if (!vars.kcache_store.empty()) return vars.kcache_store;
  if (!vars.xdg_cache_home.empty() && std::filesystem::path(vars.xdg_cache_home).is_absolute())
    return std::filesystem::path(vars.xdg_cache_home) / "kcache";
  if (!vars.home.empty()) return std::filesystem::path(vars.home) / ".cache" / "kcache";
  return ".kcache";
}

// The one read of the environment left in the library: libkcache's C ABI
// promises kcache_store_open(NULL) the CLI's default store (kcache.h), and
// the runtime calls this. The CLI reads the variables itself and calls the
// overload above.
std::filesystem::path default_store_dir() {
  auto var = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value ? value : "");
  };
  return default_store_dir(StoreDirVariables{var("KCACHE_STORE"), var("XDG_CACHE_HOME"), var("HOME")});
}

}  // namespace kcache::store
