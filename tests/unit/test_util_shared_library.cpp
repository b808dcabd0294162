// util::SharedLibrary: the one dlopen/dlsym wrapper NVRTC, libcuda and
// libcurl are loaded through.
#include "kcache/util/shared_library.hpp"

#include "test_support.hpp"

#include <cstddef>

namespace kcache::util {

TEST_CASE("a library that cannot be loaded is not_found with the loader's reason") {
  auto lib = SharedLibrary::open("/nonexistent/libkcache-test-missing.so");
  REQUIRE_FALSE(lib);
  CHECK(lib.error().category == Category::not_found);
  CHECK(lib.error().message.find("libkcache-test-missing.so") != std::string::npos);
}

TEST_CASE("resolve finds functions and lists every missing one") {
  // libc is always there; its strlen is a function we can call through the pointer.
  auto lib = SharedLibrary::open("libc.so.6");
  REQUIRE(lib);
  CHECK(lib->name() == "libc.so.6");
  std::size_t (*strlen_fn)(const char*) = nullptr;
  int (*absent_a)() = nullptr;
  int (*absent_b)() = nullptr;
  std::string missing;
  lib->resolve("strlen", strlen_fn, missing);
  CHECK(missing.empty());
  const bool found = strlen_fn != nullptr;
  REQUIRE(found);
  CHECK(strlen_fn("kcache") == 6);
  lib->resolve("kcache_no_such_symbol_a", absent_a, missing);
  lib->resolve("kcache_no_such_symbol_b", absent_b, missing);
  const bool both_null = absent_a == nullptr && absent_b == nullptr;
  CHECK(both_null);
  CHECK(missing == "kcache_no_such_symbol_a, kcache_no_such_symbol_b");

  // A moved-from library resolves nothing; the moved-to one still works.
  SharedLibrary moved = std::move(*lib);
  std::size_t (*again)(const char*) = nullptr;
  std::string none;
  moved.resolve("strlen", again, none);
  const bool moved_ok = again != nullptr;
  CHECK(moved_ok);
}

}  // namespace kcache::util
