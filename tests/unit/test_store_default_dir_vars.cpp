// default_store_dir(vars): the lookup order, from values the caller read.
#include "kcache/store/default_dir.hpp"

#include <doctest/doctest.h>

using kcache::store::default_store_dir;
using kcache::store::StoreDirVariables;

TEST_CASE("default_store_dir(vars): KCACHE_STORE, then an absolute XDG_CACHE_HOME, then HOME, then ./.kcache") {
  CHECK(default_store_dir(StoreDirVariables{"/srv/kcache", "/xdg", "/home/ci"}) == "/srv/kcache");
  CHECK(default_store_dir(StoreDirVariables{"", "/xdg", "/home/ci"}) == "/xdg/kcache");
  CHECK(default_store_dir(StoreDirVariables{"", "relative/xdg", "/home/ci"}) == "/home/ci/.cache/kcache");
  CHECK(default_store_dir(StoreDirVariables{"", "", "/home/ci"}) == "/home/ci/.cache/kcache");
  CHECK(default_store_dir(StoreDirVariables{}) == ".kcache");
}
