// Bundle round trips: bytes and header fields survive writing and reading
// through every kind of sink and source, including a pipe (stdout/stdin), and
// the golden bundle of format version 1 still reads.
#include "seed_corpus.hpp"
#include "test_bundle_support.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <thread>

using namespace kcache;
using namespace kcache::test;
using bundle::BundleReader;

namespace {

/// `same_records`: the bundle was written by today's encoder. A golden
/// bundle's records are of the entry record version of its day (version 1),
/// so their sizes and digests differ from today's encoding of the same entry.
void check_same_header(const bundle::BundleHeader& got, const Namespace& ns, const std::vector<Entry>& entries,
                       std::uint64_t created, int version = bundle::k_format_version, bool same_records = true) {
  CHECK(got.format_version == version);
  CHECK(got.ns == ns);
  CHECK(got.tool_versions == tool_versions());
  CHECK(got.created == created);
  REQUIRE(got.index.size() == entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto want = bundle::index_entry(entries[i]);
    if (!same_records) want.record_size = got.index[i].record_size, want.digest = got.index[i].digest;
    CHECK(got.index[i] == want);
  }
}

}  // namespace

TEST_CASE("bundle round trip keeps every entry and header field") {
  auto ns = vulkan_ns();
  auto entries = make_entries(40);
  bundle::WriteOptions options;
  options.block_bytes = 16 << 10;  // several blocks
  auto bytes = write_to_bytes(ns, entries, options, 1'712'345'678);

  auto reader = BundleReader::open(std::span(bytes));
  REQUIRE(reader.has_value());
  const auto& h = reader->header();
  check_same_header(h, ns, entries, 1'712'345'678);
  CHECK(h.compression == bundle::Compression{1, 24, false, 16u << 10});
  CHECK(h.block_entry_counts.size() > 2);
  CHECK(!h.signature);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto e = reader->next();
    REQUIRE_MESSAGE(e.has_value(), e.error().message);
    REQUIRE(e->has_value());
    CHECK(**e == entries[i]);
    CHECK(encode_entry(**e) == encode_entry(entries[i]));
  }
  auto end = reader->next();
  REQUIRE(end.has_value());
  CHECK(!end->has_value());
  auto fin = reader->finish();
  CHECK_MESSAGE(fin.has_value(), (fin ? "" : fin.error().message));
  CHECK(reader->bytes_read() == bytes.size());
  CHECK(reader->finish().has_value());  // idempotent
}

TEST_CASE("bundle with no entries round-trips") {
  auto bytes = write_to_bytes(spirv_namespace("vulkan1.3"), {});
  auto got = read_all(bytes);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  CHECK(got->empty());
}

TEST_CASE("bundle round trip through a file, an fd and a stream") {
  TempDir dir;
  auto ns = spirv_namespace("vulkan1.2");
  auto entries = make_entries(20);
  auto header = bundle::make_header(ns, tool_versions(), 42, entries);
  auto path = dir.path() / "out.kcb";
  REQUIRE(bundle::write_bundle_file(path, header, bundle::entries_from(entries)).has_value());
  // No temporary left beside it.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 1);

  {
    auto reader = BundleReader::open_file(path);
    REQUIRE(reader.has_value());
    check_same_header(reader->header(), ns, entries, 42);
    for (const auto& want : entries) {
      auto e = reader->next();
      REQUIRE(e.has_value());
      REQUIRE(e->has_value());
      CHECK(**e == want);
    }
    CHECK(reader->finish().has_value());
  }
  {
    std::ifstream in(path, std::ios::binary);
    auto reader = BundleReader::open(in);
    REQUIRE(reader.has_value());
    CHECK(reader->finish().has_value());  // finish() reads and checks what next() did not
    CHECK(reader->entries_read() == entries.size());
  }
  CHECK(BundleReader::open_file(dir.path() / "missing.kcb").error().category == Category::not_found);
}

TEST_CASE("bundle streams through a pipe as through stdout and stdin") {
  // A pipe cannot seek, and its buffer (64 KiB) is far smaller than the
  // bundle, so this only passes if writer and reader both stream.
  auto ns = vulkan_ns();
  auto entries = make_entries(300, 1024);  // ~1.3 MB of records
  auto header = bundle::make_header(ns, tool_versions(), 7, entries);
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  Result<void> written;
  std::thread writer([&] {
    written = bundle::write_bundle(fds[1], header, bundle::entries_from(entries));
    ::close(fds[1]);
  });
  std::size_t matched = 0;
  Result<void> finished = fail(Category::io_error, "not run");
  {
    auto reader = BundleReader::open(fds[0]);
    REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
    check_same_header(reader->header(), ns, entries, 7);
    for (;;) {
      auto e = reader->next();
      REQUIRE_MESSAGE(e.has_value(), e.error().message);
      if (!e->has_value()) break;
      matched += (**e == entries[matched]);
    }
    finished = reader->finish();
  }
  writer.join();
  ::close(fds[0]);
  CHECK(written.has_value());
  CHECK_MESSAGE(finished.has_value(), (finished ? "" : finished.error().message));
  CHECK(matched == entries.size());
}

TEST_CASE("bundle of 2,000 small entries") {
  auto entries = make_entries(2000, 64);
  auto bytes = write_to_bytes(vulkan_ns(), entries);
  auto got = read_all(bytes);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  CHECK(*got == entries);
  std::uint64_t raw = 0;
  for (const auto& e : entries) raw += encode_entry(e).size();
  MESSAGE("2,000 entries: ", raw, " record bytes -> ", bytes.size(), " bundle bytes (ratio ",
          static_cast<double>(raw) / static_cast<double>(bytes.size()), ")");
}

TEST_CASE("a record larger than the block size gets a block of its own") {
  auto entries = make_entries(5, 64);
  entries[2] = make_entry(2, 40'000);  // 160 KB payload
  bundle::WriteOptions options;
  options.block_bytes = 4096;
  options.window_log = 12;  // the big record's frame still uses a 4 KiB window
  auto bytes = write_to_bytes(spirv_namespace("vulkan1.2"), entries, options);
  auto reader = BundleReader::open(std::span(bytes));
  REQUIRE(reader.has_value());
  // Two small records share a block, the big one is alone, two more share one.
  CHECK(reader->header().block_entry_counts == std::vector<std::uint32_t>{2, 1, 2});
  auto got = read_all(bytes);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  CHECK(*got == entries);
}

TEST_CASE("writer refuses headers it cannot write and entries that do not match the index") {
  auto entries = make_entries(3);
  auto header = bundle::make_header(vulkan_ns(), tool_versions(), 1, entries);
  std::ostringstream out;

  SUBCASE("duplicate kernel") {
    auto dup = entries;
    dup[2] = dup[0];
    auto h = bundle::make_header(vulkan_ns(), tool_versions(), 1, dup);
    auto r = bundle::write_bundle(out, h, bundle::entries_from(dup));
    REQUIRE(!r);
    CHECK(r.error().category == Category::invalid_argument);
    CHECK(r.error().message.find("duplicate key") != std::string::npos);
    CHECK(out.str().empty());  // refused before writing anything
  }
  SUBCASE("short fingerprint not derived from the record") {
    auto h = header;
    h.ns.fingerprint = "0123456789abcdef";
    auto r = bundle::write_bundle(out, h, bundle::entries_from(entries));
    REQUIRE(!r);
    CHECK(r.error().category == Category::invalid_argument);
  }
  SUBCASE("entry changed between index and write") {
    auto changed = entries;
    changed[1].payload[7] ^= 1;
    seal_payload(changed[1]);
    auto r = bundle::write_bundle(out, header, bundle::entries_from(changed));
    REQUIRE(!r);
    CHECK(r.error().category == Category::invalid_argument);
    CHECK(r.error().message.find("entry 2 of 3") != std::string::npos);
  }
  SUBCASE("source error passes through") {
    auto r = bundle::write_bundle(
        out, header, [](std::size_t) -> Result<Entry> { return fail(Category::corruption, "store record broken"); });
    REQUIRE(!r);
    CHECK(r.error().category == Category::corruption);
    CHECK(r.error().message == "store record broken");
  }
  SUBCASE("bad options") {
    bundle::WriteOptions o;
    o.window_log = 27;
    CHECK(bundle::write_bundle(out, header, bundle::entries_from(entries), o).error().category ==
          Category::invalid_argument);
    o = {};
    o.level = 99;
    CHECK(!bundle::write_bundle(out, header, bundle::entries_from(entries), o));
  }
}

TEST_CASE("write_bundle_file leaves no partial file on failure") {
  TempDir dir;
  auto entries = make_entries(3);
  auto header = bundle::make_header(vulkan_ns(), tool_versions(), 1, entries);
  auto path = dir.path() / "b.kcb";
  auto r = bundle::write_bundle_file(path, header, [&](std::size_t i) -> Result<Entry> {
    if (i == 2) return fail(Category::io_error, "disk went away");
    return entries[i];
  });
  REQUIRE(!r);
  CHECK(std::filesystem::is_empty(dir.path()));
}

// The golden bundle: deterministic content, signed with a fixed test key.
// KCACHE_GOLDEN_OUT=path ./unit_bundle -tc='*golden*' writes it; once it is
// checked in as bundles/golden/v1.kcb, every later version must still read it
// to the same header and entries.
namespace {

std::vector<Entry> golden_entries() {
  auto entries = make_entries(24, 128);
  entries.push_back(make_entry(100, 2000));
  entries.back().payload_kind = PayloadKind::pipeline_cache;
  seal_payload(entries.back());
  return entries;
}

bundle::KeyPair golden_key() {
  std::array<std::uint8_t, 32> seed;
  seed.fill(0x42);
  return bundle::keypair_from_seed(seed);
}

}  // namespace

namespace {

/// Writes (when `env_out` names a path) and checks the golden bundle of
/// format `version`: the writer's output and the checked-in `file` both
/// read to the same header and entries, signature trusted.
void check_golden(int version, const char* env_out, const char* file) {
  auto entries = golden_entries();
  auto key = golden_key();
  bundle::WriteOptions options;
  options.format_version = version;
  options.block_bytes = 8 << 10;
  if (version == 1) {  // kcache 0.1.0's defaults
    options.level = 9;
    options.window_log = 23;
    options.long_distance = true;
  }
  options.sign = &key;
  // Written by kcache 0.1.0, so its namespace is of fingerprint schema 1.
  auto header = bundle::make_header(schema1_vulkan_ns(), tool_versions(), 1'700'000'000, entries);
  if (const char* out = std::getenv(env_out)) {
    REQUIRE(bundle::write_bundle_file(out, header, bundle::entries_from(entries), options).has_value());
    MESSAGE("golden bundle written to ", out);
  }
  auto check = [&](std::span<const std::uint8_t> bytes, bool same_records) {
    auto reader = BundleReader::open(bytes);
    REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
    check_same_header(reader->header(), schema1_vulkan_ns(), entries, 1'700'000'000, version, same_records);
    CHECK(bundle::verify_signature(reader->header(), std::span(&key.public_key, 1)).has_value());
    auto got = read_all(bytes);
    REQUIRE_MESSAGE(got.has_value(), got.error().message);
    CHECK(*got == entries);
  };
  check(write_to_bytes(schema1_vulkan_ns(), entries, options), true);
  // The checked-in file is the point of this test: its absence is a failure,
  // never a silent pass (bundles/golden/README.md).
  auto golden = std::filesystem::path(KCACHE_SOURCE_DIR) / "bundles/golden" / file;
  REQUIRE_MESSAGE(std::filesystem::is_regular_file(golden), "golden bundle ", golden.string(),
                  " is missing: it is checked in and must never be regenerated (bundles/golden/README.md)");
  std::ifstream in(golden, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read ", golden.string());
  Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE_MESSAGE(!bytes.empty(), golden.string(), " is empty");
  check(bytes, false);  // its records are entry record version 1
}

}  // namespace

TEST_CASE("golden bundle of format version 1") { check_golden(1, "KCACHE_GOLDEN_OUT", "v1.kcb"); }

// KCACHE_GOLDEN_V2_OUT=bundles/golden/v2.kcb ./unit_bundle -tc='*golden*version 2*'
TEST_CASE("golden bundle of format version 2") { check_golden(2, "KCACHE_GOLDEN_V2_OUT", "v2.kcb"); }

// KCACHE_GOLDEN_V3_OUT=bundles/golden/v3.kcb ./unit_bundle -tc='*golden*version 3*'
TEST_CASE("golden bundle of format version 3") { check_golden(3, "KCACHE_GOLDEN_V3_OUT", "v3.kcb"); }

// The seed corpora of tests/fuzz/fuzz_bundle_reader and fuzz_entry_decoder
// (written by tests/fuzz/make_seeds.cpp, checked in): every seed is there and
// not empty, the valid_* ones read back completely and the others are
// refused, as their names say. (seed_corpus.hpp)
namespace {

/// Reads `bytes` as fuzz_bundle_reader does (open, every entry, finish); the
/// first error, or nothing when the whole bundle was read and accepted.
std::optional<Error> read_bundle_through(std::span<const std::uint8_t> bytes,
                                         std::optional<BundleReader>* kept = nullptr) {
  auto reader = BundleReader::open(bytes);
  if (!reader) return reader.error();
  for (;;) {
    auto e = reader->next();
    if (!e) return e.error();
    if (!e->has_value()) break;
  }
  if (auto fin = reader->finish(); !fin) return fin.error();
  if (reader->bytes_read() != bytes.size())
    return Error{Category::corruption, "accepted after reading " + std::to_string(reader->bytes_read()) + " of " +
                                           std::to_string(bytes.size()) + " bytes"};
  if (kept) kept->emplace(std::move(*reader));
  return std::nullopt;
}

}  // namespace

TEST_CASE("fuzz seed corpus: bundle_reader seeds are read or refused as their names say") {
  // make_seeds.cpp signs with the seed 0x11 x 32.
  std::array<std::uint8_t, 32> seed;
  seed.fill(0x11);
  const auto seed_key = bundle::keypair_from_seed(seed);
  const std::set<std::string> valid = {"valid_unsigned",  "valid_signed",      "valid_empty",    "valid_v1_unsigned",
                                       "valid_v1_signed", "valid_v3_unsigned", "valid_v3_signed"};
  // Each damaged seed and the refusal it must meet (the flipped signature
  // byte is inside the head, so the head digest already refuses it).
  const std::map<std::string, Category> broken = {
      {"truncated_head", Category::corruption},
      {"truncated_payload", Category::corruption},
      {"flipped_header", Category::corruption},
      {"flipped_signature", Category::corruption},
      {"version_4", Category::version_mismatch},
      {"trailing_byte", Category::corruption},
      // Issue 14: well-formed, digests right, but what the entries say is hostile.
      {"hostile_input_path", Category::corruption},
      {"hostile_input_path_v2", Category::corruption},
      {"hostile_kernel_name", Category::corruption},
      {"hostile_spirv_target", Category::corruption}};
  std::set<std::string> all = valid;
  for (const auto& [name, category] : broken) all.insert(name);
  auto seeds = read_seeds("bundle_reader", all);

  for (const auto& name : valid) {
    CAPTURE(name);
    std::optional<BundleReader> reader;
    auto error = read_bundle_through(seeds.at(name), &reader);
    if (error) FAIL(name, " is refused: ", error->message);
    const auto& h = reader->header();
    // valid_unsigned, _signed and _empty are format 2, as when they were made.
    CHECK(h.format_version == (name.starts_with("valid_v1") ? 1 : name.starts_with("valid_v3") ? 3 : 2));
    CHECK(reader->entries_read() == h.index.size());
    CHECK((name == "valid_empty") == h.index.empty());
    CHECK(name.ends_with("_signed") == h.signature.has_value());
    if (name.ends_with("_signed")) CHECK(bundle::verify_signature(h, std::span(&seed_key.public_key, 1)).has_value());
  }
  for (const auto& item : broken) {
    const auto& name = item.first;  // named, not bound: clang 14 cannot capture a binding
    const auto& category = item.second;
    CAPTURE(name);
    auto error = read_bundle_through(seeds.at(name));
    if (!error) FAIL(name, " is accepted");
    CHECK_MESSAGE(error->category == category, name, " refused as ", category_name(error->category), ": ",
                  error->message);
    CHECK(!error->message.empty());
  }
}

TEST_CASE("fuzz seed corpus: entry_decoder seeds are decoded or refused as their names say") {
  // golden_v*_record: tests/data/entries/entry-v*.rec (record versions 1 to 3).
  const std::set<std::string> valid = {"valid_spirv",          "valid_pipeline_cache", "valid_empty",
                                       "valid_recorded_paths", "golden_v1_record",     "golden_v2_record",
                                       "golden_v3_record",     "valid_diagnostics"};
  const std::set<std::string> broken = {"truncated_half", "bad_magic", "version_2", "flipped_payload"};
  // Issue 14: decode, but validate_entry_record refuses what they say.
  const std::set<std::string> hostile = {"hostile_absolute_input", "hostile_dotdot_input", "hostile_source_field",
                                         "hostile_kernel_name", "hostile_field_value"};
  std::set<std::string> all = valid;
  all.insert(broken.begin(), broken.end());
  all.insert(hostile.begin(), hostile.end());
  auto seeds = read_seeds("entry_decoder", all);
  for (const auto& name : valid) {
    CAPTURE(name);
    auto e = decode_entry(seeds.at(name));
    if (!e) FAIL(name, " is refused: ", e.error().message);
    // One encoding per entry; a record of an older version re-encodes as the current one.
    if (seeds.at(name).at(4) >= 2) CHECK(encode_entry(*e) == seeds.at(name));  // versions kcache writes
    CHECK((name == "valid_diagnostics" || name == "golden_v3_record") == !e->diagnostics.empty());
    CHECK((name == "valid_pipeline_cache") == (e->payload_kind == PayloadKind::pipeline_cache));
    CHECK((name == "valid_empty") == e->payload.empty());
    if (name != "valid_empty") {  // an empty kernel name is not one a bundle may carry
      auto ok = validate_entry_record(*e);
      CHECK_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
    }
  }
  for (const auto& name : hostile) {
    CAPTURE(name);
    auto e = decode_entry(seeds.at(name));
    if (!e) FAIL(name, " is refused by the decoder: ", e.error().message);
    auto ok = validate_entry_record(*e);
    CHECK_MESSAGE(!ok.has_value(), name, " passes validation");
  }
  for (const auto& name : broken) {
    CAPTURE(name);
    auto e = decode_entry(seeds.at(name));
    REQUIRE_MESSAGE(!e.has_value(), name, " is accepted");
    CHECK(!e.error().message.empty());
  }
}
