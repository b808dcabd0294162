// Import policy against hostile bundles (issue 14): a bundle that keeps a
// stored entry's key but carries other module bytes, an older bundle that
// would roll newer entries back, a bundle with no entries, absurd -j values.
// Real SPIR-V comes from the golden bundle bundles/golden/example-v1.kcb (the
// example project's modules), so every entry passes spirv-val and only the
// policy can refuse it. End to end: tests/cli/hostile_import.sh.
#include "kcache/transfer/transfer.hpp"
#include "test_bundle_support.hpp"

#include <climits>
#include <cstdlib>

using namespace kcache;
using namespace kcache::test;
namespace fs = std::filesystem;

namespace {

transfer::BundleStream file(const fs::path& p) { return {p, -1}; }

std::vector<Entry> golden_modules() {
  auto reader = bundle::BundleReader::open_file(fs::path(KCACHE_SOURCE_DIR) / "bundles/golden/example-v1.kcb");
  REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
  std::vector<Entry> out;
  for (;;) {
    auto e = reader->next();
    REQUIRE_MESSAGE(e.has_value(), e.error().message);
    if (!*e) break;
    out.push_back(std::move(**e));
  }
  REQUIRE(out.size() >= 3);
  return out;
}

const Namespace k_ns = spirv_namespace("vulkan1.2");

fs::path bundle_of(const fs::path& path, const std::vector<Entry>& entries, std::uint64_t created = 1'700'000'000) {
  auto src = store::make_memory_store();
  REQUIRE(src->put(k_ns, entries).has_value());
  transfer::ExportOptions options;
  options.created = created;
  auto r = transfer::export_bundle(*src, {}, file(path), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return path;
}

Entry stored(store::Store& s, const std::string& kernel) {
  std::optional<Entry> out;
  REQUIRE(s.read([&](store::Reader& r) -> Result<void> {
             out = KCACHE_TRY(r.get(k_ns.name(), kernel));
             return {};
           }).has_value());
  REQUIRE(out.has_value());
  return *out;
}

}  // namespace

TEST_CASE("import: same key with other module bytes is a conflict, replaced only on request") {
  TempDir tmp;
  auto modules = golden_modules();
  auto dst = store::make_memory_store();
  REQUIRE(dst->put(k_ns, modules).has_value());
  // The attack: kernel 0's key, fields and inputs, kernel 1's module. Every
  // digest is right, and the module is valid SPIR-V.
  Entry swapped = modules[0];
  swapped.payload = modules[1].payload;
  seal_payload(swapped);
  auto path = bundle_of(tmp.path() / "swap.kcb", {swapped, modules[2]});
  auto before = dst->last_transaction_id();

  for (bool dry_run : {true, false}) {
    CAPTURE(dry_run);
    transfer::ImportOptions options;
    options.dry_run = dry_run;
    auto r = transfer::import_bundle(*dst, file(path), options);
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK_FALSE(r->written);
    CHECK(r->replaced == 0);
    REQUIRE(r->conflicts.size() == 1);
    CHECK(r->conflicts[0].kernel == modules[0].kernel);
    CHECK(r->conflicts[0].kind == transfer::ConflictKind::same_key_other_bytes);
    // Listed with the refusals too, so every report names it.
    REQUIRE(r->refused.size() == 1);
    CHECK(r->refused[0].kernel == modules[0].kernel);
    CHECK(r->refused[0].error.message.find("same key") != std::string::npos);
    CHECK(*dst->last_transaction_id() == *before);
    CHECK(stored(*dst, modules[0].kernel).payload == modules[0].payload);
  }

  // --replace: the user asked for it; it is counted as a replacement.
  transfer::ImportOptions options;
  options.replace = true;
  auto r = transfer::import_bundle(*dst, file(path), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->written);
  CHECK(r->replaced == 1);
  CHECK(r->already_present == 1);
  CHECK(r->refused.empty());
  REQUIRE(r->conflicts.size() == 1);  // still named: replaced on request
  CHECK(stored(*dst, modules[0].kernel).payload == modules[1].payload);
}

TEST_CASE("import: an entry older than the stored one is a rollback, replaced only on request") {
  TempDir tmp;
  auto modules = golden_modules();
  // The store holds a newer build of kernels 0 and 1 (another key: other sources).
  auto newer = std::vector<Entry>{modules[0], modules[1]};
  for (auto& e : newer) {
    rebuild_from(e, "newer sources " + e.kernel);
    e.created = 1'760'000'000;
  }
  auto dst = store::make_memory_store();
  REQUIRE(dst->put(k_ns, newer).has_value());
  auto before = dst->last_transaction_id();
  // An older bundle: kernels 0 and 1 as built before, and a new kernel 2.
  auto path = bundle_of(tmp.path() / "old.kcb", {modules[0], modules[1], modules[2]}, 1'700'000'100);

  auto r = transfer::import_bundle(*dst, file(path), {});
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK_FALSE(r->written);
  CHECK(r->replaced == 0);
  REQUIRE(r->conflicts.size() == 2);
  CHECK(r->conflicts[0].kernel == modules[0].kernel);
  CHECK(r->conflicts[0].kind == transfer::ConflictKind::older);
  CHECK(r->conflicts[0].stored_created == 1'760'000'000);
  CHECK(r->conflicts[0].bundle_created == modules[0].created);
  CHECK(r->refused.size() == 2);
  CHECK(*dst->last_transaction_id() == *before);
  CHECK(stored(*dst, modules[0].kernel).key == newer[0].key);

  // A newer bundle replaces stale entries as before (the normal update).
  auto dst2 = store::make_memory_store();
  REQUIRE(dst2->put(k_ns, std::vector<Entry>{modules[0]}).has_value());
  auto update = newer[0];
  rebuild_from(update, "even newer");
  update.created = 1'760'000'100;
  auto up = transfer::import_bundle(*dst2, file(bundle_of(tmp.path() / "new.kcb", {update}, 1'760'000'100)), {});
  REQUIRE_MESSAGE(up.has_value(), up.error().message);
  CHECK(up->conflicts.empty());
  CHECK(up->replaced == 1);

  transfer::ImportOptions options;
  options.replace = true;
  r = transfer::import_bundle(*dst, file(path), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->written);
  CHECK(r->replaced == 2);
  CHECK(r->imported == 1);
  CHECK(stored(*dst, modules[0].kernel).key == modules[0].key);
}

TEST_CASE("import: a bundle with no entries changes nothing, not even a namespace record") {
  TempDir tmp;
  auto path = bundle_of(tmp.path() / "empty.kcb", {});
  auto dst = store::make_memory_store();
  auto r = transfer::import_bundle(*dst, file(path), {});
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK_FALSE(r->written);
  CHECK(r->header.index.empty());
  std::size_t namespaces = 99;
  REQUIRE(dst->read([&](store::Reader& rd) -> Result<void> {
               namespaces = KCACHE_TRY(rd.namespace_records()).size();
               return {};
             })
              .has_value());
  CHECK(namespaces == 0);
}

TEST_CASE("import: any jobs value works; validator threads are capped") {
  TempDir tmp;
  auto modules = golden_modules();
  auto path = bundle_of(tmp.path() / "all.kcb", modules);
  // 4 * jobs overflowed to a window of 0 (for 2^30) and asked for billions of
  // threads; the cap makes each of these an ordinary import.
  for (unsigned jobs : {1u, 3u, 1u << 30, UINT_MAX}) {
    CAPTURE(jobs);
    auto dst = store::make_memory_store();
    transfer::ImportOptions options;
    options.jobs = jobs;
    auto r = transfer::import_bundle(*dst, file(path), options);
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(r->imported == modules.size());
  }
}
