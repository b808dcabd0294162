#include "kcache/core/entry.hpp"
#include "kcache/core/namespace.hpp"

#include "test_support.hpp"

using namespace kcache;

namespace {

Entry sample() {
  Entry e;
  e.kernel = "k[T=f]";
  e.key = {util::hash_string("id"), util::hash_string("ir")};
  e.id_fields = {{"name", "k[T=f]"}};
  e.ir_fields = {{"glslang", "12.0.0"}};
  e.inputs = {{"k.comp", util::hash_string("src")}};
  e.payload = {3, 2, 35, 7, 0, 0, 1, 0};
  seal_payload(e);
  e.created = 1700000000;
  e.origin_detail = "test";
  return e;
}

}  // namespace

TEST_CASE("entry records round-trip") {
  auto bytes = encode_entry(sample());
  auto back = decode_entry(bytes);
  REQUIRE(back);
  CHECK(*back == sample());
}

TEST_CASE("every truncation and every flipped bit is refused as corruption") {
  auto bytes = encode_entry(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto r = decode_entry(std::span(bytes).first(n));
    REQUIRE_FALSE(r);
  }
  for (std::size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    auto copy = bytes;
    copy[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    auto r = decode_entry(copy);
    CAPTURE(bit);
    REQUIRE_FALSE(r);
    CHECK((r.error().category == Category::corruption || r.error().category == Category::version_mismatch));
  }
}

TEST_CASE("fingerprint diffs name each field") {
  FingerprintRecord a{{{"vendorID", "0x10de"}, {"driverVersion", "580.159"}}};
  FingerprintRecord b{{{"vendorID", "0x10de"}, {"driverVersion", "575.64"}}};
  auto d = diff_fingerprints(a, b);
  REQUIRE(d.size() == 1);
  CHECK(d[0].field == "driverVersion");
  CHECK(vulkan_namespace(a).fingerprint != vulkan_namespace(b).fingerprint);
  CHECK(vulkan_namespace(a).fingerprint.size() == 16);
  CHECK(spirv_namespace("vulkan1.2").name() == "spirv/vulkan1.2");
}
