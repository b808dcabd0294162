// Export, import and merge policy (transfer/transfer.hpp, bundle/merge.hpp) over the memory
// store and bundle files: selection, fingerprint refusals naming fields,
// validation refusals that write nothing, merge dedupe and conflicts.
// The end-to-end behaviour with real modules is in tests/cli/bundle_*.sh.
#include "kcache/bundle/merge.hpp"
#include "kcache/compile/compiler.hpp"
#include "kcache/transfer/transfer.hpp"
#include "kcache/util/glob.hpp"
#include "test_bundle_support.hpp"

#include <cstdlib>
#include <set>

using namespace kcache;
using namespace kcache::test;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<store::Store> store_with(const Namespace& ns, const std::vector<Entry>& entries) {
  auto s = store::make_memory_store();
  REQUIRE(s->put(ns, entries).has_value());
  return s;
}

transfer::BundleStream file(const fs::path& p) { return {p, -1}; }

std::size_t count_entries(store::Store& s, const std::string& ns) {
  std::size_t n = 0;
  REQUIRE(s.read([&](store::Reader& r) { return r.scan(ns, [&](Entry&&) { return ++n, true; }); }).has_value());
  return n;
}

}  // namespace

TEST_CASE("kernel globs: * and ?, brackets literal") {
  using util::match_glob;
  CHECK(match_glob("*", "matmul[T=float]"));
  CHECK(match_glob("matmul[T=float,*", "matmul[T=float,TILE=8]"));
  CHECK_FALSE(match_glob("matmul[T=float,*", "matmul[T=int,TILE=8]"));
  CHECK(match_glob("s?xpy*", "saxpy[T=int]"));
  CHECK(match_glob("*[*]", "a[b]"));
  CHECK_FALSE(match_glob("saxpy", "saxpy[T=int]"));
  CHECK(match_glob("a*b*c", "aXXbYYc"));
  CHECK_FALSE(match_glob("a*b*c", "aXXbYY"));
}

TEST_CASE("export selects one namespace and globs") {
  TempDir tmp;
  auto s = store_with(spirv_namespace("vulkan1.2"), make_entries(20, 64));
  REQUIRE(s->put(spirv_namespace("vulkan1.3"), make_entries(3, 64)).has_value());

  auto none = transfer::export_bundle(*s, {}, file(tmp.path() / "x.kcb"), {});
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().category == Category::invalid_argument);
  CHECK(none.error().message.find("spirv/vulkan1.3 (3 entries)") != std::string::npos);

  transfer::ExportSelection sel;
  sel.backend = "spirv";
  sel.fingerprint = "vulkan1.2";
  sel.kernel_globs = {"matmul_0[*"};
  auto r = transfer::export_bundle(*s, sel, file(tmp.path() / "x.kcb"), {});
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->entries == 16);  // family 0 has 16 variants
  auto reader = bundle::BundleReader::open_file(tmp.path() / "x.kcb");
  REQUIRE(reader.has_value());
  CHECK(reader->header().index.size() == 16);

  sel.kernel_globs = {"nothing*"};
  auto miss = transfer::export_bundle(*s, sel, file(tmp.path() / "y.kcb"), {});
  REQUIRE_FALSE(miss.has_value());
  CHECK(miss.error().category == Category::not_found);
  CHECK_FALSE(fs::exists(tmp.path() / "y.kcb"));
}

TEST_CASE("import refuses invalid SPIR-V, lists every refusal and writes nothing") {
  TempDir tmp;
  // spirv_like payloads carry a SPIR-V header over random instructions.
  auto entries = make_entries(3, 64);
  auto src = store_with(spirv_namespace("vulkan1.2"), entries);
  auto path = tmp.path() / "bad.kcb";
  REQUIRE(transfer::export_bundle(*src, {}, file(path), {}).has_value());
  // The checked-in fixture tests/data/bundles/invalid-spirv.kcb comes from here.
  if (const char* out = std::getenv("KCACHE_FIXTURE_OUT"))
    fs::copy_file(path, out, fs::copy_options::overwrite_existing);

  auto dst = store_with(spirv_namespace("vulkan1.2"), {make_entry(7, 64)});
  auto before = dst->last_transaction_id();
  auto r = transfer::import_bundle(*dst, file(path), {});
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->refused.size() == 3);
  std::set<std::string> refused;
  for (const auto& x : r->refused) {
    refused.insert(x.kernel);
    CHECK(x.error.category == Category::validation_failed);
  }
  CHECK(refused == std::set<std::string>{entries[0].kernel, entries[1].kernel, entries[2].kernel});
  CHECK_FALSE(r->written);
  CHECK(*dst->last_transaction_id() == *before);
  CHECK(count_entries(*dst, "spirv/vulkan1.2") == 1);
}

TEST_CASE("import names every differing fingerprint field with both values") {
  TempDir tmp;
  auto ns = vulkan_ns();
  auto src = store_with(ns, make_entries(2, 64));
  auto path = tmp.path() / "v.kcb";
  REQUIRE(transfer::export_bundle(*src, {}, file(path), {}).has_value());

  // The target store knows another device's full record under its id.
  auto other_record = ns.record;
  for (auto& [k, v] : other_record.fields)
    if (k == "driverVersion") v = "575.64";
  auto other = vulkan_namespace(other_record);
  auto dst = store_with(other, {});
  transfer::ImportOptions options;
  options.target.fingerprint = other.fingerprint;
  auto r = transfer::import_bundle(*dst, file(path), options);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::fingerprint_mismatch);
  CHECK(r.error().message.find("driverVersion: bundle 580.159 ≠ target 575.64") != std::string::npos);

  // Unknown id: only the id can be compared.
  options.target.fingerprint = "00000000deadbeef";
  r = transfer::import_bundle(*dst, file(path), options);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message.find("fingerprint: bundle " + ns.fingerprint + " ≠ target 00000000deadbeef") !=
        std::string::npos);

  // spirv: --device makes no sense, --fingerprint names the target env.
  auto spath = tmp.path() / "s.kcb";
  REQUIRE(transfer::export_bundle(*store_with(spirv_namespace("vulkan1.2"), {}), {}, file(spath), {}).has_value());
  transfer::ImportOptions sopt;
  sopt.target.device = "";
  CHECK(transfer::import_bundle(*dst, file(spath), sopt).error().category == Category::invalid_argument);
  sopt = {};
  sopt.target.fingerprint = "vulkan1.3";
  auto sr = transfer::import_bundle(*dst, file(spath), sopt);
  REQUIRE_FALSE(sr.has_value());
  CHECK(sr.error().message.find("target: bundle vulkan1.2 ≠ target vulkan1.3") != std::string::npos);
}

TEST_CASE("merge dedupes identical entries and reports conflicts") {
  TempDir tmp;
  auto ns = spirv_namespace("vulkan1.2");
  auto all = make_entries(6, 64);
  auto write = [&](const std::string& name, std::vector<Entry> entries) {
    auto p = tmp.path() / name;
    REQUIRE(transfer::export_bundle(*store_with(ns, entries), {}, file(p), {}).has_value());
    return file(p);
  };
  auto a = write("a.kcb", {all[0], all[1], all[2]});
  // Same kernel, key and payload as a's, but built elsewhere at another time:
  // still a duplicate.
  auto copy = all[2];
  copy.created += 1000;
  copy.origin_detail = "another runner";
  auto b = write("b.kcb", {copy, all[3], all[4]});
  auto out = file(tmp.path() / "m.kcb");
  auto r = bundle::merge_bundles({a, b}, out, {}, 0);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->conflicts.empty());
  CHECK(r->entries == 5);
  CHECK(r->duplicates == 1);
  auto reader = bundle::BundleReader::open_file(out.path);
  REQUIRE(reader.has_value());
  CHECK(reader->header().index.size() == 5);

  // Same key, other payload: a conflict, and no output.
  auto changed = all[1];
  changed.payload[100] ^= 1;
  seal_payload(changed);
  auto c = write("c.kcb", {changed, all[5]});
  // Same kernel with another key.
  auto stale = all[0];
  stale.key.ir = util::hash_string("older toolchain");
  auto d = write("d.kcb", {stale});
  auto out2 = file(tmp.path() / "m2.kcb");
  r = bundle::merge_bundles({a, c, d}, out2, {}, 0);
  REQUIRE(r.has_value());
  REQUIRE(r->conflicts.size() == 2);
  CHECK(r->conflicts[0].kernel == all[0].kernel);  // found from the heads, before payloads
  CHECK_FALSE(r->conflicts[0].same_key);
  CHECK(r->conflicts[1].kernel == all[1].kernel);
  CHECK(r->conflicts[1].same_key);
  CHECK_FALSE(fs::exists(out2.path));

  // Another namespace is refused, naming the field.
  auto e = file(tmp.path() / "e.kcb");
  REQUIRE(transfer::export_bundle(*store_with(spirv_namespace("vulkan1.3"), {all[5]}), {}, e, {}).has_value());
  auto mixed = bundle::merge_bundles({a, e}, file(tmp.path() / "m3.kcb"), {}, 0);
  REQUIRE_FALSE(mixed.has_value());
  CHECK(mixed.error().category == Category::fingerprint_mismatch);
  CHECK(mixed.error().message.find("target: vulkan1.2 ≠ vulkan1.3") != std::string::npos);
}

TEST_CASE("put_stream is all or nothing") {
  auto s = store_with(spirv_namespace("vulkan1.2"), make_entries(2, 32));
  auto before = s->last_transaction_id();
  auto entries = make_entries(5, 32);
  std::size_t i = 0;
  auto r = s->put_stream(spirv_namespace("vulkan1.2"), [&]() -> Result<std::optional<Entry>> {
    if (i == 4) return fail(Category::corruption, "damaged at the end");
    return std::optional(entries[i++]);
  });
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message == "damaged at the end");
  CHECK(*s->last_transaction_id() == *before);
  CHECK(count_entries(*s, "spirv/vulkan1.2") == 2);
  i = 0;
  r = s->put_stream(spirv_namespace("vulkan1.2"), [&]() -> Result<std::optional<Entry>> {
    if (i == 5) return std::optional<Entry>{};
    return std::optional(entries[i++]);
  });
  REQUIRE(r.has_value());
  CHECK(r->already_present == 2);
  CHECK(r->written == 3);
  CHECK(count_entries(*s, "spirv/vulkan1.2") == 5);
}

TEST_CASE("put_streams writes several namespaces and removals in one transaction, or nothing") {
  auto s = store_with(spirv_namespace("vulkan1.2"), make_entries(3, 32));
  auto before = s->last_transaction_id();
  const std::vector<Namespace> namespaces = {spirv_namespace("vulkan1.2"), spirv_namespace("vulkan1.3")};
  auto entries = make_entries(6, 32);
  const std::vector<store::Store::NamespacedKernel> remove = {{0, entries[0].kernel}, {0, "not there"}};
  std::size_t i = 3;
  auto stream = [&](bool fail_at_end) {
    return [&, fail_at_end]() -> Result<std::optional<store::Store::NamespacedEntry>> {
      if (i == 6) {
        if (fail_at_end) return fail(Category::corruption, "damaged at the end");
        return std::optional<store::Store::NamespacedEntry>{};
      }
      return std::optional(store::Store::NamespacedEntry{i % 2, entries[i++]});
    };
  };
  auto r = s->put_streams(namespaces, stream(true), remove);
  REQUIRE_FALSE(r.has_value());
  CHECK(*s->last_transaction_id() == *before);
  CHECK(count_entries(*s, "spirv/vulkan1.2") == 3);
  i = 3;
  r = s->put_streams(namespaces, stream(false), remove);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->written == 3);
  CHECK(r->removed == 1);
  CHECK(count_entries(*s, "spirv/vulkan1.2") == 3);  // 3 - 1 removed + entries 4
  CHECK(count_entries(*s, "spirv/vulkan1.3") == 2);  // entries 3 and 5
  const std::vector<store::Store::NamespacedKernel> outside = {{2, "x"}};
  CHECK(s->put_streams(namespaces, stream(false), outside).error().category == Category::invalid_argument);
}

// Generator for scripts/bench_bundle: a bundle of at least KCACHE_BENCH_MB MB
// of distinct, valid SPIR-V, made from the modules of namespace
// KCACHE_BENCH_NS in the store KCACHE_BENCH_FROM. Each clone gets a new name
// and an OpModuleProcessed string of random hex (a debug instruction:
// spirv-val accepts it, and it makes every module distinct, so neither the
// store nor zstd can fold clones together). Written streaming to
// KCACHE_BENCH_OUT, so the generator itself holds one module at a time.
namespace {

/// Inserts OpModuleProcessed "text" where the debug section ends (after
/// OpName/OpMemberName/OpModuleProcessed, before annotations and types).
std::vector<std::uint8_t> with_processed_string(std::span<const std::uint8_t> module, const std::string& text) {
  std::vector<std::uint32_t> w(module.size() / 4);
  std::memcpy(w.data(), module.data(), w.size() * 4);
  static const std::set<std::uint32_t> preamble_ops = {17, 10, 11, 14, 15, 16, 331, 7, 4, 3, 2, 5, 6, 330};
  std::size_t at = 5;
  while (at < w.size() && preamble_ops.contains(w[at] & 0xffff)) at += w[at] >> 16;
  std::vector<std::uint32_t> inst((text.size() + 4) / 4 + 1, 0);
  inst[0] = static_cast<std::uint32_t>(inst.size()) << 16 | 330;
  std::memcpy(&inst[1], text.data(), text.size());
  w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), inst.begin(), inst.end());
  std::vector<std::uint8_t> out(w.size() * 4);
  std::memcpy(out.data(), w.data(), out.size());
  return out;
}

}  // namespace

TEST_CASE("bench bundle generator") {
  const char* from = std::getenv("KCACHE_BENCH_FROM");
  const char* out = std::getenv("KCACHE_BENCH_OUT");
  if (!from || !out) return;
  const char* mb_env = std::getenv("KCACHE_BENCH_MB");
  const char* ns_env = std::getenv("KCACHE_BENCH_NS");
  std::uint64_t want = std::uint64_t(mb_env ? std::atoi(mb_env) : 200) * 1'000'000;
  std::string ns_name = ns_env ? ns_env : "spirv/vulkan1.2";
  auto store = store::open_lmdb_store(from, {.read_only = true});
  REQUIRE_MESSAGE(store.has_value(), store.error().message);
  std::vector<Entry> templates;
  REQUIRE((*store)
              ->read([&](store::Reader& r) {
                return r.scan(ns_name, [&](Entry&& e) { return templates.push_back(std::move(e)), true; });
              })
              .has_value());
  REQUIRE(!templates.empty());
  auto [backend, fp] = *parse_namespace_name(ns_name);
  Rng rng(12345);
  auto clone = [&](std::size_t i) {
    Entry e = templates[i % templates.size()];
    e.kernel += "#" + std::to_string(i);
    std::string text;
    std::size_t n = 1024 + rng.below(3072);
    for (std::size_t k = 0; k < n; ++k) text += "0123456789abcdef"[rng.below(16)];
    e.payload = with_processed_string(e.payload, text);
    seal_payload(e);
    e.id_fields.emplace_back("bench_clone", std::to_string(i));
    e.key.id = util::hash_string(e.kernel);
    e.key.ir = util::hash_bytes(e.payload);
    return e;
  };
  // Pass 1 indexes; pass 2 regenerates each clone from the same seed.
  bundle::BundleHeader header;
  header.ns = spirv_namespace(fp);
  header.tool_versions = transfer::bundle_tool_versions();
  header.created = 1'700'000'000;
  std::uint64_t total = 0;
  for (std::size_t i = 0; total < want; ++i) {
    auto e = clone(i);
    total += e.payload.size();
    header.index.push_back(bundle::index_entry(e));
  }
  rng = Rng(12345);
  auto written = bundle::write_bundle_file(out, header, [&](std::size_t i) -> Result<Entry> { return clone(i); });
  REQUIRE_MESSAGE(written.has_value(), written.error().message);
  MESSAGE(header.index.size(), " modules, ", total, " bytes of SPIR-V, from ", templates.size(), " templates");
  // The clones must pass the validator, as import will check.
  CHECK(compile::validate(*compile::spirv_words(clone(0).payload), fp).has_value());
}
