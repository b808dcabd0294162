// Where the store lives when none is named, from values the caller read (the
// CLI reads the environment; the library does not need to).
// Thread-safety: reentrant.
#pragma once

#include <filesystem>
#include <string>

namespace kcache::store {

/// The environment variables default_store_dir consults, as the caller
/// read them; empty means unset (an empty variable counts as unset).
struct StoreDirVariables {
  std::string kcache_store;    ///< $KCACHE_STORE
  std::string xdg_cache_home;  ///< $XDG_CACHE_HOME
  std::string home;            ///< $HOME
};

/// kcache_store, else xdg_cache_home/kcache, else home/.cache/kcache, else
/// ./.kcache. A relative xdg_cache_home is ignored (the XDG spec calls it
/// invalid). Reads nothing itself.
std::filesystem::path default_store_dir(const StoreDirVariables& vars);

}  // namespace kcache::store
