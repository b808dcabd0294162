// transfer::discard_store_if_unfilled: a store an import created and wrote
// nothing into is removed again; a store that existed, or that the import
// filled, stays.
#include "kcache/store/store.hpp"
#include "kcache/transfer/transfer.hpp"

#include "test_support.hpp"

using namespace kcache;

namespace {

std::unique_ptr<store::Store> open_store(const std::filesystem::path& dir) {
  auto s = store::open_lmdb_store(dir);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return std::move(*s);
}

}  // namespace

TEST_CASE("discard_store_if_unfilled: only a store the import created and left empty goes") {
  test::TempDir dir;
  const auto path = dir.path() / "store";
  const Result<transfer::ImportResult> refused = fail(Category::corruption, "bundle refused");
  transfer::ImportResult wrote;
  wrote.written = true;

  auto s = open_store(path);
  REQUIRE(transfer::discard_store_if_unfilled(s, path, true, refused).has_value());
  CHECK(!s);
  CHECK(!std::filesystem::exists(path));

  s = open_store(path);
  REQUIRE(transfer::discard_store_if_unfilled(s, path, false, refused).has_value());
  CHECK(s);  // it existed before: not the import's to remove
  s.reset();
  CHECK(std::filesystem::exists(path / "data.mdb"));

  std::filesystem::remove_all(path);
  s = open_store(path);
  REQUIRE(transfer::discard_store_if_unfilled(s, path, true, Result<transfer::ImportResult>(wrote)).has_value());
  CHECK(s);
  CHECK(std::filesystem::exists(path / "data.mdb"));
}
