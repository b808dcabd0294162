// bundle::write_key_pair: keygen's files, replaced only whole.
#include "kcache/bundle/key_files.hpp"

#include "test_support.hpp"

#include <sys/stat.h>

#include <filesystem>

using namespace kcache;

namespace {

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

std::size_t files_in(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("write_key_pair writes a loadable pair, refuses to overwrite, and replaces only whole") {
  test::TempDir dir;
  const auto name = dir.path() / "ci";
  auto first = bundle::generate_keypair();
  REQUIRE(first);
  REQUIRE(bundle::write_key_pair(name, *first, false));
  CHECK(mode_of(dir.path() / "ci.key") == 0600);
  CHECK(mode_of(dir.path() / "ci.pub") == 0644);
  auto secret = bundle::load_secret_key(dir.path() / "ci.key");
  REQUIRE(secret);
  CHECK(secret->public_key == first->public_key);
  auto pub = bundle::load_public_keys({dir.path() / "ci.pub"});
  REQUIRE(pub);
  CHECK(pub->at(0) == first->public_key);

  auto second = bundle::generate_keypair();
  REQUIRE(second);
  auto refused = bundle::write_key_pair(name, *second, false);
  REQUIRE(!refused);
  CHECK(refused.error().category == Category::invalid_argument);
  CHECK(bundle::load_secret_key(dir.path() / "ci.key")->public_key == first->public_key);

  // A pair that cannot be written whole (its .pub is a folder) leaves the old
  // key as it was.
  std::filesystem::create_directory(dir.path() / "odd.pub");
  REQUIRE(bundle::write_key_pair(dir.path() / "odd", *first, false).error().category == Category::invalid_argument);
  REQUIRE(!bundle::write_key_pair(dir.path() / "odd", *first, true));
  CHECK(!std::filesystem::exists(dir.path() / "odd.key"));

  REQUIRE(bundle::write_key_pair(name, *second, true));
  CHECK(bundle::load_secret_key(dir.path() / "ci.key")->public_key == second->public_key);
  CHECK(bundle::load_public_keys({dir.path() / "ci.pub"})->at(0) == second->public_key);
  CHECK(mode_of(dir.path() / "ci.key") == 0600);
  CHECK(files_in(dir.path()) == 3);  // ci.key, ci.pub, odd.pub: no temporary left behind
}
