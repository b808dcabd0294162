// Delta bundles of format version 6 (FORMAT.md "Delta bundles, versions 5
// and 6", issue 40): BASE's keys of the removed kernels, a tag per kept
// kernel and BASE's file name read back, the signature covers them, the
// writer and reader refuse lists that do not match, and the golden delta of
// version 6 still reads.
#include "test_bundle_support.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace kcache;
using namespace kcache::test;
namespace fs = std::filesystem;

namespace kcache::bundle_delta_test {

Key key_of(std::uint8_t fill) {
  Key k;
  k.id.bytes.fill(fill);
  k.ir.bytes.fill(static_cast<std::uint8_t>(fill + 1));
  return k;
}

/// A version-6 delta of `entries` (added or replaced) on a base that also
/// held kept_a, kept_b (kept) and gone (removed).
bundle::BundleHeader delta6_header(const std::vector<Entry>& entries) {
  auto header = bundle::make_header(spirv_namespace("vulkan1.2"), tool_versions(), 1'700'000'000, entries);
  bundle::DeltaBase d;
  d.base_digest.bytes.fill(0xab);
  d.base_entries = 6;
  d.kept = {"kept_a", "kept_b"};
  std::vector<std::pair<std::string, Key>> with_keys = {{"kept_a", key_of(1)}, {"kept_b", key_of(3)}};
  d.kept_digest = bundle::kept_entries_digest(with_keys);
  for (const auto& [k, key] : with_keys) d.kept_tags.push_back(bundle::kept_entry_tag(k, key));
  d.removed = {"gone"};
  d.removed_keys = {key_of(5)};
  d.base_name = "base-v1.kcb";
  header.delta = d;
  return header;
}

Result<Bytes> write_delta(const bundle::BundleHeader& header, const std::vector<Entry>& entries,
                          const bundle::WriteOptions& options = {}) {
  std::ostringstream out(std::ios::binary);
  KCACHE_CHECK(bundle::write_bundle(out, header, bundle::entries_from(entries), options));
  auto s = out.str();
  return Bytes(s.begin(), s.end());
}

Bytes slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("a version-6 delta's keys, tags and base name read back and are signed") {
  auto entries = make_entries(3, 32);
  std::array<std::uint8_t, 32> seed;
  seed.fill(0x42);
  auto key = bundle::keypair_from_seed(seed);
  bundle::WriteOptions options;
  options.sign = &key;
  auto header = delta6_header(entries);
  auto bytes = write_delta(header, entries, options);
  REQUIRE_MESSAGE(bytes.has_value(), bytes.error().message);
  auto reader = bundle::BundleReader::open(std::span(*bytes));
  REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
  CHECK(reader->header().format_version == 6);
  REQUIRE(reader->header().delta.has_value());
  CHECK(*reader->header().delta == *header.delta);
  CHECK(bundle::verify_signature(reader->header(), std::span(&key.public_key, 1)).has_value());
  // The signature covers what version 6 adds: another key for the removed
  // kernel, or another tag, does not verify.
  auto forged = reader->header();
  forged.delta->removed_keys[0] = key_of(9);
  CHECK_FALSE(bundle::verify_signature(forged, std::span(&key.public_key, 1)).has_value());
  forged = reader->header();
  forged.delta->kept_tags[1] ^= 1;
  CHECK_FALSE(bundle::verify_signature(forged, std::span(&key.public_key, 1)).has_value());
  auto got = read_all(*bytes);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  CHECK(*got == entries);
}

TEST_CASE("a version-5 delta reads without version 6's fields") {
  auto entries = make_entries(2, 32);
  auto header = delta6_header(entries);
  bundle::WriteOptions v5;
  v5.delta_format_version = 5;
  auto bytes = write_delta(header, entries, v5);
  REQUIRE_MESSAGE(bytes.has_value(), bytes.error().message);
  auto reader = bundle::BundleReader::open(std::span(*bytes));
  REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
  CHECK(reader->header().format_version == 5);
  const auto& d = *reader->header().delta;
  CHECK(d.removed == header.delta->removed);
  CHECK(d.removed_keys.empty());
  CHECK(d.kept_tags.empty());
  CHECK(d.base_name.empty());
}

TEST_CASE("a version-6 delta whose lists do not match is not written") {
  auto entries = make_entries(2, 32);
  auto header = delta6_header(entries);
  std::string expect;
  SUBCASE("a removed kernel without its key") {
    header.delta->removed_keys.clear();
    expect = "keys for 1 removed";
  }
  SUBCASE("a kept kernel without its tag") {
    header.delta->kept_tags.pop_back();
    expect = "tags for 2 kept";
  }
  SUBCASE("a base name that is a path") {
    header.delta->base_name = "../etc/base.kcb";
    expect = "not a file name";
  }
  SUBCASE("a base name with a control character") {
    header.delta->base_name = "base\x1b[2J.kcb";
    expect = "not a file name";
  }
  auto bytes = write_delta(header, entries);
  REQUIRE_FALSE(bytes.has_value());
  CHECK(bytes.error().category == Category::invalid_argument);
  CHECK_MESSAGE(bytes.error().message.find(expect) != std::string::npos, bytes.error().message);
}

TEST_CASE("a delta is written as version 5 or 6 only") {
  auto entries = make_entries(1, 32);
  bundle::WriteOptions options;
  options.delta_format_version = 3;
  auto bytes = write_delta(delta6_header(entries), entries, options);
  REQUIRE_FALSE(bytes.has_value());
  CHECK(bytes.error().message.find("format version 5 or 6") != std::string::npos);
}

// KCACHE_GOLDEN_V6_OUT=bundles/golden/v6.kcb ./unit_bundle -tc='*golden*version 6*'
TEST_CASE("golden bundle of format version 6 (a delta with keys)") {
  auto entries = make_entries(3, 32);
  auto header = delta6_header(entries);
  if (const char* out = std::getenv("KCACHE_GOLDEN_V6_OUT")) {
    REQUIRE(bundle::write_bundle_file(out, header, bundle::entries_from(entries)).has_value());
    MESSAGE("golden delta written to ", std::string(out));
  }
  auto golden = fs::path(KCACHE_SOURCE_DIR) / "bundles/golden/v6.kcb";
  REQUIRE_MESSAGE(fs::is_regular_file(golden), "golden bundle ", golden.string(),
                  " is missing: it is checked in and must never be regenerated (bundles/golden/README.md)");
  auto bytes = slurp(golden);
  auto reader = bundle::BundleReader::open(std::span(bytes));
  REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
  CHECK(reader->header().format_version == 6);
  REQUIRE(reader->header().delta.has_value());
  CHECK(*reader->header().delta == *header.delta);
  auto got = read_all(bytes);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  CHECK(*got == entries);
}

}  // namespace kcache::bundle_delta_test
