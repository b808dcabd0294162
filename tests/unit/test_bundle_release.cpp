// Release bundles (format version 4, bundle/release.hpp) and delta bundles
// (format version 5): a release's sections read back
// in order through a file and a pipe, a plain bundle reads as one section,
// the golden release still reads, and a release head or section that lies
// is refused naming it.
#include "test_bundle_support.hpp"

#include "kcache/bundle/release.hpp"
#include "kcache/util/file.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

using namespace kcache;
using namespace kcache::test;
using bundle::ReleaseReader;

namespace {

namespace fs = std::filesystem;

/// A fresh folder under the test's temporary folder.
fs::path scratch(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("kcache-release-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

Bytes slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void spit(const fs::path& p, std::span<const std::uint8_t> b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

/// The two sections of the golden release: a SPIR-V namespace and the
/// vulkan namespace of the golden bundles, each written as format 3.
struct Sections {
  std::vector<Namespace> ns;
  std::vector<std::vector<Entry>> entries;
};

Sections golden_sections() {
  Sections s;
  s.ns = {spirv_namespace("vulkan1.2"), vulkan_ns()};
  s.entries = {make_entries(5, 64), make_entries(3, 32)};
  return s;
}

/// Writes each section to DIR/section-N.kcb, then the release to `out`.
std::vector<fs::path> write_sections(const fs::path& dir, const Sections& s, const bundle::WriteOptions& options = {}) {
  std::vector<fs::path> files;
  for (std::size_t i = 0; i < s.ns.size(); ++i) {
    files.push_back(dir / ("section-" + std::to_string(i) + ".kcb"));
    auto header = bundle::make_header(s.ns[i], tool_versions(), 1'700'000'000, s.entries[i]);
    REQUIRE(bundle::write_bundle_file(files.back(), header, bundle::entries_from(s.entries[i]), options).has_value());
  }
  return files;
}

/// Reads every section of `in` to the end; the entries per section, or the
/// first error.
Result<std::vector<std::vector<Entry>>> read_release(const bundle::BundleStream& in) {
  auto release = KCACHE_TRY(ReleaseReader::open(in));
  std::vector<std::vector<Entry>> out;
  for (;;) {
    auto section = KCACHE_TRY(release.next_section());
    if (!section) break;
    out.emplace_back();
    while (auto e = KCACHE_TRY(section->next())) out.back().push_back(std::move(*e));
    KCACHE_CHECK(section->finish());
  }
  KCACHE_CHECK(release.finish());
  return out;
}

bundle::BundleStream file(const fs::path& p) { return bundle::BundleStream{p, -1}; }

}  // namespace

TEST_CASE("a release reads back section by section, from a file and from a pipe") {
  auto dir = scratch("roundtrip");
  auto s = golden_sections();
  auto files = write_sections(dir, s);
  REQUIRE(bundle::write_release(file(dir / "r.kcb"), 1'700'000'123, files).has_value());
  auto got = read_release(file(dir / "r.kcb"));
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  CHECK(*got == s.entries);

  auto opened = ReleaseReader::open(file(dir / "r.kcb"));
  REQUIRE(opened.has_value());
  REQUIRE(opened->release().has_value());
  CHECK(opened->release()->created == 1'700'000'123);
  CHECK(opened->section_count() == 2);
  CHECK(opened->release()->sections[1].ns == vulkan_ns());
  CHECK(opened->release()->sections[1].size == fs::file_size(files[1]));

  // Through a pipe, which cannot seek.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  auto bytes = slurp(dir / "r.kcb");
  std::thread writer([&] {
    (void)util::write_all(fds[1], bytes);
    ::close(fds[1]);
  });
  auto piped = read_release(bundle::BundleStream{"", fds[0]});
  writer.join();
  ::close(fds[0]);
  REQUIRE_MESSAGE(piped.has_value(), piped.error().message);
  CHECK(*piped == s.entries);
  fs::remove_all(dir);
}

TEST_CASE("a plain bundle reads as a release of one section") {
  auto dir = scratch("plain");
  auto s = golden_sections();
  auto files = write_sections(dir, s);
  auto opened = ReleaseReader::open(file(files[0]));
  REQUIRE(opened.has_value());
  CHECK(!opened->release().has_value());
  CHECK(opened->section_count() == 1);
  auto got = read_release(file(files[0]));
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  REQUIRE(got->size() == 1);
  CHECK(got->front() == s.entries[0]);
  // The plain reader names what a release is instead of reading it.
  REQUIRE(bundle::write_release(file(dir / "r.kcb"), 1, files).has_value());
  auto plain = bundle::BundleReader::open_file(dir / "r.kcb");
  REQUIRE(!plain.has_value());
  CHECK(plain.error().category == Category::version_mismatch);
  CHECK(plain.error().message.find("release of several namespaces") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a release that lies is refused, naming the section") {
  auto dir = scratch("hostile");
  auto s = golden_sections();
  auto files = write_sections(dir, s);
  REQUIRE(bundle::write_release(file(dir / "r.kcb"), 1, files).has_value());
  const auto good = slurp(dir / "r.kcb");
  auto head = bundle::ReleaseReader::open(file(dir / "r.kcb"))->release().value();
  const auto head_bytes = bundle::encode_release_head(head);
  REQUIRE(std::equal(head_bytes.begin(), head_bytes.end(), good.begin()));
  const Bytes sections(good.begin() + static_cast<std::ptrdiff_t>(head_bytes.size()), good.end());

  auto refused = [&](const Bytes& bytes, std::string_view want) {
    spit(dir / "bad.kcb", bytes);
    auto got = read_release(file(dir / "bad.kcb"));
    REQUIRE_MESSAGE(!got.has_value(), "accepted; expected: ", want);
    CHECK(got.error().category == Category::corruption);
    CHECK_MESSAGE(got.error().message.find(want) != std::string::npos, got.error().message);
  };
  auto with_head = [&](const bundle::ReleaseHead& h) {
    auto b = bundle::encode_release_head(h);
    b.insert(b.end(), sections.begin(), sections.end());
    return b;
  };

  SUBCASE("a damaged head") {
    auto b = good;
    b[14] ^= 1;
    refused(b, "release head digest mismatch");
  }
  SUBCASE("a section's digest") {
    auto h = head;
    h.sections[0].digest.bytes[0] ^= 1;
    refused(with_head(h), "section 1 of 2 (spirv/vulkan1.2): digest mismatch");
  }
  SUBCASE("a section's namespace") {
    auto h = head;
    h.sections[0].ns = spirv_namespace("vulkan1.3");
    refused(with_head(h),
            "the section holds spirv/vulkan1.2 with 5 entries where the release head lists "
            "spirv/vulkan1.3");
  }
  SUBCASE("a section's size") {
    auto h = head;
    h.sections[0].size += 10;
    refused(with_head(h), "trailing bytes after its trailer");  // the section reader reads past its end
  }
  SUBCASE("a namespace twice") {
    auto h = head;
    h.sections[1] = h.sections[0];
    refused(with_head(h), "repeats namespace spirv/vulkan1.2");
  }
  SUBCASE("a foreign namespace") {
    auto h = head;
    h.sections[0].ns.fingerprint = "vulkan9.9";
    h.sections[0].ns.record = {{{"target", "vulkan9.9"}}};
    refused(with_head(h), "section 1");
  }
  SUBCASE("no sections") {
    auto h = head;
    h.sections.clear();
    refused(bundle::encode_release_head(h), "0 sections");
  }
  SUBCASE("trailing bytes") {
    auto b = good;
    b.push_back(0);
    refused(b, "trailing bytes after its last section");
  }
  SUBCASE("truncated in the last section") { refused(Bytes(good.begin(), good.end() - 5), "truncated"); }
  fs::remove_all(dir);
}

TEST_CASE("write_release refuses what is no release") {
  auto dir = scratch("refuse");
  auto s = golden_sections();
  auto files = write_sections(dir, s);
  CHECK(bundle::write_release(file(dir / "r.kcb"), 1, {}).error().category == Category::invalid_argument);
  std::vector<fs::path> twice = {files[0], files[0]};
  auto r = bundle::write_release(file(dir / "r.kcb"), 1, twice);
  REQUIRE(!r.has_value());
  CHECK(r.error().message.find("spirv/vulkan1.2 is there twice") != std::string::npos);
  CHECK(!fs::exists(dir / "r.kcb"));
  fs::remove_all(dir);
}

// KCACHE_GOLDEN_V4_OUT=bundles/golden/v4.kcb ./unit_bundle -tc='*golden*version 4*'
TEST_CASE("golden bundle of format version 4 (a release)") {
  auto dir = scratch("golden");
  auto s = golden_sections();
  std::array<std::uint8_t, 32> seed;
  seed.fill(0x42);
  auto key = bundle::keypair_from_seed(seed);
  bundle::WriteOptions options;
  options.sign = &key;
  auto files = write_sections(dir, s, options);
  if (const char* out = std::getenv("KCACHE_GOLDEN_V4_OUT")) {
    REQUIRE(bundle::write_release(file(out), 1'700'000'000, files).has_value());
    MESSAGE("golden release written to ", std::string(out));
  }
  // The checked-in file is the point of this test: its absence is a failure,
  // never a silent pass (bundles/golden/README.md).
  auto golden = fs::path(KCACHE_SOURCE_DIR) / "bundles/golden/v4.kcb";
  REQUIRE_MESSAGE(fs::is_regular_file(golden), "golden bundle ", golden.string(),
                  " is missing: it is checked in and must never be regenerated (bundles/golden/README.md)");
  auto release = ReleaseReader::open(file(golden));
  REQUIRE_MESSAGE(release.has_value(), release.error().message);
  REQUIRE(release->release().has_value());
  CHECK(release->release()->created == 1'700'000'000);
  REQUIRE(release->section_count() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    auto section = release->next_section();
    REQUIRE_MESSAGE(section.has_value(), section.error().message);
    REQUIRE(section->has_value());
    CHECK((*section)->header().ns == s.ns[i]);
    CHECK(bundle::verify_signature((*section)->header(), std::span(&key.public_key, 1)).has_value());
    std::vector<Entry> got;
    for (;;) {
      auto e = (*section)->next();
      REQUIRE_MESSAGE(e.has_value(), e.error().message);
      if (!*e) break;
      got.push_back(std::move(**e));
    }
    REQUIRE((*section)->finish().has_value());
    CHECK(got == s.entries[i]);
  }
  CHECK(!release->next_section().value().has_value());
  CHECK(release->finish().has_value());
  fs::remove_all(dir);
}

// Delta bundles of format version 5 (what kcache wrote before version 6,
// test_bundle_delta.cpp): the delta fields read back, are covered by the
// signature, and a delta that names a kernel twice is refused.
namespace {

bundle::BundleHeader delta_header(const std::vector<Entry>& entries) {
  auto header = bundle::make_header(spirv_namespace("vulkan1.2"), tool_versions(), 1'700'000'000, entries);
  bundle::DeltaBase d;
  d.base_digest.bytes.fill(0xab);
  d.base_entries = 6;
  d.kept = {"kept_a", "kept_b"};
  std::vector<std::pair<std::string, Key>> with_keys = {{"kept_a", entries[0].key}, {"kept_b", entries[1].key}};
  d.kept_digest = bundle::kept_entries_digest(with_keys);
  d.removed = {"gone"};
  header.delta = d;
  return header;
}

Bytes write_header(const bundle::BundleHeader& header, const std::vector<Entry>& entries,
                   const bundle::WriteOptions& options = {}) {
  std::ostringstream out(std::ios::binary);
  auto ok = bundle::write_bundle(out, header, bundle::entries_from(entries), options);
  REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
  auto s = out.str();
  return Bytes(s.begin(), s.end());
}

}  // namespace

TEST_CASE("a delta bundle's base fields read back and are signed") {
  auto entries = make_entries(3, 32);
  std::array<std::uint8_t, 32> seed;
  seed.fill(0x42);
  auto key = bundle::keypair_from_seed(seed);
  bundle::WriteOptions options;
  options.sign = &key;
  options.delta_format_version = 5;
  auto header = delta_header(entries);
  auto bytes = write_header(header, entries, options);
  auto reader = bundle::BundleReader::open(std::span(bytes));
  REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
  CHECK(reader->header().format_version == bundle::k_min_delta_format_version);
  REQUIRE(reader->header().delta.has_value());
  CHECK(*reader->header().delta == *header.delta);
  CHECK(bundle::verify_signature(reader->header(), std::span(&key.public_key, 1)).has_value());
  // The signed manifest covers the delta fields: another removed list, the
  // same signature, does not verify.
  auto forged = reader->header();
  forged.delta->removed = {"other"};
  CHECK(!bundle::verify_signature(forged, std::span(&key.public_key, 1)).has_value());
  auto got = read_all(bytes);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  CHECK(*got == entries);
}

TEST_CASE("a delta that names a kernel twice, or keeps more than its base, is refused") {
  auto entries = make_entries(3, 32);
  auto header = delta_header(entries);
  SUBCASE("kept and in the index") { header.delta->kept.push_back(entries[0].kernel); }
  SUBCASE("kept and removed") { header.delta->removed.push_back("kept_a"); }
  SUBCASE("more than the base") { header.delta->base_entries = 2; }
  auto written = [&] {
    std::ostringstream out(std::ios::binary);
    bundle::WriteOptions v5;
    v5.delta_format_version = 5;
    return bundle::write_bundle(out, header, bundle::entries_from(entries), v5);
  }();
  REQUIRE(!written.has_value());
  CHECK(written.error().message.find("delta") != std::string::npos);
}

// KCACHE_GOLDEN_V5_OUT=bundles/golden/v5.kcb ./unit_bundle -tc='*golden*version 5*'
TEST_CASE("golden bundle of format version 5 (a delta)") {
  auto entries = make_entries(3, 32);
  auto header = delta_header(entries);
  if (const char* out = std::getenv("KCACHE_GOLDEN_V5_OUT")) {
    bundle::WriteOptions v5;
    v5.delta_format_version = 5;
    REQUIRE(bundle::write_bundle_file(out, header, bundle::entries_from(entries), v5).has_value());
    MESSAGE("golden delta written to ", std::string(out));
  }
  auto golden = fs::path(KCACHE_SOURCE_DIR) / "bundles/golden/v5.kcb";
  REQUIRE_MESSAGE(fs::is_regular_file(golden), "golden bundle ", golden.string(),
                  " is missing: it is checked in and must never be regenerated (bundles/golden/README.md)");
  auto bytes = slurp(golden);
  auto reader = bundle::BundleReader::open(std::span(bytes));
  REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
  CHECK(reader->header().format_version == 5);
  REQUIRE(reader->header().delta.has_value());
  CHECK(*reader->header().delta == *header.delta);
  auto got = read_all(bytes);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  CHECK(*got == entries);
}
