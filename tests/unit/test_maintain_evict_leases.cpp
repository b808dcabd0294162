// Eviction beside a running build (issue 39 item 3): evict_to_limit never
// removes what was written or used since another build's lease started
// (Store::begin_lease), over both stores; a lease whose holder is gone (an
// unlocked lease file, a released lease) protects nothing; and a build's
// recheck_stored says when its entries went all the same.
#include "kcache/engine/recheck.hpp"
#include "kcache/maintain/gc.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/hash.hpp"

#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <fstream>

namespace kcache::evict_leases {
namespace {

namespace fs = std::filesystem;

class SteppedClock final : public util::Clock {
 public:
  std::uint64_t now() const override { return m_now; }
  void set(std::uint64_t t) { m_now = t; }

 private:
  std::atomic<std::uint64_t> m_now{1'000};
};

struct InMemory {
  static std::unique_ptr<store::Store> make(const test::TempDir&, const util::Clock& clock) {
    return store::make_memory_store(clock);
  }
};

struct InLmdb {
  static std::unique_ptr<store::Store> make(const test::TempDir& dir, const util::Clock& clock) {
    store::OpenOptions options;
    options.clock = &clock;
    auto s = store::open_lmdb_store(dir.path() / "store", options);
    REQUIRE_MESSAGE(s.has_value(), s.error().message);
    return std::move(*s);
  }
};

const Namespace k_ns = spirv_namespace("vulkan1.2");

Entry make_entry(const std::string& kernel, std::uint64_t created) {
  Entry e;
  e.kernel = kernel;
  e.key = {util::hash_string("id:" + kernel), util::hash_string("ir:" + kernel)};
  e.payload.assign(400, static_cast<std::uint8_t>('p'));
  e.created = created;
  seal_payload(e);
  return e;
}

void put_at(store::Store& s, SteppedClock& clock, std::uint64_t t, const std::vector<std::string>& kernels) {
  clock.set(t);
  std::vector<Entry> entries;
  for (const auto& k : kernels) entries.push_back(make_entry(k, t));
  auto r = s.put(k_ns, entries);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
}

std::vector<std::string> stored(store::Store& s) {
  std::vector<std::string> out;
  auto r = s.read([&](store::Reader& reader) {
    return reader.scan(k_ns.name(), [&](Entry&& e) { return out.push_back(e.kernel), true; });
  });
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return out;
}

/// Evicts down to 1 byte (everything but what is protected) with a manifest
/// that has none of the kernels (nothing is fresh).
maintain::Eviction evict_all(store::Store& s, const store::Lease* own = nullptr) {
  manifest::Manifest none;
  auto evicted = maintain::evict_to_limit(s, none, compile::Toolchain::installed(), 1, 5'000, own);
  REQUIRE_MESSAGE(evicted.has_value(), evicted.error().message);
  REQUIRE(evicted->has_value());
  return std::move(**evicted);
}

engine::Receipt receipt(const std::string& kernel, engine::Outcome outcome) {
  engine::Receipt r;
  r.kernel = kernel;
  r.ns = k_ns.name();
  r.outcome = outcome;
  r.key = make_entry(kernel, 0).key;
  return r;
}

const std::vector<std::string> k_old = {"o1", "o2", "o3"};
const std::vector<std::string> k_new = {"n1", "n2"};

}  // namespace

TEST_CASE_TEMPLATE("evict leases: a running build's entries outlive an eviction that would take them", F, InMemory,
                   InLmdb) {
  test::TempDir dir;
  SteppedClock clock;
  auto s = F::make(dir, clock);
  put_at(*s, clock, 1'000, k_old);
  // A build starts at 2000 and stores n1, n2 (written at 2000 and 2100).
  auto lease = s->begin_lease(2'000);
  REQUIRE_MESSAGE(lease.has_value(), lease.error().message);
  put_at(*s, clock, 2'000, {"n1"});
  put_at(*s, clock, 2'100, {"n2"});
  auto since = s->oldest_lease();
  REQUIRE(since.has_value());
  CHECK(*since == std::optional<std::uint64_t>(2'000));

  SUBCASE("another process's eviction keeps them, and says so") {
    auto e = evict_all(*s);
    CHECK(e.removed.removed == 3);
    CHECK(e.plan.kept_leased == 2);
    CHECK_FALSE(e.plan.max_size_reached);
    CHECK(stored(*s) == k_new);
    // What the build reported is all there: its recheck passes.
    engine::BuildResult result;
    for (const auto& k : k_new) result.receipts.push_back(receipt(k, engine::Outcome::compiled));
    CHECK(engine::recheck_stored(*s, result).has_value());
  }
  SUBCASE("an old entry used since the lease started is kept too") {
    store::UsageBatch used;
    used.time = 2'050;
    used.used = {{k_ns.name(), "o1"}};
    REQUIRE(s->record_usage(used).has_value());
    auto e = evict_all(*s);
    CHECK(e.removed.removed == 2);
    CHECK(e.plan.kept_leased == 3);
    CHECK(stored(*s) == std::vector<std::string>{"n1", "n2", "o1"});
  }
  SUBCASE("the build's own eviction does not count its own lease") {
    auto e = evict_all(*s, lease->get());
    CHECK(e.removed.removed == 5);
    CHECK(e.plan.kept_leased == 0);
    CHECK(stored(*s).empty());
  }
  SUBCASE("a released lease protects nothing") {
    lease->reset();
    CHECK(s->oldest_lease()->has_value() == false);
    auto e = evict_all(*s);
    CHECK(e.removed.removed == 5);
    CHECK(stored(*s).empty());
  }
}

TEST_CASE("evict leases: an LMDB lease file left unlocked (its build died) protects nothing and is removed") {
  test::TempDir dir;
  SteppedClock clock;
  auto s = InLmdb::make(dir, clock);
  put_at(*s, clock, 1'000, k_old);
  // Held by this process: an eviction (another open file) sees it locked.
  auto lease = s->begin_lease(2'000);
  REQUIRE_MESSAGE(lease.has_value(), lease.error().message);
  const fs::path leases = dir.path() / "store" / "leases";
  CHECK(fs::is_regular_file(leases / (*lease)->id()));
  put_at(*s, clock, 2'000, k_new);
  CHECK(evict_all(*s).plan.kept_leased == 2);
  CHECK(stored(*s) == k_new);
  lease->reset();
  CHECK(fs::is_empty(leases));

  // A dead build's lease: the file is there, started before n1 and n2, but
  // nobody holds its lock.
  const fs::path dead = leases / "4194304.00000000deadbeef";
  std::ofstream(dead) << "kcache-lease 1\nstarted 1500\npid 4194304\n";
  auto since = s->oldest_lease();
  REQUIRE(since.has_value());
  CHECK_FALSE(since->has_value());
  CHECK_FALSE(fs::exists(dead));  // removed by whoever found it unlocked
  std::ofstream(dead) << "kcache-lease 1\nstarted 1500\npid 4194304\n";
  auto e = evict_all(*s);
  CHECK(e.plan.kept_leased == 0);
  CHECK(e.removed.removed == 2);
  CHECK(stored(*s).empty());
  CHECK_FALSE(fs::exists(dead));
}

TEST_CASE("evict leases: recheck_stored fails, naming them, when reported entries are gone or replaced") {
  SteppedClock clock;
  auto s = store::make_memory_store(clock);
  put_at(*s, clock, 1'000, {"a", "b", "c"});
  engine::BuildResult result;
  for (const auto& k : {"a", "b", "c"}) result.receipts.push_back(receipt(k, engine::Outcome::hit));
  result.receipts.push_back(receipt("f", engine::Outcome::failed));  // not stored: not checked
  bool called = false;
  CHECK(engine::recheck_stored(*s, result, [&] { called = true; }).has_value());
  CHECK(called);

  // b evicted, c rewritten by another build with another key.
  REQUIRE(s->remove(k_ns.name(), std::vector<std::string>{"b"}).has_value());
  Entry other = make_entry("c", 1'000);
  other.key.ir = util::hash_string("another ir");
  REQUIRE(s->put(k_ns, std::vector<Entry>{other}).has_value());
  auto checked = engine::recheck_stored(*s, result);
  REQUIRE_FALSE(checked.has_value());
  CHECK(checked.error().category == Category::busy);
  const auto& m = checked.error().message;
  CHECK_MESSAGE(m.find("2 of the 3 kernels") != std::string::npos, m);
  CHECK_MESSAGE(m.find("b (spirv/vulkan1.2), c (spirv/vulkan1.2)") != std::string::npos, m);
  CHECK_MESSAGE(m.find("1 gone, 1 replaced") != std::string::npos, m);
  CHECK_MESSAGE(m.find("run the build again") != std::string::npos, m);
}

}  // namespace kcache::evict_leases
