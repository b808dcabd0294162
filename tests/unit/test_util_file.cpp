// util/file.hpp's ScratchDir: a folder of its own, removed with what it holds.
#include "kcache/util/file.hpp"

#include "test_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>

TEST_CASE("ScratchDir: a new folder under its parent, removed with everything in it") {
  kcache::test::TempDir t;
  std::filesystem::path made;
  {
    auto dir = kcache::util::ScratchDir::make(t.path(), "kcache-test");
    REQUIRE(dir);
    made = dir->path();
    CHECK(made.parent_path() == t.path());
    CHECK(made.filename().string().starts_with("kcache-test-"));
    std::filesystem::create_directories(made / "a/b");
    t.write(std::filesystem::relative(made / "a/b/c", t.path()).string(), "x");
  }
  CHECK_FALSE(std::filesystem::exists(made));
  auto none = kcache::util::ScratchDir::make(t.path() / "missing", "x");
  REQUIRE_FALSE(none);
  CHECK(none.error().category == kcache::Category::not_found);
}
