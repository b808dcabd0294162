// The pending run log (store/pending_runs_internal.hpp): a warm no-op
// build's run record goes to runs.pending with no LMDB transaction; the next
// write transaction folds it in, each run once; torn or damaged files are read
// safely. The golden file tests/data/pending_runs/runs-v1.pending is a
// byte-exact fixture of format version 1; set KCACHE_FIXTURE_OUT to a folder
// to write it again.
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/lmdb_store_internal.hpp"
#include "kcache/store/pending_runs_internal.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/hash.hpp"

#include "test_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace kcache::store {
namespace {

namespace fs = std::filesystem;
using internal::PendingLog;

const Namespace k_ns = spirv_namespace("vulkan1.2");

RunRecord make_run(std::uint64_t time, std::uint32_t hits = 3) {
  RunRecord run;
  run.time = time;
  run.command = "build";
  run.kernels = hits;
  run.hits = hits;
  run.wall_us = 20'000 + time % 1000;
  run.phases = {{"hash", 1500, 1400}, {"lookup", 9000, 8000}};
  return run;
}

std::vector<std::uint8_t> bytes_of(const fs::path& path) {
  auto text = util::read_file(path);
  REQUIRE_MESSAGE(text, path.string());
  return {text->begin(), text->end()};
}

void write_bytes(const fs::path& path, std::span<const std::uint8_t> bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::uint8_t> sample_log(std::uint64_t generation, std::initializer_list<RunRecord> runs) {
  auto out = internal::encode_pending_header(generation);
  for (const auto& run : runs) {
    auto record = internal::encode_pending_record(run);
    out.insert(out.end(), record.begin(), record.end());
  }
  return out;
}

std::vector<RunRecord> runs_of(const PendingLog& log) {
  std::vector<RunRecord> out;
  for (const auto& [end, run] : log.runs) out.push_back(run);
  return out;
}

struct LmdbFixture {
  explicit LmdbFixture(std::size_t run_log_capacity = k_run_log_capacity) : capacity(run_log_capacity) {}
  std::size_t capacity;
  test::TempDir dir;
  fs::path path = dir.path() / "store";
  std::unique_ptr<Store> store = open();

  std::unique_ptr<Store> open() {
    OpenOptions options;
    options.run_log_capacity = capacity;
    auto s = open_lmdb_store(path, options);
    REQUIRE_MESSAGE(s.has_value(), s.error().message);
    return std::move(*s);
  }
  void record(std::uint64_t time, std::vector<std::pair<std::string, std::string>> used, std::optional<RunRecord> run) {
    auto r = store->record_usage({time, std::move(used), std::move(run)});
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
  }
  std::vector<RunRecord> runs() {
    std::vector<RunRecord> out;
    auto r = store->read(
        [&](Reader& reader) { return reader.runs([&](RunRecord&& run) { return out.push_back(run), true; }); });
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    return out;
  }
  std::uint64_t txn_id() {
    auto id = store->last_transaction_id();
    REQUIRE(id.has_value());
    return *id;
  }
  fs::path pending() const { return path / internal::k_pending_runs_file; }
  void put(const std::string& kernel) {
    Entry e;
    e.kernel = kernel;
    e.key.id = util::hash_string("id:" + kernel);
    e.key.ir = util::hash_string("ir");
    e.payload.assign(64, 'p');
    e.created = 1'700'000'000;
    seal_payload(e);
    auto r = store->put(k_ns, std::vector{e});
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
  }
};

}  // namespace

TEST_CASE("pending run log: records round-trip; every torn tail and damaged record is ignored from there on") {
  const auto a = make_run(1'700'000'001), b = make_run(1'700'000'002, 7);
  const auto bytes = sample_log(42, {a, b});
  auto log = internal::parse_pending_runs(bytes);
  CHECK(log.generation == 42);
  CHECK(runs_of(log) == std::vector{a, b});
  CHECK(log.valid_end == bytes.size());
  const std::size_t first_end = static_cast<std::size_t>(log.runs[0].first);

  // Every prefix (a write torn anywhere) gives the records it holds whole.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto torn = internal::parse_pending_runs(std::span(bytes).first(n));
    std::size_t whole = n < internal::k_pending_header_bytes ? 0 : n < first_end ? 0 : 1;
    CHECK(torn.runs.size() == whole);
    CHECK(torn.generation == (n < internal::k_pending_header_bytes ? 0u : 42u));
  }
  // A flipped bit anywhere: the header's makes the file hold nothing; a
  // record's drops that record and everything after it.
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto bad = bytes;
    bad[i] ^= 0x10;
    auto damaged = internal::parse_pending_runs(bad);
    if (i < internal::k_pending_header_bytes) {
      // magic, version, reserved (generation bits only change the generation)
      if (i < 8) CHECK(damaged.runs.empty());
      continue;
    }
    CHECK(damaged.runs.size() == (i < first_end ? 0u : 1u));
    CHECK(damaged.valid_end <= bytes.size());
  }
  // A length past the bound is damage, not an allocation.
  auto huge = internal::encode_pending_header(1);
  for (std::uint8_t byte : {0xff, 0xff, 0xff, 0x7f}) huge.push_back(byte);
  CHECK(internal::parse_pending_runs(huge).runs.empty());
  // Zeros (a crash that extended the file but lost its data) hold nothing.
  auto zeros = sample_log(9, {a});
  zeros.resize(zeros.size() + 4096, 0);
  CHECK(runs_of(internal::parse_pending_runs(zeros)) == std::vector{a});
}

TEST_CASE("pending run log: the version-1 golden file reads back, and today's encoder writes it byte for byte") {
  const auto expected = sample_log(0x0123456789abcdef, {make_run(1'700'000'100, 1500), make_run(1'700'000'160, 1500)});
  if (const char* dir = std::getenv("KCACHE_FIXTURE_OUT")) write_bytes(fs::path(dir) / "runs-v1.pending", expected);
  auto golden = bytes_of(fs::path(KCACHE_SOURCE_DIR) / "tests/data/pending_runs/runs-v1.pending");
  CHECK(golden == expected);
  auto log = internal::parse_pending_runs(golden);
  CHECK(log.generation == 0x0123456789abcdef);
  CHECK(runs_of(log) == std::vector{make_run(1'700'000'100, 1500), make_run(1'700'000'160, 1500)});
}

TEST_CASE("pending run log: a launcher run (run record version 3) has its golden file; older runs stay version 2") {
  RunRecord launched = make_run(1'700'000'200, 1);
  launched.command = "glslc";
  launched.invocation = Invocation{"glslc", "/src/build", {"-O", "-DN=4", "-c", "../k.comp", "-o", "k.spv"}, ""};
  RunRecord refused = make_run(1'700'000'201, 0);
  refused.command = "glslc";
  refused.invocation = Invocation{"glslc", "/src/build", {"-S", "k.comp"}, "glslc -S: kcache cannot express it"};
  const auto expected = sample_log(0x0123456789abcdef, {launched, refused, make_run(1'700'000'202)});
  if (const char* dir = std::getenv("KCACHE_FIXTURE_OUT")) write_bytes(fs::path(dir) / "runs-v3.pending", expected);
  auto golden = bytes_of(fs::path(KCACHE_SOURCE_DIR) / "tests/data/pending_runs/runs-v3.pending");
  CHECK(golden == expected);
  CHECK(runs_of(internal::parse_pending_runs(golden)) == std::vector{launched, refused, make_run(1'700'000'202)});
  // Version 2 is still what a run without a command is written as.
  CHECK(internal::encode_run(make_run(1)).at(4) == 2);
  CHECK(internal::encode_run(launched).at(4) == 3);
  // A command too long to keep is recorded without its words.
  RunRecord huge = launched;
  huge.invocation->args.assign(20, std::string(1000, 'x'));
  auto back = internal::decode_run(1, internal::encode_run(huge));
  REQUIRE(back);
  REQUIRE(back->invocation);
  CHECK(back->invocation->args.empty());
  CHECK(back->invocation->tool == "glslc");
}

TEST_CASE("pending run log: an eviction (run record version 4) has its golden file; other runs keep their versions") {
  RunRecord evicted = make_run(1'700'000'300, 0);
  evicted.command = "evict";
  evicted.evicted = 3;
  evicted.evicted_bytes = 123'456;
  RunRecord launched = make_run(1'700'000'301, 1);
  launched.command = "glslc";
  launched.invocation = Invocation{"glslc", "/src/build", {"-c", "k.comp"}, ""};
  launched.evicted = 1;
  launched.evicted_bytes = 900;
  const auto expected = sample_log(0x0123456789abcdef, {evicted, launched});
  if (const char* dir = std::getenv("KCACHE_FIXTURE_OUT")) write_bytes(fs::path(dir) / "runs-v4.pending", expected);
  auto golden = bytes_of(fs::path(KCACHE_SOURCE_DIR) / "tests/data/pending_runs/runs-v4.pending");
  CHECK(golden == expected);
  CHECK(runs_of(internal::parse_pending_runs(golden)) == std::vector{evicted, launched});
  CHECK(internal::encode_run(evicted).at(4) == 4);
  CHECK(internal::encode_run(make_run(1)).at(4) == 2);
  // A truncated version-4 record is damage, not zeros.
  auto bytes = internal::encode_run(evicted);
  bytes.erase(bytes.end() - 16 - 4, bytes.end() - 16);
  CHECK_FALSE(internal::decode_run(1, bytes));
}

TEST_CASE("pending run log: a run with nothing else to write costs no transaction; the next write folds it once") {
  LmdbFixture f;
  f.put("a");
  const std::uint64_t t = util::system_clock().now();
  const std::uint64_t before = f.txn_id();
  // "a" was just written: its last use is within k_last_used_resolution,
  // so the warm run has only its run record to write.
  f.record(t, {{k_ns.name(), "a"}}, make_run(t));
  f.record(t + 1, {{k_ns.name(), "a"}}, make_run(t + 1));
  CHECK(f.txn_id() == before);  // no LMDB transaction committed
  REQUIRE(fs::exists(f.pending()));
  CHECK(f.runs() == std::vector{make_run(t), make_run(t + 1)});       // shown at once
  CHECK(f.open()->read([](Reader&) -> Result<void> { return {}; }));  // another handle opens fine

  // A run that writes usage records folds the pending ones first.
  f.record(t + 2 * k_last_used_resolution, {{k_ns.name(), "a"}}, make_run(t + 2));
  CHECK(f.txn_id() == before + 1);
  CHECK(f.runs() == std::vector{make_run(t), make_run(t + 1), make_run(t + 2)});
  CHECK(internal::parse_pending_runs(bytes_of(f.pending())).runs.empty());  // restarted

  SUBCASE("a crash between the fold's commit and the restart folds nothing twice") {
    f.record(t + 3, {}, make_run(t + 3));
    auto unfolded = bytes_of(f.pending());
    f.record(t + 3 * k_last_used_resolution, {{k_ns.name(), "a"}}, make_run(t + 4));  // folds t+3
    write_bytes(f.pending(), unfolded);  // as if the restart never happened
    CHECK(f.runs() == std::vector{make_run(t), make_run(t + 1), make_run(t + 2), make_run(t + 3), make_run(t + 4)});
    f.record(t + 5, {}, make_run(t + 5));  // appended after the already-folded record
    f.record(t + 4 * k_last_used_resolution, {{k_ns.name(), "a"}}, make_run(t + 6));
    CHECK(f.runs() == std::vector{make_run(t), make_run(t + 1), make_run(t + 2), make_run(t + 3), make_run(t + 4),
                                  make_run(t + 5), make_run(t + 6)});
  }
  SUBCASE("a garbage or torn file costs only its runs") {
    f.record(t + 3, {}, make_run(t + 3));
    auto good = bytes_of(f.pending());
    write_bytes(f.pending(), std::span(good).first(good.size() - 5));  // torn tail
    CHECK(f.runs().size() == 3);
    std::vector<std::uint8_t> garbage(5000);
    for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<std::uint8_t>(i * 131 + 7);
    write_bytes(f.pending(), garbage);
    CHECK(f.runs().size() == 3);
    f.record(t + 4, {}, make_run(t + 4));  // a bad header is restarted by the next append
    CHECK(f.runs() == std::vector{make_run(t), make_run(t + 1), make_run(t + 2), make_run(t + 4)});
  }
  SUBCASE("a log past k_pending_fold_bytes is folded by the next run") {
    const std::size_t per = internal::encode_pending_record(make_run(t)).size();
    const std::size_t n = internal::k_pending_fold_bytes / per + 2;
    for (std::size_t i = 0; i < n; ++i) f.record(t + 3, {}, make_run(t + 3));
    CHECK(f.txn_id() == before + 2);  // exactly one fold
    CHECK(fs::file_size(f.pending()) < per * 3);
    CHECK(f.runs().size() == std::min(3 + n, k_run_log_capacity));
  }
}

TEST_CASE("pending run log: the runs of both are the newest run_log_capacity, oldest first") {
  constexpr std::size_t capacity = 40;  // the rule at a size a test can fill quickly
  LmdbFixture f(capacity);
  f.put("a");
  const std::uint64_t t = util::system_clock().now();
  for (std::size_t i = 0; i < capacity; ++i)
    f.record(t + (i + 2) * k_last_used_resolution, {{k_ns.name(), "a"}}, make_run(i));  // each writes usage
  f.record(t + (capacity + 1) * k_last_used_resolution, {}, make_run(capacity));        // pending
  auto log = f.runs();
  REQUIRE(log.size() == capacity);
  CHECK(log.front() == make_run(1));
  CHECK(log.back() == make_run(capacity));
}

}  // namespace kcache::store
