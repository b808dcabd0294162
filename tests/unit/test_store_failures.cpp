// Failure records in the store (layout_internal.hpp "Failures"), over both
// implementations: kept apart from entries, scoped by namespace, deleted by a
// put of the kernel's entry, removed by key like gc's entries; and the LMDB
// store's upgrade from layout 2, which had no failures database.
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/store.hpp"

#include "raw_lmdb.hpp"
#include "test_support.hpp"

#include <lmdb.h>

namespace kcache::store {
namespace {

struct MemoryFactory {
  static std::unique_ptr<Store> make(const test::TempDir&) { return make_memory_store(); }
};

struct LmdbFactory {
  static std::unique_ptr<Store> make(const test::TempDir& dir) {
    auto store = open_lmdb_store(dir.path() / "store");
    REQUIRE_MESSAGE(store.has_value(), store.error().message);
    return std::move(*store);
  }
};

const Namespace k_ns = spirv_namespace("vulkan1.2");
const Namespace k_other = spirv_namespace("vulkan1.3");

Failure make_failure(const std::string& kernel, const std::string& ir = "ir-1") {
  Failure f;
  f.kernel = kernel;
  f.phase = FailurePhase::glslang;
  f.key = {util::hash_string("id:" + kernel), util::hash_string(ir)};
  f.id_fields = {{"name", kernel}};
  f.ir_fields = {{"glslang", "11.0"}};
  f.inputs = {{"shaders/" + kernel + ".comp", util::hash_string("src")}};
  f.category = Category::compile_failed;
  f.message = kernel + ".comp:3: 'x' : undeclared identifier";
  f.created = 1'700'000'000;
  return f;
}

Entry make_entry(const std::string& kernel) {
  Entry e;
  e.kernel = kernel;
  e.key = {util::hash_string("id:" + kernel), util::hash_string("ir-2")};
  e.payload = {1, 2, 3, 4};
  e.created = 1'700'000'001;
  seal_payload(e);
  return e;
}

std::optional<Failure> failure_of(Store& store, const Namespace& ns, const std::string& kernel) {
  std::optional<Failure> out;
  auto r = store.read([&](Reader& reader) -> Result<void> {
    out = KCACHE_TRY(reader.failure(ns.name(), kernel));
    return {};
  });
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return out;
}

std::vector<std::string> failure_names(Store& store, const Namespace& ns) {
  std::vector<std::string> out;
  auto r = store.read([&](Reader& reader) {
    return reader.scan_failures(ns.name(), [&](Failure&& f, std::size_t bytes) {
      CHECK(bytes > f.kernel.size());
      out.push_back(f.kernel);
      return true;
    });
  });
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("store: failure records are kept apart from entries, per namespace", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  std::vector<Failure> failures{make_failure("b"), make_failure("a")};
  REQUIRE(store->put_failures(k_ns, failures).has_value());

  auto a = failure_of(*store, k_ns, "a");
  REQUIRE(a.has_value());
  CHECK(*a == make_failure("a"));
  CHECK_FALSE(failure_of(*store, k_other, "a").has_value());
  CHECK(failure_names(*store, k_ns) == std::vector<std::string>{"a", "b"});
  CHECK(failure_names(*store, k_other).empty());

  // Not entries: no scan, count or get sees them; the namespace is recorded.
  auto r = store->read([&](Reader& reader) -> Result<void> {
    CHECK_FALSE(KCACHE_TRY(reader.get(k_ns.name(), "a")).has_value());
    auto infos = KCACHE_TRY(reader.namespaces());
    REQUIRE(infos.size() == 1);
    CHECK(infos[0].ns.name() == k_ns.name());
    CHECK(infos[0].entries == 0);
    return {};
  });
  REQUIRE(r.has_value());

  // A newer failure of the same kernel replaces the older one.
  Failure again = make_failure("a", "ir-9");
  again.message = "another message";
  REQUIRE(store->put_failures(k_ns, std::span(&again, 1)).has_value());
  CHECK(failure_of(*store, k_ns, "a")->message == "another message");
}

TEST_CASE_TEMPLATE("store: putting a kernel's entry deletes its failure record", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  std::vector<Failure> failures{make_failure("a"), make_failure("b")};
  REQUIRE(store->put_failures(k_ns, failures).has_value());
  std::vector<Entry> entries{make_entry("a")};
  REQUIRE(store->put(k_ns, entries).has_value());
  CHECK_FALSE(failure_of(*store, k_ns, "a").has_value());
  CHECK(failure_of(*store, k_ns, "b").has_value());  // only the kernel that built

  // Also when the entry was already there (an identical re-put).
  REQUIRE(store->put_failures(k_ns, std::span(&failures[0], 1)).has_value());
  auto before = store->last_transaction_id();
  REQUIRE(store->put(k_ns, entries).has_value());
  CHECK_FALSE(failure_of(*store, k_ns, "a").has_value());
  CHECK(*store->last_transaction_id() != *before);
}

TEST_CASE_TEMPLATE("store: remove_failures removes by key and keeps rewritten records", F, MemoryFactory, LmdbFactory) {
  test::TempDir dir;
  auto store = F::make(dir);
  std::vector<Failure> failures{make_failure("a"), make_failure("b")};
  REQUIRE(store->put_failures(k_ns, failures).has_value());
  std::vector<RemoveItem> items{
      {"a", make_failure("a").key}, {"b", make_failure("b", "ir-other").key}, {"c", make_failure("c").key}};
  auto done = store->remove_failures(k_ns.name(), items);
  REQUIRE_MESSAGE(done.has_value(), done.error().message);
  CHECK(done->removed == 1);
  CHECK(done->changed == 1);
  CHECK(done->absent == 1);
  CHECK(done->record_bytes > 0);
  CHECK(failure_names(*store, k_ns) == std::vector<std::string>{"b"});
}

TEST_CASE("store: the removal rule keeps a rewritten record and a damaged entry, drops a damaged failure") {
  const auto key = internal::entry_key(k_ns.name(), "a");
  REQUIRE(key.has_value());
  const auto record = encode_failure(make_failure("a"));
  const std::vector<std::uint8_t> damaged = {0x6b, 0x63, 0x00, 0x01};
  using internal::RemovedRecord;
  RemoveSummary s;
  CHECK_FALSE(internal::judge_removal(RemovedRecord::failure, *key, std::nullopt, {"a", make_failure("a").key}, s));
  CHECK(s.absent == 1);
  CHECK_FALSE(internal::judge_removal(RemovedRecord::failure, *key, record, {"a", make_failure("a", "ir-2").key}, s));
  CHECK(s.changed == 1);
  CHECK(internal::judge_removal(RemovedRecord::failure, *key, record, {"a", make_failure("a").key}, s));
  CHECK(s.removed == 1);
  CHECK(s.record_bytes == key->size() + record.size());
  CHECK(internal::judge_removal(RemovedRecord::failure, *key, damaged, {"a", make_failure("a").key}, s));
  CHECK(s.removed == 2);
  CHECK_FALSE(internal::judge_removal(RemovedRecord::entry, *key, damaged, {"a", make_failure("a").key}, s));
  CHECK(s.changed == 2);
}

TEST_CASE("store: a layout-2 store has no failures until its first writable open upgrades it") {
  test::TempDir dir;
  const auto path = dir.path() / "store";
  {
    auto store = open_lmdb_store(path);
    REQUIRE(store.has_value());
    std::vector<Entry> entries{make_entry("a")};
    REQUIRE((*store)->put(k_ns, entries).has_value());
  }
  // Make it what kcache wrote before layout 3: no failures database, schema "2".
  {
    MDB_env* env = nullptr;
    REQUIRE(mdb_env_create(&env) == 0);
    REQUIRE(mdb_env_set_maxdbs(env, 8) == 0);
    REQUIRE(mdb_env_open(env, path.c_str(), 0, 0664) == 0);
    MDB_txn* txn = nullptr;
    REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
    MDB_dbi dbi = 0;
    REQUIRE(mdb_dbi_open(txn, "failures", 0, &dbi) == 0);
    REQUIRE(mdb_drop(txn, dbi, 1) == 0);
    REQUIRE(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
  }
  test::raw_put(path, "meta", "schema", "2");

  {
    OpenOptions ro;
    ro.read_only = true;
    auto store = open_lmdb_store(path, ro);
    REQUIRE_MESSAGE(store.has_value(), store.error().message);
    CHECK_FALSE(failure_of(**store, k_ns, "a").has_value());
    CHECK(failure_names(**store, k_ns).empty());
    // The usage records of layout 2 are still read.
    auto r = (*store)->read([&](Reader& reader) -> Result<void> {
      CHECK(KCACHE_TRY(reader.usage(k_ns.name(), "a")).has_value());
      return {};
    });
    REQUIRE(r.has_value());
  }
  {
    auto store = open_lmdb_store(path);
    REQUIRE_MESSAGE(store.has_value(), store.error().message);
    std::vector<Failure> failures{make_failure("b")};
    REQUIRE((*store)->put_failures(k_ns, failures).has_value());
    CHECK(failure_of(**store, k_ns, "b").has_value());
  }
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_set_maxdbs(env, 8) == 0);
  REQUIRE(mdb_env_open(env, path.c_str(), MDB_RDONLY, 0664) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) == 0);
  MDB_dbi dbi = 0;
  REQUIRE(mdb_dbi_open(txn, "meta", 0, &dbi) == 0);
  std::string key = "schema";
  MDB_val k{key.size(), key.data()}, v{};
  REQUIRE(mdb_get(txn, dbi, &k, &v) == 0);
  CHECK(std::string(static_cast<const char*>(v.mv_data), v.mv_size) == "3");
  mdb_txn_abort(txn);
  mdb_env_close(env);
}

}  // namespace kcache::store
