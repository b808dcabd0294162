#include "kcache/store/store.hpp"

#include <lmdb.h>

#include <cstdlib>

namespace kcache::store {
namespace {

// An empty variable is treated as unset: `KCACHE_STORE= kcache ...` should
// not silently mean "the current directory".
const char* env_value(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

}  // namespace

std::string lmdb_version() {
  int major = 0, minor = 0, patch = 0;
  mdb_version(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::filesystem::path default_store_dir() {
  if (const char* dir = env_value("KCACHE_STORE")) return dir;
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and to be ignored.
  if (const char* xdg = env_value("XDG_CACHE_HOME"); xdg && std::filesystem::path(xdg).is_absolute())
    return std::filesystem::path(xdg) / "kcache";
  if (const char* home = env_value("HOME")) return std::filesystem::path(home) / ".cache" / "kcache";
  return ".kcache";
}

}  // namespace kcache::store
