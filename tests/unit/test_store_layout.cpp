// The store layout's own records and keys (layout_internal.hpp): namespace
// records round-trip and refuse damage; keys keep to LMDB's limit.
#include "kcache/store/layout_internal.hpp"

#include "test_support.hpp"

namespace kcache::store::internal {

TEST_CASE("store layout: namespace records round-trip with the full fingerprint record") {
  Namespace ns = vulkan_namespace(FingerprintRecord{
      {{"vendorID", "0x10de"}, {"driverVersion", "580.159"}, {"driverInfo", ""}, {"pointerSize", "8"}}});
  auto bytes = encode_namespace_record(ns);
  auto decoded = decode_namespace_record(ns.name(), bytes);
  REQUIRE_MESSAGE(decoded.has_value(), decoded.error().message);
  CHECK(*decoded == ns);

  Namespace spirv = spirv_namespace("vulkan1.3");
  CHECK(decode_namespace_record(spirv.name(), encode_namespace_record(spirv)) == spirv);
}

TEST_CASE("store layout: every flipped bit of a namespace record is refused") {
  Namespace ns = spirv_namespace("vulkan1.2");
  auto good = encode_namespace_record(ns);
  for (std::size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = good;
      bad[byte] ^= static_cast<std::uint8_t>(1 << bit);
      auto r = decode_namespace_record(ns.name(), bad);
      REQUIRE_FALSE(r.has_value());
      // Flips in the version field may read as an unsupported version.
      CHECK((r.error().category == Category::corruption || r.error().category == Category::version_mismatch));
    }
  }
  for (std::size_t size = 0; size < good.size(); ++size) {
    auto r = decode_namespace_record(ns.name(), std::span(good).first(size));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().category == Category::corruption);
  }
}

TEST_CASE("store layout: a namespace record under another name is corruption") {
  auto bytes = encode_namespace_record(spirv_namespace("vulkan1.2"));
  auto r = decode_namespace_record("spirv/vulkan1.3", bytes);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::corruption);
  CHECK(r.error().message.find("spirv/vulkan1.2") != std::string::npos);
}

TEST_CASE("store layout: entry keys") {
  auto key = entry_key("spirv/vulkan1.2", "matmul");
  REQUIRE(key.has_value());
  CHECK(*key == std::string("spirv/vulkan1.2\x1fmatmul"));
  CHECK(key->starts_with(entry_prefix("spirv/vulkan1.2")));
  CHECK_FALSE(key->starts_with(entry_prefix("spirv/vulkan1")));

  CHECK(entry_key("spirv/vulkan1.2", std::string(k_max_key_bytes - 16, 'k')).has_value());
  auto too_long = entry_key("spirv/vulkan1.2", std::string(k_max_key_bytes - 15, 'k'));
  REQUIRE_FALSE(too_long.has_value());
  CHECK(too_long.error().category == Category::invalid_argument);
  CHECK(too_long.error().message.find("at most 495 bytes") != std::string::npos);

  CHECK(entry_key("no-slash", "k").error().category == Category::invalid_argument);
  CHECK(entry_key("spirv/a\x1f"
                  "b",
                  "k")
            .error()
            .category == Category::invalid_argument);
  CHECK(entry_key("spirv/vulkan1.2", "").error().category == Category::invalid_argument);
}

TEST_CASE("store layout: classify_put") {
  Entry e;
  e.kernel = "k";
  e.key = {util::hash_string("id"), util::hash_string("ir")};
  e.payload = {1, 2, 3};
  seal_payload(e);
  auto prepared = prepare_put(spirv_namespace("vulkan1.2"), std::span(&e, 1));
  REQUIRE(prepared.has_value());
  const PreparedEntry& p = prepared->front();

  CHECK(classify_put(p, std::nullopt) == PutAction::write);
  CHECK(classify_put(p, std::span<const std::uint8_t>(p.value)) == PutAction::keep);
  std::vector<std::uint8_t> garbage = {'x', 'y'};
  CHECK(classify_put(p, std::span<const std::uint8_t>(garbage)) == PutAction::replace);
  Entry other = e;
  other.payload = {9};
  auto other_bytes = encode_entry(other);
  CHECK(classify_put(p, std::span<const std::uint8_t>(other_bytes)) == PutAction::replace);
  Entry renamed = e;
  renamed.kernel = "j";  // a good record under the wrong key is not "the same entry"
  auto renamed_bytes = encode_entry(renamed);
  CHECK(classify_put(p, std::span<const std::uint8_t>(renamed_bytes)) == PutAction::replace);
}

}  // namespace kcache::store::internal
