#include "kcache/store/default_dir.hpp"

#include "kcache/store/store.hpp"

#include <lmdb.h>

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

}  // namespace kcache::store
