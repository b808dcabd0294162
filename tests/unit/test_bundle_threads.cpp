// The reader checks records (digest, decode, validation) on worker threads
// in batches while the caller's thread decompresses the next ones
// (ReadLimits::threads). What a caller sees must not depend on that: the
// same entries in the same order, the first failure at the same entry with
// the same message, the same entries_read() and bytes_read(), whatever the
// thread count, across batch boundaries and around records larger than a
// batch (read and checked on the caller's thread alone).
#include "test_bundle_support.hpp"

using namespace kcache;
using namespace kcache::test;
using bundle::BundleReader;

namespace {

/// What one read of a whole bundle showed its caller.
struct Seen {
  std::vector<Entry> entries;
  std::optional<Error> error;
  std::size_t entries_read = 0;
  std::uint64_t bytes_read = 0;
};

Seen read_with(std::span<const std::uint8_t> bytes, unsigned threads) {
  bundle::ReadLimits limits;
  limits.threads = threads;
  auto reader = BundleReader::open(bytes, limits);
  REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
  Seen seen;
  auto all = [&]() -> Result<void> {
    while (auto e = KCACHE_TRY(reader->next())) seen.entries.push_back(std::move(*e));
    return reader->finish();
  };
  if (auto ok = all(); !ok) seen.error = ok.error();
  seen.entries_read = reader->entries_read();
  seen.bytes_read = reader->bytes_read();
  return seen;
}

/// Many small records (several 256 KiB batches) with two records larger than
/// a batch among them, one at a block's end.
std::vector<Entry> mixed_entries() {
  auto entries = make_entries(400, 1500);
  entries[150] = make_entry(150, 400'000);  // 1.6 MB payload
  entries[151] = make_entry(151, 300'000);
  entries[399] = make_entry(399, 350'000);
  return entries;
}

}  // namespace

TEST_CASE("reader threads: the same entries in index order whatever the thread count") {
  const auto entries = mixed_entries();
  bundle::WriteOptions options;
  options.block_bytes = 2u << 20;  // several frames, so batches cross block ends
  const auto bytes = write_to_bytes(spirv_namespace("vulkan1.2"), entries, options);
  for (unsigned threads : {1u, 2u, 4u, 0u}) {
    CAPTURE(threads);
    auto seen = read_with(bytes, threads);
    REQUIRE_MESSAGE(!seen.error, seen.error->message);
    CHECK(seen.entries == entries);
    CHECK(seen.entries_read == entries.size());
    CHECK(seen.bytes_read == bytes.size());
  }
}

TEST_CASE("reader threads: a bad record is reported at its own entry, after every good one before it") {
  auto entries = mixed_entries();
  // Damage after the index is written: each bad record is well-formed and
  // compresses fine, so only its digest check (on a worker) refuses it.
  for (std::size_t bad : {std::size_t{0}, std::size_t{37}, std::size_t{150}, std::size_t{152}, std::size_t{399}}) {
    CAPTURE(bad);
    auto header = one_block_header(spirv_namespace("vulkan1.2"), entries, 24);
    auto damaged = entries;
    damaged[bad].payload[40] ^= 0x5a;
    seal_payload(damaged[bad]);
    const auto bytes = assemble(header, bundle::internal::compress_frame(records_of(damaged), 1, 24, true));
    const auto one = read_with(bytes, 1);
    REQUIRE(one.error);
    CHECK(one.error->category == Category::corruption);
    CHECK(one.error->message.find(fmt::format("entry {} of {}", bad + 1, entries.size())) != std::string::npos);
    CHECK(one.error->message.find("digest mismatch") != std::string::npos);
    CHECK(one.entries.size() == bad);
    CHECK(one.entries_read == bad);
    CHECK(one.bytes_read < bytes.size());
    for (unsigned threads : {2u, 4u}) {
      CAPTURE(threads);
      const auto many = read_with(bytes, threads);
      REQUIRE(many.error);
      CHECK(many.error->message == one.error->message);
      CHECK(many.entries == one.entries);
      CHECK(many.entries_read == one.entries_read);
      CHECK(many.bytes_read == one.bytes_read);
    }
  }
}

TEST_CASE("reader threads: a truncated bundle fails at the same entry whatever the thread count") {
  const auto entries = mixed_entries();
  const auto bytes = write_to_bytes(spirv_namespace("vulkan1.2"), entries);
  const auto head = split(bytes).head.size();
  for (std::size_t keep : {head + 1000, (head + bytes.size()) / 2, bytes.size() - 100}) {
    CAPTURE(keep);
    const std::span<const std::uint8_t> cut(bytes.data(), keep);
    const auto one = read_with(cut, 1);
    const auto two = read_with(cut, 2);
    REQUIRE(one.error);
    REQUIRE(two.error);
    CHECK(two.error->message == one.error->message);
    CHECK(two.entries_read == one.entries_read);
    CHECK(two.bytes_read == one.bytes_read);
    CHECK(two.entries == one.entries);
    CHECK(one.entries_read < entries.size());
  }
}
