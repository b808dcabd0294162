// engine::build()'s outcomes, one per receipt kind, with real glslang compiles
// of tiny shaders into the memory store, and through test::FailingStore where
// the store must refuse: compiled, hit, stale_replaced, failed (kept_stale),
// refused_write, shared_compile; plus what build() and record_run() do when
// the store cannot be read or the usage record cannot be written. Entries are
// stamped by util::FixedClock, so each test knows which run wrote an entry.
#include "kcache/engine/build.hpp"
#include "kcache/manifest/manifest.hpp"

#include "failing_store.hpp"
#include "test_support.hpp"

#include <cstring>
#include <set>

namespace kcache::engine {
namespace {

using test::FailingStore;

constexpr const char* k_ns = "spirv/vulkan1.2";

/// A compute shader whose one constant is VALUE (a define) or `value`.
std::string shader(const std::string& value = "VALUE") {
  return "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = " +
         value + "; }\n";
}

/// One [[kernel]] table.
std::string kernel(const std::string& name, const std::string& source, const std::string& extra = "") {
  return "[[kernel]]\nname = \"" + name + "\"\nsource = \"" + source + "\"\n" + extra;
}

struct Project {
  test::TempDir dir;

  manifest::Manifest manifest(const std::string& toml) {
    dir.write("kcache.toml", toml);
    auto m = manifest::parse_manifest(toml, "kcache.toml", dir.path());
    if (!m) FAIL(m.error().message);
    return std::move(*m);
  }
  /// Builds `toml` into `store`, stamping entries with `clock`.
  BuildResult build(const std::string& toml, store::Store& store, const util::Clock& clock, unsigned jobs = 2) {
    auto m = manifest(toml);
    BuildOptions options;
    options.jobs = jobs;
    options.clock = &clock;
    options.origin = "test_engine_outcomes";
    auto r = engine::build(m, store, options);
    if (!r) FAIL(r.error().message);
    REQUIRE(r->receipts.size() == m.kernels.size());
    return std::move(*r);
  }
};

std::optional<Entry> stored(store::Store& store, std::string_view kernel, std::string_view ns = k_ns) {
  std::optional<Entry> out;
  auto r = store.read([&](store::Reader& reader) -> Result<void> {
    out = KCACHE_TRY(reader.get(ns, kernel));
    return {};
  });
  if (!r) FAIL(r.error().message);
  return out;
}

std::size_t entry_count(store::Store& store) {
  std::size_t n = 0;
  auto r = store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespaces())) n += info.entries;
    return {};
  });
  if (!r) FAIL(r.error().message);
  return n;
}

std::uint64_t txn_id(store::Store& store) {
  auto id = store.last_transaction_id();
  REQUIRE(id.has_value());
  return *id;
}

const Receipt& receipt(const BuildResult& r, std::string_view kernel) {
  for (const auto& rc : r.receipts)
    if (rc.kernel == kernel) return rc;
  FAIL("no receipt for ", kernel);
  return r.receipts.front();
}

/// The stored entry as a compiled receipt says it should be.
void check_written(store::Store& store, const Receipt& r, std::uint64_t created) {
  CAPTURE(r.kernel);
  auto e = stored(store, r.kernel, r.ns);
  REQUIRE(e.has_value());
  CHECK(e->created == created);
  CHECK(e->key == r.key);
  CHECK(e->payload_kind == PayloadKind::spirv);
  CHECK(e->payload.size() == r.bytes);
  REQUIRE(e->payload.size() >= 20);
  std::uint32_t magic = 0;
  std::memcpy(&magic, e->payload.data(), 4);
  CHECK(magic == 0x07230203u);  // SPIR-V
  CHECK(e->origin_kind == OriginKind::built);
  CHECK(e->origin_detail == "test_engine_outcomes");
}

const std::string k_one = kernel("k", "k.comp", "defines = { VALUE = 1 }\n");

}  // namespace

TEST_CASE("build outcome: compiled, then hit on the second run") {
  Project p;
  p.dir.write("k.comp", shader());
  util::FixedClock t1(1'700'000'100), t2(1'700'000'200);
  auto store = store::make_memory_store(t1);

  auto first = p.build(k_one, *store, t1);
  const Receipt& c = first.receipts[0];
  CHECK(c.kernel == "k");
  CHECK(c.ns == k_ns);
  CHECK(outcome_name(c.outcome) == "compiled");
  CHECK(!c.error);
  CHECK(!c.kept_stale);
  CHECK(!c.shared_compile);
  CHECK(c.reason == "not in spirv/vulkan1.2");
  CHECK(c.bytes > 0);
  CHECK(c.times[Phase::glslang].wall_ms > 0);
  CHECK(first.count(Outcome::compiled) == 1);
  CHECK(first.bytes_written == c.bytes);
  check_written(*store, c, t1.now());

  // Nothing changed: a hit, nothing compiled or written, the entry still the first run's.
  const auto txn = txn_id(*store);
  auto second = p.build(k_one, *store, t2);
  const Receipt& h = second.receipts[0];
  CHECK(outcome_name(h.outcome) == "hit");
  CHECK(h.reason.empty());
  CHECK(!h.error);
  CHECK(h.key == c.key);
  CHECK(h.bytes == c.bytes);
  CHECK(h.times[Phase::glslang].wall_ms == 0);
  CHECK(second.bytes_written == 0);
  CHECK(txn_id(*store) == txn);
  check_written(*store, c, t1.now());
}

TEST_CASE("build outcome: stale_replaced after a source edit") {
  Project p;
  p.dir.write("k.comp", shader());
  util::FixedClock t1(1'700'000'100), t2(1'700'000'300);
  auto store = store::make_memory_store(t1);
  auto first = p.build(k_one, *store, t1);
  REQUIRE(first.receipts[0].outcome == Outcome::compiled);
  const auto old = stored(*store, "k").value();

  p.dir.write("k.comp", shader("VALUE + 41u"));
  auto second = p.build(k_one, *store, t2);
  const Receipt& r = second.receipts[0];
  CHECK(outcome_name(r.outcome) == "stale_replaced");
  CHECK(!r.error);
  CHECK(!r.kept_stale);
  CHECK(r.reason.starts_with("stale: "));
  CHECK(r.reason.find("k.comp") != std::string::npos);
  CHECK(r.key != old.key);
  CHECK(second.bytes_written == r.bytes);
  check_written(*store, r, t2.now());
  CHECK(stored(*store, "k")->payload != old.payload);
  CHECK(entry_count(*store) == 1);  // replaced, not added
}

TEST_CASE("build outcome: failed keeps the stored entry (kept_stale)") {
  Project p;
  p.dir.write("k.comp", shader());
  p.dir.write("new.comp", "#version 450\nvoid main() { this does not compile }\n");
  util::FixedClock t1(1'700'000'100), t2(1'700'000'400);
  auto store = store::make_memory_store(t1);
  auto first = p.build(k_one, *store, t1);
  REQUIRE(first.receipts[0].outcome == Outcome::compiled);
  const auto old = stored(*store, "k").value();

  // The stored kernel's source no longer compiles; a new kernel never did.
  p.dir.write("k.comp", "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undeclared_name = 1; }\n");
  auto second = p.build(k_one + kernel("new", "new.comp"), *store, t2);
  const Receipt& r = receipt(second, "k");
  CHECK(outcome_name(r.outcome) == "failed");
  CHECK(r.kept_stale);
  REQUIRE(r.error.has_value());
  CHECK(r.error->category == Category::compile_failed);
  CHECK(r.error->message.find("k.comp") != std::string::npos);
  CHECK(r.reason.starts_with("stale: "));
  const Receipt& n = receipt(second, "new");
  CHECK(outcome_name(n.outcome) == "failed");
  CHECK(!n.kept_stale);  // nothing to keep
  REQUIRE(n.error.has_value());
  CHECK(n.error->category == Category::compile_failed);
  CHECK(second.any_failed());
  CHECK(second.count(Outcome::failed) == 2);
  CHECK(second.bytes_written == 0);

  // The previous entry is still there, untouched; nothing was added for "new".
  auto kept = stored(*store, "k");
  REQUIRE(kept.has_value());
  CHECK(*kept == old);
  CHECK(kept->created == t1.now());
  CHECK(!stored(*store, "new").has_value());
  CHECK(entry_count(*store) == 1);
}

TEST_CASE("build outcome: refused_write when the store's put fails") {
  for (const Category category : {Category::store_full, Category::read_only, Category::io_error}) {
    CAPTURE(category_name(category));
    Project p;
    p.dir.write("k.comp", shader());
    util::FixedClock t1(1'700'000'100), t2(1'700'000'500);
    FailingStore store(store::make_memory_store(t1));
    store.fail(FailingStore::Op::put, category, "no room for k");

    auto r = p.build(k_one, store, t1);  // a refused write is a receipt, not an error
    const Receipt& k = r.receipts[0];
    CHECK(outcome_name(k.outcome) == "refused_write");
    REQUIRE(k.error.has_value());
    CHECK(k.error->category == category);
    CHECK(k.error->message == "injected: no room for k");
    CHECK(!k.kept_stale);
    CHECK(k.bytes > 0);  // it was compiled
    CHECK(r.bytes_written == 0);
    CHECK(r.count(Outcome::refused_write) == 1);
    CHECK(!r.any_failed());
    CHECK(store.failures(FailingStore::Op::put) >= 1);
    CHECK(entry_count(store.inner()) == 0);
    CHECK(!stored(store.inner(), "k").has_value());
    // Compiled but not stored is the build's failure: one error naming it.
    CHECK(r.any_unstored());
    auto unstored = unstored_error(r);
    REQUIRE(unstored.has_value());
    CHECK(unstored->category == category);
    CHECK(unstored->message.find("1 of 1 kernels compiled but could not be stored: k (injected: no room for k)") !=
          std::string::npos);

    // Room again: the same build compiles and stores it (nothing stale was left).
    store.heal(FailingStore::Op::put);
    auto again = p.build(k_one, store, t2);
    CHECK(outcome_name(again.receipts[0].outcome) == "compiled");
    CHECK(again.bytes_written == again.receipts[0].bytes);
    check_written(store.inner(), again.receipts[0], t2.now());
    CHECK(!again.any_unstored());
    CHECK(!unstored_error(again).has_value());
  }
}

TEST_CASE("build outcome: a refused write affects only its own namespace's batch") {
  // Namespaces are written one transaction each, in name order: the first
  // put (vulkan1.2) goes through, the second (vulkan1.3) is refused.
  Project p;
  p.dir.write("k.comp", shader());
  util::FixedClock t1(1'700'000'100);
  FailingStore store(store::make_memory_store(t1));
  store.fail(FailingStore::Op::put, Category::store_full, "map full", 1);
  auto r = p.build(kernel("a", "k.comp", "defines = { VALUE = 1 }\n") +
                       kernel("b", "k.comp", "defines = { VALUE = 2 }\ntarget = \"vulkan1.3\"\n"),
                   store, t1, 1);
  const Receipt& a = receipt(r, "a");
  const Receipt& b = receipt(r, "b");
  CHECK(outcome_name(a.outcome) == "compiled");
  CHECK(outcome_name(b.outcome) == "refused_write");
  REQUIRE(b.error.has_value());
  CHECK(b.error->category == Category::store_full);
  CHECK(r.bytes_written == a.bytes);
  check_written(store.inner(), a, t1.now());
  CHECK(!stored(store.inner(), "b", "spirv/vulkan1.3").has_value());
  CHECK(store.calls(FailingStore::Op::put) == 2);
  CHECK(store.failures(FailingStore::Op::put) == 1);
  // The error names only the unstored kernel and counts what the store kept.
  auto unstored = unstored_error(r);
  REQUIRE(unstored.has_value());
  CHECK(unstored->category == Category::store_full);
  CHECK(unstored->message.find("1 of 2 kernels compiled but could not be stored: b (") != std::string::npos);
  CHECK(unstored->message.find("the other 1 kernels are in the store") != std::string::npos);
}

TEST_CASE("build outcome: identical expansions compile once (shared_compile)") {
  Project p;
  p.dir.write("k.comp", shader());
  util::FixedClock t1(1'700'000'100);
  auto store = store::make_memory_store(t1);
  // "a" and "b" differ only in name; "c" has another define.
  const std::string toml = kernel("a", "k.comp", "defines = { VALUE = 7 }\n") +
                           kernel("b", "k.comp", "defines = { VALUE = 7 }\n") +
                           kernel("c", "k.comp", "defines = { VALUE = 8 }\n");

  SUBCASE("one job: the first in manifest order compiles") {
    auto r = p.build(toml, *store, t1, 1);
    const Receipt& a = receipt(r, "a");
    const Receipt& b = receipt(r, "b");
    const Receipt& c = receipt(r, "c");
    CHECK(outcome_name(a.outcome) == "compiled");
    CHECK(outcome_name(b.outcome) == "compiled");
    CHECK(!a.shared_compile);
    CHECK(b.shared_compile);
    CHECK(!c.shared_compile);
    // Only the compiling kernel spent time in glslang.
    CHECK(a.times[Phase::glslang].wall_ms > 0);
    CHECK(b.times[Phase::glslang].wall_ms == 0);
    CHECK(c.times[Phase::glslang].wall_ms > 0);
    // Each kernel has its own entry, "a" and "b" with the same module.
    check_written(*store, a, t1.now());
    check_written(*store, b, t1.now());
    check_written(*store, c, t1.now());
    CHECK(stored(*store, "a")->payload == stored(*store, "b")->payload);
    CHECK(stored(*store, "a")->payload != stored(*store, "c")->payload);
    CHECK(a.key.ir == b.key.ir);
    CHECK(a.key.id != b.key.id);
    CHECK(r.bytes_written == a.bytes + b.bytes + c.bytes);
  }
  SUBCASE("several jobs: still exactly one compile of a and b") {
    auto r = p.build(toml, *store, t1, 3);
    const Receipt& a = receipt(r, "a");
    const Receipt& b = receipt(r, "b");
    CHECK(a.shared_compile != b.shared_compile);
    CHECK(!receipt(r, "c").shared_compile);
    CHECK(r.count(Outcome::compiled) == 3);
    CHECK(entry_count(*store) == 3);
  }
}

TEST_CASE("build outcome: an unreadable store fails the build before anything is compiled") {
  Project p;
  p.dir.write("k.comp", shader());
  util::FixedClock t1(1'700'000'100);
  FailingStore store(store::make_memory_store(t1));
  store.fail(FailingStore::Op::read, Category::corruption, "snapshot broken");
  auto m = p.manifest(k_one);
  BuildOptions options;
  options.clock = &t1;
  auto r = engine::build(m, store, options);
  REQUIRE(!r.has_value());
  CHECK(r.error().category == Category::corruption);
  CHECK(r.error().message.find("snapshot broken") != std::string::npos);
  CHECK(store.calls(FailingStore::Op::put) == 0);
  store.heal_all();
  CHECK(entry_count(store.inner()) == 0);
}

TEST_CASE("build outcome: record_run writes one run record, or returns the store's refusal") {
  Project p;
  p.dir.write("k.comp", shader());
  util::FixedClock t1(1'700'000'100), t2(1'700'000'600);
  FailingStore store(store::make_memory_store(t1));
  auto first = p.build(k_one, store, t1);
  REQUIRE(first.receipts[0].outcome == Outcome::compiled);

  store.fail(FailingStore::Op::record_usage, Category::store_full, "no room for the run log");
  auto refused = record_run(store, first, t1);
  REQUIRE(!refused.has_value());
  CHECK(refused.error().category == Category::store_full);

  auto runs = [&] {
    std::vector<store::RunRecord> out;
    auto r = store.inner().read([&](store::Reader& reader) {
      return reader.runs([&](store::RunRecord&& run) {
        out.push_back(std::move(run));
        return true;
      });
    });
    REQUIRE(r.has_value());
    return out;
  };
  CHECK(runs().empty());

  store.heal(FailingStore::Op::record_usage);
  auto second = p.build(k_one, store, t2);
  REQUIRE(second.receipts[0].outcome == Outcome::hit);
  REQUIRE(record_run(store, second, t2).has_value());
  auto log = runs();
  REQUIRE(log.size() == 1);
  CHECK(log[0].time == t2.now());
  CHECK(log[0].command == "build");
  CHECK(log[0].kernels == 1);
  CHECK(log[0].hits == 1);
  CHECK(log[0].compiled == 0);
  CHECK(log[0].bytes_written == 0);
}

}  // namespace kcache::engine
