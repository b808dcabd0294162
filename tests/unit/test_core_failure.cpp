// The failure record (core/failure.hpp): its encoding round-trips, every
// damaged or foreign byte is refused by name, messages are bounded, and the
// golden file of version 1 stays readable byte for byte.
#include "kcache/core/failure.hpp"
#include "kcache/util/hash.hpp"
#include "kcache/util/text.hpp"

#include "test_support.hpp"

#include <fstream>
#include <iterator>

namespace kcache {
namespace {

/// The record in tests/data/failure/failure-v1.kcx. Never change it: the
/// golden file holds exactly these values in record version 1.
Failure golden_failure() {
  Failure f;
  f.kernel = "saxpy[T=half]";
  f.phase = FailurePhase::spirv_val;
  f.key.id = util::hash_string("golden id");
  f.key.ir = util::hash_string("golden ir");
  f.ir_known = true;
  f.id_fields = {{"name", "saxpy[T=half]"}, {"source", "shaders/saxpy.comp"}, {"define:T", "half"}};
  f.ir_fields = {{"expanded_source", "0123456789abcdef0123456789abcdef"}, {"glslang", "12.0.0"}};
  f.inputs = {{"shaders/saxpy.comp", util::hash_string("source")}, {"include/common.glsl", util::hash_string("inc")}};
  f.category = Category::validation_failed;
  f.message = "shaders/saxpy.comp: spirv-val rejected the module: ID 12 has not been defined\n  %12 = OpLoad";
  f.created = 1'780'000'000;
  f.origin_detail = "built by kcache 0.1.0 on golden";
  return f;
}

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string k_golden = std::string(KCACHE_SOURCE_DIR) + "/tests/data/failure/failure-v1.kcx";

}  // namespace

TEST_CASE("failure record: encode then decode gives the same failure") {
  Failure f = golden_failure();
  auto decoded = decode_failure(encode_failure(f));
  REQUIRE_MESSAGE(decoded.has_value(), decoded.error().message);
  CHECK(*decoded == f);
  CHECK(validate_failure_record(*decoded).has_value());

  f.phase = FailurePhase::pipeline;
  f.ir_known = false;
  f.key.ir = {};
  f.category = Category::compile_failed;
  decoded = decode_failure(encode_failure(f));
  REQUIRE(decoded.has_value());
  CHECK(*decoded == f);
  CHECK(failure_phase_name(decoded->phase) == "pipeline");
}

TEST_CASE("failure record: the golden file of version 1 decodes and re-encodes byte for byte") {
  auto bytes = read_bytes(k_golden);
  auto decoded = decode_failure(bytes);
  REQUIRE_MESSAGE(decoded.has_value(), decoded.error().message);
  CHECK(*decoded == golden_failure());
  CHECK(encode_failure(*decoded) == bytes);
}

TEST_CASE("failure record: damaged bytes are refused by name") {
  const auto good = encode_failure(golden_failure());
  SUBCASE("truncated") {
    for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{30}, good.size() - 1}) {
      auto bytes = good;
      bytes.resize(n);
      auto r = decode_failure(bytes);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().category == Category::corruption);
    }
  }
  SUBCASE("a flipped byte fails the digest") {
    auto bytes = good;
    bytes[20] ^= 0x40;
    auto r = decode_failure(bytes);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("digest") != std::string::npos);
  }
  SUBCASE("an entry record is not a failure record") {
    auto r = decode_failure(
        std::vector<std::uint8_t>{'K', 'C', 'E', 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("bad magic") != std::string::npos);
  }
  SUBCASE("a newer version is refused as version_mismatch") {
    auto bytes = good;
    bytes[4] = 2;  // version u16 little-endian
    auto digest = util::hash_bytes(std::span(bytes).first(bytes.size() - 16));
    std::copy(digest.bytes.begin(), digest.bytes.end(), bytes.end() - 16);
    auto r = decode_failure(bytes);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().category == Category::version_mismatch);
  }
}

TEST_CASE("failure record: a huge message is cut at a character boundary when recorded") {
  Failure f = golden_failure();
  // Two-byte characters ("é" = C3 A9), so a cut could land inside one.
  f.message.clear();
  for (std::size_t i = 0; i < k_max_failure_message; ++i) f.message += "\xC3\xA9";
  auto decoded = decode_failure(encode_failure(f));
  REQUIRE_MESSAGE(decoded.has_value(), decoded.error().message);
  CHECK(decoded->message.size() <= k_max_failure_message);
  CHECK(util::is_printable_utf8(decoded->message));
  CHECK(decoded->message.find("more bytes not kept") != std::string::npos);
  CHECK(bound_failure_message("short") == "short");
}

TEST_CASE("failure record: what a record says is checked like an entry's") {
  Failure f = golden_failure();
  f.inputs.push_back({"../../etc/passwd", util::hash_string("x")});
  auto r = validate_failure_record(f);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::corruption);
  CHECK(r.error().message.find("failure record") != std::string::npos);
  f = golden_failure();
  f.kernel = "a/b";
  CHECK_FALSE(validate_failure_record(f).has_value());
}

TEST_CASE("failure record: category names map back") {
  for (Category c : {Category::compile_failed, Category::validation_failed, Category::validator_unsupported,
                     Category::busy, Category::not_found})
    CHECK(category_from_name(category_name(c)) == c);
  CHECK_FALSE(category_from_name("no_such_category").has_value());
}

}  // namespace kcache
