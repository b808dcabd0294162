// util::hash_bytes: the AVX2 build of XXH3-128 (chosen at run time) gives the
// library's value for every length and alignment, so a store or bundle
// written on one CPU reads the same on another.
#include "kcache/util/hash.hpp"

#include "test_support.hpp"

#include <cstdint>
#include <vector>

namespace kcache::util {

TEST_CASE("hash_bytes equals libxxhash's XXH3-128 for every length up to 4 KiB, at ten alignments") {
  // XXH3 takes different code paths by length (0, 1-3, 4-8, 9-16, 17-128,
  // 129-240, then stripes of 64 bytes in blocks of 1 KiB): every length up
  // to 4 KiB crosses each of them, and the 40 KB case several blocks.
  std::vector<std::uint8_t> data(40'000 + 64);
  std::uint32_t x = 0x9e3779b9u;
  for (auto& b : data) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(x >> 24);
  }
  std::size_t mismatches = 0;
  for (std::size_t offset = 0; offset < 64; offset += 7) {
    for (std::size_t n = 0; n <= 4096; ++n) {
      std::span<const std::uint8_t> s(data.data() + offset, n);
      if (hash_bytes(s) != hash_bytes_baseline(s)) ++mismatches;
    }
    std::span<const std::uint8_t> big(data.data() + offset, 40'000);
    if (hash_bytes(big) != hash_bytes_baseline(big)) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("hash_bytes keeps XXH3-128's published value") {
  // XXH3_128bits of the empty input, from xxHash's own test vectors
  // (canonical, big-endian): stores written before the AVX2 path keep their keys.
  CHECK(hash_bytes({}).hex() == "99aa06d3014798d86001c324468d497f");
  CHECK(hash_string("") == hash_bytes({}));
}

}  // namespace kcache::util
