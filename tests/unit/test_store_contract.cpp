// The Store contract, run over every implementation: the
// memory store and the LMDB store must behave the same for every case here.
#include "kcache/store/memory_store_internal.hpp"
#include "kcache/store/store.hpp"

#include "test_support.hpp"

#include <lmdb.h>

#include <algorithm>
#include <set>
#include <thread>

namespace kcache::store {
namespace {

// Each factory makes a store and can damage one of its entry records (stored
// bytes under an entry key that fail the record's checks), as a damaged
// store file would hold them.
struct MemoryFactory {
  static std::unique_ptr<Store> make(const test::TempDir&) { return make_memory_store(); }
  static void damage_entry(std::unique_ptr<Store>& store, const test::TempDir&, const std::string& key) {
    std::string junk = "not an entry record";
    auto r = internal::put_raw_entry_record(*store, key, std::vector<std::uint8_t>(junk.begin(), junk.end()));
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
  }
};

struct LmdbFactory {
  static std::unique_ptr<Store> make(const test::TempDir& dir) {
    auto store = open_lmdb_store(dir.path() / "store");
    REQUIRE_MESSAGE(store.has_value(), store.error().message);
    return std::move(*store);
  }
  /// Closes the store, writes junk under `key` with the raw LMDB API, reopens.
  static void damage_entry(std::unique_ptr<Store>& store, const test::TempDir& dir, const std::string& key) {
    store.reset();
    std::string junk = "not an entry record";
    MDB_env* env = nullptr;
    REQUIRE(mdb_env_create(&env) == 0);
    REQUIRE(mdb_env_set_maxdbs(env, 8) == 0);
    REQUIRE(mdb_env_open(env, (dir.path() / "store").c_str(), 0, 0664) == 0);
    MDB_txn* txn = nullptr;
    REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
    MDB_dbi dbi = 0;
    REQUIRE(mdb_dbi_open(txn, "entries", 0, &dbi) == 0);
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v{junk.size(), junk.data()};
    REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
    REQUIRE(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
    store = make(dir);
  }
};

Entry make_entry(const std::string& kernel, const std::string& payload, const std::string& ir = "ir-1") {
  Entry e;
  e.kernel = kernel;
  e.key.id = util::hash_string("id:" + kernel);
  e.key.ir = util::hash_string(ir);
  e.id_fields = {{"name", kernel}, {"entry", "main"}};
  e.ir_fields = {{"glslang", "11.0"}};
  e.inputs = {{"shaders/" + kernel + ".comp", util::hash_string(payload)}};
  e.payload.assign(payload.begin(), payload.end());
  e.created = 1'700'000'000;
  e.origin_detail = "unit test";
  seal_payload(e);
  return e;
}

const Namespace k_ns = spirv_namespace("vulkan1.2");

std::uint64_t txn_id(Store& store) {
  auto id = store.last_transaction_id();
  REQUIRE(id.has_value());
  return *id;
}

std::optional<Entry> get(Store& store, std::string_view ns_name, std::string_view kernel) {
  std::optional<Entry> out;
  auto r = store.read([&](Reader& reader) -> Result<void> {
    out = KCACHE_TRY(reader.get(ns_name, kernel));
    return {};
  });
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return out;
}

std::vector<std::string> scan_names(Store& store, std::string_view ns_name, std::size_t limit = SIZE_MAX) {
  std::vector<std::string> names;
  auto r = store.read([&](Reader& reader) {
    return reader.scan(ns_name, [&](Entry&& e) {
      names.push_back(e.kernel);
      return names.size() < limit;
    });
  });
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return names;
}

std::vector<NamespaceInfo> list_namespaces(Store& store) {
  std::vector<NamespaceInfo> out;
  auto r = store.read([&](Reader& reader) -> Result<void> {
    out = KCACHE_TRY(reader.namespaces());
    return {};
  });
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return out;
}

PutSummary put_ok(Store& store, const Namespace& ns, const std::vector<Entry>& entries) {
  auto r = store.put(ns, entries);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return *r;
}

}  // namespace

TEST_CASE_TEMPLATE("store: put then get returns the same entry", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  CHECK_FALSE(store->read_only());
  std::vector<Entry> entries = {make_entry("matmul_f16", "spirv bytes 1"), make_entry("reduce", "spirv bytes 2")};

  auto summary = put_ok(*store, k_ns, entries);
  CHECK(summary.written == 2);
  CHECK(summary.replaced == 0);
  CHECK(summary.already_present == 0);

  CHECK(get(*store, k_ns.name(), "matmul_f16") == entries[0]);
  CHECK(get(*store, k_ns.name(), "reduce") == entries[1]);
  CHECK_FALSE(get(*store, k_ns.name(), "missing").has_value());
  CHECK_FALSE(get(*store, "spirv/vulkan1.3", "reduce").has_value());
}

TEST_CASE_TEMPLATE("store: get_head returns the stored entry's head", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  std::vector<Entry> entries = {make_entry("matmul_f16", "spirv bytes 1")};
  put_ok(*store, k_ns, entries);
  REQUIRE(store->read([&](Reader& reader) -> Result<void> {
    auto head = reader.get_head(k_ns.name(), "matmul_f16");
    REQUIRE(head);
    REQUIRE(head->has_value());
    CHECK((*head)->kernel == "matmul_f16");
    CHECK((*head)->key == entries[0].key);
    CHECK((*head)->inputs == entries[0].inputs);
    CHECK((*head)->id_fields == entries[0].id_fields);
    CHECK((*head)->payload_bytes == entries[0].payload.size());
    auto none = reader.get_head(k_ns.name(), "missing");
    REQUIRE(none);
    CHECK_FALSE(none->has_value());
    return {};
  }));
}

TEST_CASE_TEMPLATE("store: identical re-puts are already_present, changes are replaced", F, MemoryFactory,
                   LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  Entry a = make_entry("a", "payload a");
  Entry b = make_entry("b", "payload b");
  put_ok(*store, k_ns, {a, b});
  std::uint64_t before = txn_id(*store);

  SUBCASE("the same entries again change nothing, not even the transaction id") {
    auto summary = put_ok(*store, k_ns, {a, b});
    CHECK(summary.already_present == 2);
    CHECK(summary.written == 0);
    CHECK(summary.replaced == 0);
    CHECK(txn_id(*store) == before);
  }
  SUBCASE("same key and payload but other metadata is already_present and keeps the stored record") {
    Entry later = a;
    later.created += 3600;
    later.origin_detail = "another host";
    auto summary = put_ok(*store, k_ns, {later});
    CHECK(summary.already_present == 1);
    CHECK(get(*store, k_ns.name(), "a") == a);
    CHECK(txn_id(*store) == before);
  }
  SUBCASE("another payload replaces") {
    Entry changed = make_entry("a", "new payload");
    auto summary = put_ok(*store, k_ns, {changed, b});
    CHECK(summary.replaced == 1);
    CHECK(summary.already_present == 1);
    CHECK(get(*store, k_ns.name(), "a") == changed);
    CHECK(txn_id(*store) != before);
  }
  SUBCASE("another ir with the same payload replaces (a stale entry refreshed)") {
    Entry refreshed = make_entry("a", "payload a", "ir-2");
    auto summary = put_ok(*store, k_ns, {refreshed});
    CHECK(summary.replaced == 1);
    CHECK(get(*store, k_ns.name(), "a") == refreshed);
  }
  SUBCASE("a kernel twice in one batch: written, then compared with the first copy") {
    Entry c1 = make_entry("c", "first");
    Entry c2 = make_entry("c", "second");
    auto summary = put_ok(*store, k_ns, {c1, c1, c2});
    CHECK(summary.written == 1);
    CHECK(summary.already_present == 1);
    CHECK(summary.replaced == 1);
    CHECK(get(*store, k_ns.name(), "c") == c2);
  }
}

TEST_CASE_TEMPLATE("store: a batch with an invalid entry writes nothing", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  put_ok(*store, k_ns, {make_entry("existing", "x")});
  std::uint64_t before = txn_id(*store);

  std::size_t max_kernel = k_max_key_bytes - k_ns.name().size() - 1;
  std::string too_long(max_kernel + 1, 'k');
  std::vector<Entry> batch = {make_entry("fresh", "y"), make_entry(too_long, "z"), make_entry("existing", "changed")};
  auto r = store->put(k_ns, batch);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::invalid_argument);
  CHECK(r.error().message.find("kernel name too long") != std::string::npos);

  CHECK_FALSE(get(*store, k_ns.name(), "fresh").has_value());
  CHECK(get(*store, k_ns.name(), "existing") == make_entry("existing", "x"));
  CHECK(txn_id(*store) == before);

  SUBCASE("the longest allowed name is accepted") {
    std::string longest(max_kernel, 'k');
    CHECK(put_ok(*store, k_ns, {make_entry(longest, "z")}).written == 1);
    CHECK(get(*store, k_ns.name(), longest).has_value());
  }
  SUBCASE("an empty kernel name is refused") {
    auto empty = store->put(k_ns, std::vector{make_entry("", "z")});
    REQUIRE_FALSE(empty.has_value());
    CHECK(empty.error().category == Category::invalid_argument);
  }
  SUBCASE("a malformed namespace is refused") {
    Namespace bad{"spirv", "", {}};
    auto refused = store->put(bad, std::vector{make_entry("k", "z")});
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().category == Category::invalid_argument);
  }
  SUBCASE("reading with a too-long name is invalid_argument, not a silent miss") {
    auto read = store->read([&](Reader& reader) -> Result<void> {
      KCACHE_TRY(reader.get(k_ns.name(), too_long));
      return {};
    });
    REQUIRE_FALSE(read.has_value());
    CHECK(read.error().category == Category::invalid_argument);
  }
}

TEST_CASE_TEMPLATE("store: scan visits one namespace in kernel-name order and stops early", F, MemoryFactory,
                   LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  put_ok(
      *store, k_ns,
      {make_entry("c", "3"), make_entry("a", "1"), make_entry("b_2", "2"), make_entry("b", "2"), make_entry("B", "0")});
  // Names that share a prefix with k_ns must not leak into its scan.
  put_ok(*store, spirv_namespace("vulkan1.20"), {make_entry("a", "other")});
  put_ok(*store, spirv_namespace("vulkan1"), {make_entry("z", "other")});

  CHECK(scan_names(*store, k_ns.name()) == std::vector<std::string>{"B", "a", "b", "b_2", "c"});
  CHECK(scan_names(*store, k_ns.name(), 2) == std::vector<std::string>{"B", "a"});
  CHECK(scan_names(*store, "spirv/vulkan1.20") == std::vector<std::string>{"a"});
  CHECK(scan_names(*store, "spirv/vulkan1.3").empty());

  auto bad = store->read([](Reader& reader) { return reader.scan("no-slash", [](Entry&&) { return true; }); });
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().category == Category::invalid_argument);
}

TEST_CASE_TEMPLATE("store: namespaces() lists records with counts and payload bytes", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  CHECK(list_namespaces(*store).empty());

  Namespace device = vulkan_namespace(FingerprintRecord{{{"vendorID", "0x10de"},
                                                         {"deviceID", "0x2335"},
                                                         {"driverVersion", "580.159"},
                                                         {"pipelineCacheUUID", "00112233445566778899aabbccddeeff"}}});
  put_ok(*store, k_ns, {make_entry("a", "12345"), make_entry("b", "123")});
  put_ok(*store, device, {make_entry("a", std::string(1000, 'p'))});
  put_ok(*store, spirv_namespace("vulkan1.3"), {});  // records the namespace alone

  auto list = list_namespaces(*store);
  REQUIRE(list.size() == 3);
  std::sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.ns.name() < y.ns.name(); });
  CHECK(list[0].ns == k_ns);
  CHECK(list[0].entries == 2);
  CHECK(list[0].payload_bytes == 8);
  CHECK(list[1].ns == spirv_namespace("vulkan1.3"));
  CHECK(list[1].entries == 0);
  CHECK(list[2].ns == device);  // the full fingerprint record, field by field
  CHECK(list[2].entries == 1);
  CHECK(list[2].payload_bytes == 1000);
}

TEST_CASE_TEMPLATE("store: namespace_records() lists namespaces without reading any entry", F, MemoryFactory,
                   LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  auto records = [&] {
    std::vector<NamespaceRecord> out;
    auto r = store->read([&](Reader& reader) -> Result<void> {
      out = KCACHE_TRY(reader.namespace_records());
      return {};
    });
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    return out;
  };
  CHECK(records().empty());

  Namespace device = vulkan_namespace(FingerprintRecord{{{"vendorID", "0x10de"},
                                                         {"deviceID", "0x2335"},
                                                         {"driverVersion", "580.159"},
                                                         {"pipelineCacheUUID", "00112233445566778899aabbccddeeff"}}});
  put_ok(*store, k_ns, {make_entry("a", "12345"), make_entry("b", "123")});
  put_ok(*store, device, {make_entry("a", std::string(1000, 'p'))});
  put_ok(*store, spirv_namespace("vulkan1.3"), {});  // records the namespace alone
  F::damage_entry(store, dir, k_ns.name() + '\x1f' + "b");

  // Counting decodes every entry, so it meets the damaged record: it skips
  // it, counts the rest and reports it in damaged()...
  std::vector<NamespaceInfo> infos;
  std::vector<DamagedEntry> damaged;
  auto counted = store->read([&](Reader& reader) -> Result<void> {
    infos = KCACHE_TRY(reader.namespaces());
    damaged = reader.damaged();
    return {};
  });
  REQUIRE_MESSAGE(counted.has_value(), counted.error().message);
  REQUIRE(infos.size() == 3);
  CHECK(infos[0].entries == 1);
  CHECK(infos[0].payload_bytes == 5);
  REQUIRE(damaged.size() == 1);
  CHECK(damaged[0].ns == k_ns.name());
  CHECK(damaged[0].kernel == "b");
  CHECK(damaged[0].error.category == Category::corruption);

  // ...listing reads the namespace records alone, in name order, so it never meets it.
  auto list = records();
  REQUIRE(list.size() == 3);
  CHECK(list[0].ns == k_ns);
  CHECK(list[1].ns == spirv_namespace("vulkan1.3"));
  CHECK(list[2].ns == device);  // the full fingerprint record, field by field
  CHECK(get(*store, k_ns.name(), "a") == make_entry("a", "12345"));
}

TEST_CASE_TEMPLATE("store: remove deletes named kernels and keeps the namespace record", F, MemoryFactory,
                   LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  put_ok(*store, k_ns, {make_entry("a", "1"), make_entry("b", "2")});
  std::uint64_t before = txn_id(*store);

  std::vector<std::string> none = {"missing"};
  auto removed = store->remove(k_ns.name(), none);
  REQUIRE(removed.has_value());
  CHECK(*removed == 0);
  CHECK(txn_id(*store) == before);

  std::vector<std::string> kernels = {"a", "missing", "b"};
  removed = store->remove(k_ns.name(), kernels);
  REQUIRE(removed.has_value());
  CHECK(*removed == 2);
  CHECK(txn_id(*store) != before);
  CHECK_FALSE(get(*store, k_ns.name(), "a").has_value());
  CHECK(scan_names(*store, k_ns.name()).empty());

  auto list = list_namespaces(*store);
  REQUIRE(list.size() == 1);
  CHECK(list[0].ns == k_ns);
  CHECK(list[0].entries == 0);
}

TEST_CASE_TEMPLATE("store: transaction ids move with every committed write", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  std::uint64_t t0 = txn_id(*store);
  put_ok(*store, k_ns, {make_entry("a", "1")});
  std::uint64_t t1 = txn_id(*store);
  CHECK(t1 > t0);
  put_ok(*store, k_ns, {make_entry("b", "1")});
  CHECK(txn_id(*store) > t1);
}

TEST_CASE_TEMPLATE("store: read() passes the callback's error through", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  auto r = store->read([](Reader&) -> Result<void> { return fail(Category::busy, "from the callback"); });
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::busy);
  CHECK(r.error().message == "from the callback");
}

TEST_CASE_TEMPLATE("store: a reader sees one snapshot while another thread writes", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  put_ok(*store, k_ns, {make_entry("a", "1")});
  auto r = store->read([&](Reader& reader) -> Result<void> {
    std::thread writer([&] { put_ok(*store, k_ns, {make_entry("b", "2")}); });
    writer.join();
    CHECK_FALSE(KCACHE_TRY(reader.get(k_ns.name(), "b")).has_value());
    return {};
  });
  REQUIRE(r.has_value());
  CHECK(get(*store, k_ns.name(), "b").has_value());
}

TEST_CASE_TEMPLATE("store: concurrent overlapping puts store every entry once", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  constexpr int k_threads = 4, k_per_thread = 40;
  // Thread t writes kernels [t*20, t*20+40): each half is shared with a neighbour.
  std::vector<PutSummary> summaries(k_threads);
  std::vector<std::string> errors;
  std::mutex errors_mutex;
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < k_per_thread; i += 5) {
        std::vector<Entry> batch;
        for (int j = i; j < i + 5; ++j) {
          int n = t * 20 + j;
          batch.push_back(make_entry("k" + std::to_string(1000 + n), "payload " + std::to_string(n)));
        }
        auto r = store->put(k_ns, batch);
        if (!r) {
          std::lock_guard lock(errors_mutex);
          errors.push_back(r.error().message);
          continue;
        }
        summaries[t].written += r->written;
        summaries[t].replaced += r->replaced;
        summaries[t].already_present += r->already_present;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(errors.empty());

  constexpr int k_union = (k_threads - 1) * 20 + k_per_thread;
  std::size_t written = 0, replaced = 0, present = 0;
  for (const auto& s : summaries) {
    written += s.written;
    replaced += s.replaced;
    present += s.already_present;
  }
  CHECK(written == k_union);
  CHECK(replaced == 0);
  CHECK(present == k_threads * k_per_thread - k_union);
  auto names = scan_names(*store, k_ns.name());
  CHECK(names.size() == k_union);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == k_union);
  auto list = list_namespaces(*store);
  REQUIRE(list.size() == 1);
  CHECK(list[0].entries == k_union);
}

}  // namespace kcache::store
