// Store lifecycle: usage records (last used), the run log, remove_unchanged
// and space(), run over both implementations; then the
// LMDB-only parts: the version-1 upgrade, free-page reuse and compaction.
#include "kcache/store/gc.hpp"
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/lmdb_store_internal.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/hash.hpp"
#include "kcache/util/text.hpp"

#include "test_support.hpp"

#include <lmdb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace kcache::store {
namespace {

namespace fs = std::filesystem;

struct MemoryFactory {
  static std::unique_ptr<Store> make(const test::TempDir&, std::size_t run_log_capacity = k_run_log_capacity) {
    return make_memory_store(util::system_clock(), run_log_capacity);
  }
};

struct LmdbFactory {
  static std::unique_ptr<Store> make(const test::TempDir& dir, std::size_t run_log_capacity = k_run_log_capacity) {
    OpenOptions options;
    options.run_log_capacity = run_log_capacity;
    auto store = open_lmdb_store(dir.path() / "store", options);
    REQUIRE_MESSAGE(store.has_value(), store.error().message);
    return std::move(*store);
  }
};

const Namespace k_ns = spirv_namespace("vulkan1.2");

Entry make_entry(const std::string& kernel, std::size_t size = 100, const std::string& ir = "ir-1") {
  Entry e;
  e.kernel = kernel;
  e.key.id = util::hash_string("id:" + kernel);
  e.key.ir = util::hash_string(ir);
  e.payload.assign(size, static_cast<std::uint8_t>('p'));
  e.created = 1'700'000'000;
  seal_payload(e);
  return e;
}

void put_ok(Store& store, const std::vector<Entry>& entries, const Namespace& ns = k_ns) {
  auto r = store.put(ns, entries);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
}

std::optional<EntryUsage> usage(Store& store, std::string_view kernel, std::string_view ns = k_ns.name()) {
  std::optional<EntryUsage> out;
  auto r = store.read([&](Reader& reader) -> Result<void> {
    out = KCACHE_TRY(reader.usage(ns, kernel));
    return {};
  });
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return out;
}

std::vector<RunRecord> runs(Store& store) {
  std::vector<RunRecord> out;
  auto r = store.read(
      [&](Reader& reader) { return reader.runs([&](RunRecord&& run) { return out.push_back(run), true; }); });
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return out;
}

std::uint64_t txn_id(Store& store) {
  auto id = store.last_transaction_id();
  REQUIRE(id.has_value());
  return *id;
}

void record_ok(Store& store, const UsageBatch& batch) {
  auto r = store.record_usage(batch);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
}

RunRecord make_run(std::uint64_t time, std::uint32_t hits = 3) {
  RunRecord run;
  run.time = time;
  run.command = "build";
  run.kernels = hits + 2;
  run.hits = hits;
  run.compiled = 1;
  run.failed = 1;
  run.wall_us = 1234;
  run.bytes_written = 999;
  run.phases = {{"glslang", 100, 90}, {"spirv-opt", 50, 40}};
  return run;
}

}  // namespace

TEST_CASE_TEMPLATE("store lifecycle: put records when an entry was written; scan_facts reports it", F, MemoryFactory,
                   LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  std::uint64_t before = util::system_clock().now();
  put_ok(*store, {make_entry("a", 100), make_entry("b", 300)});
  auto u = usage(*store, "a");
  REQUIRE(u.has_value());
  CHECK(u->written >= before);
  CHECK(u->written <= util::system_clock().now());
  CHECK(u->last_used == u->written);
  CHECK_FALSE(usage(*store, "missing").has_value());

  std::vector<std::pair<std::string, EntryFacts>> seen;
  auto r = store->read([&](Reader& reader) {
    return reader.scan_facts(k_ns.name(),
                             [&](Entry&& e, const EntryFacts& f) { return seen.emplace_back(e.kernel, f), true; });
  });
  REQUIRE(r.has_value());
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].first == "a");
  CHECK(seen[0].second.usage == u);
  // key + encoded record: more than the payload, and 200 more for b.
  CHECK(seen[0].second.record_bytes > 100);
  CHECK(seen[1].second.record_bytes == seen[0].second.record_bytes + 200);

  SUBCASE("an identical re-put does not rewrite it") {
    std::uint64_t id = txn_id(*store);
    put_ok(*store, {make_entry("a", 100)});
    CHECK(txn_id(*store) == id);
  }
}

TEST_CASE_TEMPLATE("store lifecycle: record_usage touches used entries once per resolution, in one transaction", F,
                   MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  put_ok(*store, {make_entry("a"), make_entry("b"), make_entry("c")});
  std::uint64_t written = usage(*store, "a")->written;
  std::uint64_t id = txn_id(*store);

  std::uint64_t later = written + 3600;
  record_ok(*store, {later, {{k_ns.name(), "a"}, {k_ns.name(), "b"}, {k_ns.name(), "gone"}}, std::nullopt});
  CHECK(txn_id(*store) == id + 1);
  CHECK(usage(*store, "a") == EntryUsage{written, later});
  CHECK(usage(*store, "b") == EntryUsage{written, later});
  CHECK(usage(*store, "c") == EntryUsage{written, written});
  CHECK_FALSE(usage(*store, "gone").has_value());  // a name that is not stored gets no record

  SUBCASE("used again within the resolution: nothing is written at all") {
    record_ok(*store, {later + k_last_used_resolution - 1, {{k_ns.name(), "a"}, {k_ns.name(), "b"}}, std::nullopt});
    CHECK(txn_id(*store) == id + 1);
    CHECK(usage(*store, "a")->last_used == later);
  }
  SUBCASE("an earlier time never moves last_used back") {
    record_ok(*store, {written, {{k_ns.name(), "a"}}, std::nullopt});
    CHECK(usage(*store, "a")->last_used == later);
  }
  SUBCASE("past the resolution: written again") {
    record_ok(*store, {later + k_last_used_resolution, {{k_ns.name(), "a"}}, std::nullopt});
    CHECK(usage(*store, "a")->last_used == later + k_last_used_resolution);
    CHECK(txn_id(*store) == id + 2);
  }
  SUBCASE("usage and the run record go in the same single transaction") {
    record_ok(*store, {later + 7200, {{k_ns.name(), "c"}}, make_run(later + 7200)});
    CHECK(txn_id(*store) == id + 2);
    CHECK(usage(*store, "c")->last_used == later + 7200);
    auto log = runs(*store);
    REQUIRE(log.size() == 1);
    CHECK(log[0] == make_run(later + 7200));
  }
  SUBCASE("a bad namespace is refused before anything is written") {
    auto r = store->record_usage({later, {{"no-slash", "a"}}, make_run(later)});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().category == Category::invalid_argument);
    CHECK(runs(*store).empty());
  }
}

TEST_CASE_TEMPLATE("store lifecycle: the run log keeps the newest run_log_capacity runs, oldest first", F,
                   MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  // The rule, at a capacity a test can fill (k_run_log_capacity is 10,000).
  constexpr std::size_t capacity = 40;
  auto store = F::make(dir, capacity);
  const std::size_t total = capacity + 5;
  for (std::size_t i = 0; i < total; ++i) record_ok(*store, {1000 + i, {}, make_run(1000 + i)});
  auto log = runs(*store);
  REQUIRE(log.size() == capacity);
  CHECK(log.front().time == 1000 + 5);
  CHECK(log.back().time == 1000 + total - 1);
  for (std::size_t i = 1; i < log.size(); ++i) CHECK(log[i].time == log[i - 1].time + 1);
}

TEST_CASE_TEMPLATE("store lifecycle: remove and remove_unchanged delete usage records; rewritten entries stay", F,
                   MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  put_ok(*store, {make_entry("a"), make_entry("b"), make_entry("c")});

  std::vector<std::string> names = {"a"};
  auto removed = store->remove(k_ns.name(), names);
  REQUIRE(removed.has_value());
  CHECK(*removed == 1);
  CHECK_FALSE(usage(*store, "a").has_value());

  // b was listed with its old key, then a concurrent build rewrote it.
  Key old_b = make_entry("b").key;
  put_ok(*store, {make_entry("b", 100, "ir-2")});
  std::vector<RemoveItem> items = {{"b", old_b}, {"c", make_entry("c").key}, {"a", make_entry("a").key}};
  auto summary = store->remove_unchanged(k_ns.name(), items);
  REQUIRE_MESSAGE(summary.has_value(), summary.error().message);
  CHECK(summary->removed == 1);
  CHECK(summary->changed == 1);
  CHECK(summary->absent == 1);
  CHECK(summary->record_bytes > 100);
  CHECK(usage(*store, "b").has_value());
  CHECK_FALSE(usage(*store, "c").has_value());

  std::uint64_t id = txn_id(*store);
  auto nothing = store->remove_unchanged(k_ns.name(), items);
  REQUIRE(nothing.has_value());
  CHECK(nothing->removed == 0);
  CHECK(txn_id(*store) == id);  // nothing removed: no transaction
}

TEST_CASE_TEMPLATE("store lifecycle: space() reports the bytes held", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  put_ok(*store, {make_entry("a", 10000)});
  auto space = store->space();
  REQUIRE_MESSAGE(space.has_value(), space.error().message);
  CHECK(space->file_bytes > 10000);
}

TEST_CASE("store lifecycle: read-only stores refuse record_usage and remove_unchanged") {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  {
    auto store = open_lmdb_store(dir);
    REQUIRE(store.has_value());
    put_ok(**store, {make_entry("a")});
  }
  auto store = open_lmdb_store(dir, {.read_only = true});
  REQUIRE(store.has_value());
  auto r = (*store)->record_usage({util::system_clock().now() + 3600, {{k_ns.name(), "a"}}, make_run(1)});
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::read_only);
  std::vector<RemoveItem> items = {{"a", make_entry("a").key}};
  auto rm = (*store)->remove_unchanged(k_ns.name(), items);
  REQUIRE_FALSE(rm.has_value());
  CHECK(rm.error().category == Category::read_only);
}

// --- records --------------------------------------------------------------

/// `run` encodes, decodes back equal, and every flipped bit and every
/// truncation of its bytes is refused as damage.
static void check_run_round_trip(const RunRecord& run) {
  auto bytes = internal::encode_run(run);
  auto back = internal::decode_run(7, bytes);
  REQUIRE(back.has_value());
  CHECK(*back == run);
  for (std::size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    auto bad = bytes;
    bad[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    auto r = internal::decode_run(7, bad);
    REQUIRE_FALSE(r.has_value());
    CHECK((r.error().category == Category::corruption || r.error().category == Category::version_mismatch));
  }
  for (std::size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(internal::decode_run(7, std::span(bytes).first(n)));
}

TEST_CASE("store lifecycle: run records round-trip and every flipped bit is refused") {
  check_run_round_trip(make_run(1'700'000'123));
  CHECK(internal::run_number(internal::run_key(0x0102030405060708)) == 0x0102030405060708u);
  CHECK(internal::run_key(1) < internal::run_key(256));  // bytewise order is numeric order
  CHECK_FALSE(internal::run_number("short").has_value());
}

TEST_CASE("store lifecycle: a run record with the launcher's command round-trips; every flipped bit is refused") {
  RunRecord run = make_run(1'700'000'400);
  run.command = "glslangValidator";
  run.invocation = Invocation{"glslangValidator", "/p", {"-V", "-o", "a.spv", "a.comp"}, ""};
  check_run_round_trip(run);
}

TEST_CASE("store lifecycle: run record version 2 keeps remote counts; version 1 reads them as 0") {
  RunRecord run = make_run(1'700'000'200);
  run.remote_hit = 70;
  run.remote_misses = 6;
  run.remote_refused = 2;
  run.remote_errors = 3;
  run.remote_bytes_read = 123456;
  run.remote_bytes_written = 7890;
  auto back = internal::decode_run(1, internal::encode_run(run));
  REQUIRE(back.has_value());
  CHECK(*back == run);
  // Version 1 as kcache wrote it before remote caches, built field by field.
  util::ByteWriter w;
  w.raw(util::as_bytes(std::string_view("KCR\x01", 4)));
  w.u16(1);
  w.u64(1'700'000'300);
  w.str("build");
  for (std::uint32_t v : {10u, 7u, 3u, 0u, 0u, 0u}) w.u32(v);
  w.u64(2'000'000);
  w.u64(4096);
  w.u32(1);
  w.str("glslang");
  w.u64(5);
  w.u64(6);
  w.raw(util::hash_bytes(w.bytes()).bytes);
  auto v1 = internal::decode_run(2, w.bytes());
  REQUIRE(v1.has_value());
  CHECK(v1->hits == 7);
  CHECK(v1->compiled == 3);
  CHECK(v1->remote_hit == 0);
  CHECK(v1->remote_bytes_read == 0);
}

TEST_CASE("store lifecycle: usage records are 16 bytes; longer ones (a later version) are read, shorter refused") {
  auto bytes = internal::encode_usage({5, 9});
  CHECK(bytes.size() == internal::k_usage_record_bytes);
  CHECK(internal::decode_usage("k", bytes) == EntryUsage{5, 9});
  auto longer = bytes;
  longer.push_back(0xff);
  CHECK(internal::decode_usage("k", longer) == EntryUsage{5, 9});
  auto r = internal::decode_usage("k", std::span(bytes).first(15));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::corruption);
}

// --- gc planning ----------------------------------------------------------

TEST_CASE("store lifecycle: durations and sizes") {
  using util::parse_duration, util::parse_size;
  CHECK(parse_duration("90s") == 90u);
  CHECK(parse_duration("90m") == 5400u);
  CHECK(parse_duration("12h") == 43200u);
  CHECK(parse_duration("30d") == 30u * 86400);
  CHECK(parse_duration("2w") == 14u * 86400);
  CHECK(parse_duration("0d") == 0u);
  for (auto bad : {"", "30", "d", "1.5h", "-1d", "3x", "10 d", "1e3s"}) {
    auto r = parse_duration(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().category == Category::invalid_argument);
    CHECK(r.error().message.find("30d") != std::string::npos);
  }
  CHECK(parse_size("4096") == 4096u);
  CHECK(parse_size("100K") == 102400u);
  CHECK(parse_size("500M") == 500u << 20);
  CHECK(parse_size("500MiB") == 500u << 20);
  CHECK(parse_size("500mb") == 500u << 20);
  CHECK(parse_size("2G") == std::uint64_t{2} << 30);
  CHECK(parse_size("1.5G") == std::uint64_t{3} << 29);
  CHECK(parse_size("1T") == std::uint64_t{1} << 40);
  CHECK(parse_size("12B") == 12u);
  for (auto bad : {"", "M", "5X", "-5M", "1..5G", "5 M"}) CHECK_FALSE(parse_size(bad).has_value());
}

TEST_CASE("store lifecycle: plan_gc applies each rule and never removes fresh entries unless asked") {
  const std::uint64_t now = 10'000'000;
  const std::uint64_t day = 86400;
  auto c = [&](std::string kernel, std::uint64_t created_days_ago, std::uint64_t used_days_ago, std::uint64_t bytes) {
    GcCandidate g;
    g.ns = "spirv/vulkan1.2";
    g.kernel = std::move(kernel);
    g.created = now - created_days_ago * day;
    g.last_used = now - used_days_ago * day;
    g.bytes = bytes;
    return g;
  };
  std::vector<GcCandidate> cs = {c("old", 40, 1, 100), c("unused", 5, 20, 100), c("recent", 1, 0, 100),
                                 c("stale", 2, 2, 100), c("orphan", 3, 3, 100)};
  cs[3].stale = true;
  cs[4].orphan = true;
  auto names = [&](const GcPlan& p) {
    std::vector<std::string> out;
    for (const auto& v : p.remove) out.push_back(cs[v.index].kernel + ":" + std::string(gc_reason_name(v.reason)));
    return out;
  };
  GcRules base;
  base.now = now;

  GcRules r = base;
  r.stale = true;
  CHECK(names(plan_gc(cs, r)) == std::vector<std::string>{"stale:stale"});
  r = base;
  r.orphans = true;
  CHECK(names(plan_gc(cs, r)) == std::vector<std::string>{"orphan:orphan"});
  r = base;
  r.older_than = 30 * day;
  CHECK(names(plan_gc(cs, r)) == std::vector<std::string>{"old:older_than"});
  r = base;
  r.unused_for = 10 * day;
  CHECK(names(plan_gc(cs, r)) == std::vector<std::string>{"unused:unused_for"});

  SUBCASE("max_size evicts least recently used first until the bound holds") {
    r = base;
    r.max_size = 250;
    auto plan = plan_gc(cs, r);
    CHECK(names(plan) == std::vector<std::string>{"unused:max_size", "orphan:max_size", "stale:max_size"});
    CHECK(plan.scope_bytes_before == 500);
    CHECK(plan.scope_bytes_after == 200);
    CHECK(plan.max_size_reached);
  }
  SUBCASE("fresh entries are protected, even from max_size, unless include_fresh") {
    for (auto& g : cs) g.fresh = !g.stale && !g.orphan;
    r = base;
    r.older_than = 30 * day;
    r.max_size = 150;
    auto plan = plan_gc(cs, r);
    CHECK(names(plan) == std::vector<std::string>{"orphan:max_size", "stale:max_size"});
    CHECK(plan.kept_fresh == 3);
    CHECK_FALSE(plan.max_size_reached);
    r.include_fresh = true;
    plan = plan_gc(cs, r);
    CHECK(plan.remove.size() == 4);
    CHECK(plan.scope_bytes_after == 100);
    CHECK(plan.max_size_reached);
  }
  SUBCASE("a namespace limits the scope of every rule") {
    cs[0].ns = "spirv/vulkan1.3";
    // Rules built fresh, not copied from `base`: GCC 12 cannot follow an
    // optional<string> through the copies and warns (-Wmaybe-uninitialized).
    GcRules scoped;
    scoped.now = now;
    scoped.older_than = 0;
    scoped.ns = std::string("spirv/vulkan1.3");
    auto plan = plan_gc(cs, scoped);
    CHECK(names(plan) == std::vector<std::string>{"old:older_than"});
    CHECK(plan.scope_entries == 1);
  }
}

// --- LMDB only ------------------------------------------------------------

namespace {

/// Turns a fresh store into a layout-version-1 one, as an older kcache left
/// it: no usage, runs or failures database, schema "1". No Store may be open on `dir`.
void downgrade_to_v1(const fs::path& dir) {
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_set_maxdbs(env, 8) == 0);
  REQUIRE(mdb_env_open(env, dir.c_str(), 0, 0664) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
  for (const char* db : {"usage", "runs", "failures"}) {
    MDB_dbi dbi = 0;
    REQUIRE(mdb_dbi_open(txn, db, 0, &dbi) == 0);
    REQUIRE(mdb_drop(txn, dbi, 1) == 0);
  }
  MDB_dbi meta = 0;
  REQUIRE(mdb_dbi_open(txn, "meta", 0, &meta) == 0);
  std::string key = "schema", value = "1";
  MDB_val k{key.size(), key.data()}, v{value.size(), value.data()};
  REQUIRE(mdb_put(txn, meta, &k, &v, 0) == 0);
  REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
}

std::string schema_of(const fs::path& dir) {
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_set_maxdbs(env, 8) == 0);
  REQUIRE(mdb_env_open(env, dir.c_str(), MDB_RDONLY, 0664) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) == 0);
  MDB_dbi meta = 0;
  REQUIRE(mdb_dbi_open(txn, "meta", 0, &meta) == 0);
  std::string key = "schema";
  MDB_val k{key.size(), key.data()}, v{};
  REQUIRE(mdb_get(txn, meta, &k, &v) == 0);
  std::string out(static_cast<const char*>(v.mv_data), v.mv_size);
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return out;
}

std::unique_ptr<Store> open_ok(const fs::path& dir, const OpenOptions& options = {}) {
  auto store = open_lmdb_store(dir, options);
  REQUIRE_MESSAGE(store.has_value(), store.error().message);
  return std::move(*store);
}

std::uint64_t size_of(const fs::path& p) { return fs::file_size(p); }

/// Runs `fn` in a child that signals `ready` once it holds the store, then
/// waits for the parent to write to `go`. Returns the child's pid.
pid_t hold_in_child(const std::function<bool()>& open_and_hold, int ready_fd, int go_fd) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    bool ok = open_and_hold();
    char c = ok ? 'y' : 'n';
    (void)!::write(ready_fd, &c, 1);
    (void)!::read(go_fd, &c, 1);
    ::_exit(0);
  }
  return pid;
}

}  // namespace

TEST_CASE("lmdb lifecycle: a version-1 store reads without usage and is upgraded by the first writable open") {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  {
    auto store = open_ok(dir);
    put_ok(*store, {make_entry("a")});
  }
  downgrade_to_v1(dir);
  CHECK(schema_of(dir) == "1");
  std::string data_before = *util::read_file(dir / "data.mdb");
  {
    auto store = open_ok(dir, {.read_only = true});
    CHECK_FALSE(usage(*store, "a").has_value());
    CHECK(runs(*store).empty());
    std::size_t n = 0;
    auto r = store->read([&](Reader& reader) {
      return reader.scan_facts(k_ns.name(), [&](Entry&&, const EntryFacts& f) { return ++n, !f.usage.has_value(); });
    });
    REQUIRE(r.has_value());
    CHECK(n == 1);
  }
  CHECK(*util::read_file(dir / "data.mdb") == data_before);  // read-only: no upgrade
  CHECK(schema_of(dir) == "1");
  {
    auto store = open_ok(dir);
    CHECK(schema_of(dir) == "3");                 // the current layout (layout_internal.hpp)
    CHECK_FALSE(usage(*store, "a").has_value());  // nothing invented for old entries
    record_ok(*store, {util::system_clock().now(), {{k_ns.name(), "a"}}, make_run(util::system_clock().now())});
    CHECK(usage(*store, "a")->written == 0);  // unknown: callers fall back to created
    CHECK(runs(*store).size() == 1);
  }
}

TEST_CASE("lmdb lifecycle: deletes free pages that later writes reuse; compact gives them back") {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  std::vector<Entry> entries;
  for (int i = 0; i < 200; ++i) entries.push_back(make_entry("k" + std::to_string(i), 8000));
  std::uint64_t full_size = 0;
  {
    auto store = open_ok(dir);
    put_ok(*store, entries);
    full_size = store->space()->file_bytes;
    std::vector<std::string> names;
    for (int i = 0; i < 150; ++i) names.push_back("k" + std::to_string(i));
    REQUIRE(store->remove(k_ns.name(), names) == 150u);
    auto after = store->space();
    REQUIRE(after.has_value());
    CHECK(after->file_bytes >= full_size);  // LMDB never shrinks the file
    CHECK(after->pages_free * after->page_size > 150u * 8000);
    // Later writes reuse the free pages. LMDB hands pages freed by
    // transaction T out from transaction T+2 on (T+1 may still be read by a
    // snapshot of T), so re-put in two transactions: together they grow the
    // file by less than the entries' own size.
    std::vector<Entry> first(entries.begin(), entries.begin() + 50);
    std::vector<Entry> second(entries.begin() + 50, entries.begin() + 100);
    put_ok(*store, first);
    put_ok(*store, second);
    std::uint64_t grown = store->space()->file_bytes - after->file_bytes;
    CHECK(grown < 100u * 8000);
    REQUIRE(store->remove(k_ns.name(), names) == 100u);
    full_size = store->space()->file_bytes;

    auto busy = compact_lmdb_store(dir);
    REQUIRE_FALSE(busy.has_value());
    CHECK(busy.error().category == Category::busy);  // this process has it open
  }
  auto result = compact_lmdb_store(dir);
  REQUIRE_MESSAGE(result.has_value(), result.error().message);
  CHECK(result->bytes_before == full_size);
  CHECK(result->bytes_after < full_size / 2);
  CHECK(size_of(dir / "data.mdb") == result->bytes_after);
  CHECK_FALSE(fs::exists(dir / fmt::format(".compact-{}", ::getpid())));

  auto store = open_ok(dir);
  std::size_t n = 0;
  auto r = store->read([&](Reader& reader) {
    return reader.scan(k_ns.name(), [&](Entry&& e) {
      CHECK(e == entries[std::stoul(e.kernel.substr(1))]);
      return ++n, true;
    });
  });
  REQUIRE(r.has_value());
  CHECK(n == 50);
  // The store stays writable and consistent after the swap.
  put_ok(*store, {make_entry("new", 10)});
  CHECK(usage(*store, "new").has_value());
  CHECK(store->space()->pages_free < 10);
}

TEST_CASE("lmdb lifecycle: compact refuses while another process has the store open, and changes nothing") {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  open_ok(dir)->put(k_ns, std::vector{make_entry("a", 5000)}).value();
  std::string before = *util::read_file(dir / "data.mdb");

  auto refused_while_held = [&](const std::function<bool()>& hold) {
    int ready[2], go[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(go) == 0);
    pid_t pid = hold_in_child(hold, ready[1], go[0]);
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    REQUIRE(c == 'y');
    auto r = compact_lmdb_store(dir);
    (void)!::write(go[1], "x", 1);
    int status = 0;
    ::waitpid(pid, &status, 0);
    for (int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().category == Category::busy);
    return r.error().message;
  };

  SUBCASE("a kcache process (kcache.lock)") {
    auto message = refused_while_held([&] {
      static std::unique_ptr<Store> held;  // lives until the child exits
      auto s = open_lmdb_store(dir, {.read_only = true});
      if (!s) return false;
      held = std::move(*s);
      return true;
    });
    CHECK(message.find("another kcache process") != std::string::npos);
  }
  SUBCASE("any other LMDB user (lock.mdb)") {
    auto message = refused_while_held([&] {
      MDB_env* env = nullptr;
      mdb_env_create(&env);
      mdb_env_set_maxdbs(env, 8);
      return mdb_env_open(env, dir.c_str(), MDB_RDONLY, 0664) == 0;  // left open until exit
    });
    CHECK(message.find("lock.mdb") != std::string::npos);
  }
  CHECK(*util::read_file(dir / "data.mdb") == before);
  auto result = compact_lmdb_store(dir);  // everyone has gone: it works
  REQUIRE_MESSAGE(result.has_value(), result.error().message);
}

TEST_CASE("lmdb lifecycle: compact refuses what is not a kcache store") {
  test::TempDir tmp;
  CHECK(compact_lmdb_store(tmp.path() / "none").error().category == Category::not_found);
  fs::path dir = tmp.path() / "foreign";
  fs::create_directories(dir);
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_open(env, dir.c_str(), 0, 0664) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
  MDB_dbi dbi = 0;
  REQUIRE(mdb_dbi_open(txn, nullptr, 0, &dbi) == 0);
  std::string k = "x", v = "y";
  MDB_val kv{1, k.data()}, vv{1, v.data()};
  REQUIRE(mdb_put(txn, dbi, &kv, &vv, 0) == 0);
  REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
  std::string before = *util::read_file(dir / "data.mdb");
  auto r = compact_lmdb_store(dir);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::corruption);
  CHECK(*util::read_file(dir / "data.mdb") == before);
}

}  // namespace kcache::store
