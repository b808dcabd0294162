// Helpers for the tests that hold the fuzz seed corpora (tests/fuzz/corpus/)
// to what their names say: every seed the generator (tests/fuzz/make_seeds.cpp)
// or a person wrote is there, is not empty, and the parser its target feeds
// accepts or refuses it as named. A seed that no longer means what its name
// says starts the fuzzer on the wrong path, so these fail when one drifts.
#pragma once

#include "test_support.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kcache::test {

/// tests/fuzz/corpus/<target>/ in the source tree.
inline std::filesystem::path seed_dir(const std::string& target) {
  return std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/fuzz/corpus" / target;
}

/// Every seed of `target` by file name, with its bytes. Fails the test when
/// the folder is missing, when a seed named in `expected` is missing or empty,
/// or when the folder holds a seed `expected` does not name (so a new seed
/// must be given an expected outcome here).
inline std::map<std::string, std::vector<std::uint8_t>> read_seeds(const std::string& target,
                                                                   const std::set<std::string>& expected) {
  const auto dir = seed_dir(target);
  REQUIRE_MESSAGE(std::filesystem::is_directory(dir), "seed corpus ", dir.string(), " is missing");
  std::map<std::string, std::vector<std::uint8_t>> seeds;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    const auto name = f.path().filename().string();
    CHECK_MESSAGE(f.is_regular_file(), dir.string(), ": ", name, " is not a regular file");
    CHECK_MESSAGE(expected.count(name) == 1, dir.string(), ": seed ", name,
                  " has no expected outcome in the test; add it there");
    std::ifstream in(f.path(), std::ios::binary);
    seeds[name].assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const auto& name : expected) {
    CAPTURE(name);
    auto it = seeds.find(name);
    REQUIRE_MESSAGE(it != seeds.end(), dir.string(), ": seed ", name, " is missing");
    REQUIRE_MESSAGE(!it->second.empty(), dir.string(), ": seed ", name, " is empty");
  }
  return seeds;
}

}  // namespace kcache::test
