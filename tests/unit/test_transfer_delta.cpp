// What a delta bundle may remove (issue 40, item 1): a delta applies only to
// a store holding its BASE's kept entries under BASE's keys; it removes only
// BASE's own build of a kernel (format 6 records its key; format 5 records
// none, so nothing built after the delta was written); and it removes
// nothing unless --replace or a trusted signature says so. The hostile delta
// of the issue (no entries, nothing kept, a namespace's names removed) and
// random unsigned deltas leave the store as it was. End to end:
// tests/cli/hostile_delta.sh.
#include "kcache/transfer/transfer.hpp"
#include "test_bundle_support.hpp"

#include <algorithm>
#include <random>
#include <set>

using namespace kcache;
using namespace kcache::test;
namespace fs = std::filesystem;

namespace kcache::transfer_delta_test {

const Namespace k_ns = spirv_namespace("vulkan1.2");

transfer::BundleStream file(const fs::path& p) { return {p, -1}; }

/// The example project's real modules (bundles/golden/example-v1.kcb), so
/// that every entry passes every check and only the delta rules decide.
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
  REQUIRE(out.size() == 14);
  return out;
}

Key key_of(std::uint8_t fill) {
  Key k;
  k.id.bytes.fill(fill);
  k.ir.bytes.fill(static_cast<std::uint8_t>(fill ^ 0x5a));
  return k;
}

/// A delta header of `version` with no entries: kept (kernel, key in BASE)
/// and removed (kernel, key in BASE), created at `created`.
bundle::BundleHeader delta_of(std::uint16_t version, const std::vector<std::pair<std::string, Key>>& kept,
                              const std::vector<std::pair<std::string, Key>>& removed,
                              std::uint64_t created = 1'800'000'000) {
  bundle::BundleHeader h;
  h.ns = k_ns;
  h.tool_versions = tool_versions();
  h.created = created;
  h.format_version = version;
  bundle::DeltaBase d;
  d.base_digest.bytes.fill(0xcd);
  d.base_entries = static_cast<std::uint32_t>(kept.size() + removed.size());
  for (const auto& [k, key] : kept) {
    d.kept.push_back(k);
    if (version >= 6) d.kept_tags.push_back(bundle::kept_entry_tag(k, key));
  }
  d.kept_digest = bundle::kept_entries_digest(kept);
  for (const auto& [k, key] : removed) {
    d.removed.push_back(k);
    if (version >= 6) d.removed_keys.push_back(key);
  }
  if (version >= 6) d.base_name = "base.kcb";
  h.delta = std::move(d);
  return h;
}

fs::path write_delta(const fs::path& path, const bundle::BundleHeader& h, const std::vector<Entry>& entries = {},
                     const bundle::KeyPair* sign = nullptr) {
  bundle::WriteOptions options;
  options.delta_format_version = h.format_version;
  options.sign = sign;
  auto header = h;
  for (const auto& e : entries) header.index.push_back(bundle::index_entry(e));
  auto ok = bundle::write_bundle_file(path, header, bundle::entries_from(entries), options);
  REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
  return path;
}

std::set<std::pair<std::string, Key>> contents(store::Store& s) {
  std::set<std::pair<std::string, Key>> out;
  REQUIRE(s.read([&](store::Reader& r) {
             return r.scan(k_ns.name(), [&](Entry&& e) {
               out.emplace(e.kernel, e.key);
               return true;
             });
           }).has_value());
  return out;
}

transfer::ImportOptions at(std::uint64_t now) {
  static std::vector<std::unique_ptr<util::FixedClock>> clocks;
  clocks.push_back(std::make_unique<util::FixedClock>(now));
  transfer::ImportOptions o;
  o.clock = clocks.back().get();
  o.jobs = 1;
  return o;
}

bundle::KeyPair test_key(std::uint8_t fill) {
  std::array<std::uint8_t, 32> seed;
  seed.fill(fill);
  return bundle::keypair_from_seed(seed);
}

bool has(const std::string& text, std::string_view what) { return text.find(what) != std::string::npos; }

TEST_CASE("plan_delta: a format-6 delta removes only BASE's builds, and only with --replace or trust") {
  transfer::HeldEntries held = {
      {"a", {key_of(1), 100}}, {"b", {key_of(2), 100}}, {"c", {key_of(9), 100}}, {"keep", {key_of(4), 100}}};
  // BASE held a, b, c under keys 1, 2, 3; the store holds c as another (newer) build.
  auto h = delta_of(6, {{"keep", key_of(4)}}, {{"a", key_of(1)}, {"b", key_of(2)}, {"c", key_of(3)}, {"z", key_of(7)}});

  auto refused = transfer::plan_delta(h, held, {}, "bundle d.kcb");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().category == Category::validation_failed);
  CHECK(has(refused.error().message, "bundle d.kcb is a delta on 'base.kcb' (BLAKE2b cdcdcdcdcdcdcdcd...)"));
  CHECK(has(refused.error().message, "it would remove 2 entries of the store ('a', 'b')"));
  CHECK(has(refused.error().message, "--trust, or --replace"));

  for (transfer::DeltaAuthority authority : {transfer::DeltaAuthority{true, false}, {false, true}}) {
    auto plan = transfer::plan_delta(h, held, authority, "d");
    REQUIRE_MESSAGE(plan.has_value(), plan.error().message);
    CHECK(plan->remove == std::vector<std::string>{"a", "b"});
    CHECK(plan->not_removed == std::vector<std::string>{"c"});  // another build than BASE's: kept
  }
  // Nothing the store holds is BASE's: nothing to remove, no authority needed.
  auto none = delta_of(6, {}, {{"c", key_of(3)}});
  auto plan = transfer::plan_delta(none, held, {}, "d");
  REQUIRE_MESSAGE(plan.has_value(), plan.error().message);
  CHECK(plan->remove.empty());
  CHECK(plan->not_removed == std::vector<std::string>{"c"});
}

TEST_CASE("plan_delta: a format-5 delta names no keys: removals only with --replace, never of a later build") {
  transfer::HeldEntries held = {{"old", {key_of(1), 1'700'000'000}}, {"new", {key_of(2), 1'900'000'000}}};
  auto h = delta_of(5, {}, {{"old", {}}, {"new", {}}}, 1'800'000'000);
  // A trusted signature does not make up for the keys it lacks.
  auto refused = transfer::plan_delta(h, held, {false, true}, "d");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().category == Category::validation_failed);
  CHECK(has(refused.error().message, "a format-5 delta records no keys"));
  auto plan = transfer::plan_delta(h, held, {true, false}, "d");
  REQUIRE_MESSAGE(plan.has_value(), plan.error().message);
  CHECK(plan->remove == std::vector<std::string>{"old"});
  CHECK(plan->not_removed == std::vector<std::string>{"new"});
}

TEST_CASE("plan_delta: a store without BASE's kept entries is refused, naming BASE and the kernels") {
  transfer::HeldEntries held = {{"a", {key_of(1), 1}}, {"b", {key_of(9), 1}}, {"c", {key_of(3), 1}}};
  SUBCASE("missing") {
    auto h = delta_of(6, {{"a", key_of(1)}, {"x", key_of(5)}}, {});
    auto r = transfer::plan_delta(h, held, {true, true}, "bundle d.kcb");
    REQUIRE_FALSE(r);
    CHECK(r.error().category == Category::not_found);
    CHECK(has(r.error().message, "'base.kcb' (BLAKE2b cdcdcdcdcdcdcdcd...)"));
    CHECK(has(r.error().message, "lacks 1 of the 2 entries of it the delta keeps: 'x'"));
  }
  SUBCASE("other builds: format 6 names them") {
    auto h = delta_of(6, {{"a", key_of(1)}, {"b", key_of(2)}, {"c", key_of(3)}}, {});
    auto r = transfer::plan_delta(h, held, {true, true}, "bundle d.kcb");
    REQUIRE_FALSE(r);
    CHECK(r.error().category == Category::fingerprint_mismatch);
    CHECK_MESSAGE(has(r.error().message, "'b' under other keys"), r.error().message);
  }
  SUBCASE("other builds: format 5 cannot say which") {
    auto h = delta_of(5, {{"a", key_of(1)}, {"b", key_of(2)}}, {});
    auto r = transfer::plan_delta(h, held, {true, true}, "bundle d.kcb");
    REQUIRE_FALSE(r);
    CHECK(r.error().category == Category::fingerprint_mismatch);
    CHECK(has(r.error().message, "a format-5 delta cannot say which"));
  }
}

TEST_CASE("import: the hostile delta (no entries, nothing kept, a namespace removed) changes nothing") {
  TempDir tmp;
  auto modules = golden_modules();
  auto dst = store::make_memory_store();
  REQUIRE(dst->put(k_ns, modules).has_value());
  const auto before = contents(*dst);
  const auto txn = dst->last_transaction_id().value();
  std::vector<std::pair<std::string, Key>> all;
  for (const auto& e : modules) all.emplace_back(e.kernel, e.key);  // keys are public: they are in every bundle
  for (std::uint16_t version : {5, 6}) {
    CAPTURE(version);
    auto path = write_delta(tmp.path() / ("hostile" + std::to_string(version) + ".kcb"), delta_of(version, {}, all));
    for (bool dry_run : {true, false}) {
      auto options = at(1'800'000'000);
      options.dry_run = dry_run;
      auto r = transfer::import_bundle(*dst, file(path), options);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().category == Category::validation_failed);
      CHECK(has(r.error().message, "it would remove 14 entries of the store"));
      CHECK(contents(*dst) == before);
      CHECK(dst->last_transaction_id().value() == txn);
    }
  }
  // --replace is the user's word: then it removes (format 5: what was built
  // before the delta was written).
  auto options = at(1'800'000'000);
  options.replace = true;
  auto r = transfer::import_bundle(*dst, file(tmp.path() / "hostile5.kcb"), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->removed == 14);
  CHECK(contents(*dst).empty());
}

TEST_CASE("import: 50 random unsigned deltas remove nothing without --replace") {
  TempDir tmp;
  auto modules = golden_modules();
  auto dst = store::make_memory_store();
  REQUIRE(dst->put(k_ns, modules).has_value());
  const auto before = contents(*dst);
  std::mt19937 rng(40);
  std::size_t refused = 0;
  for (int i = 0; i < 50; ++i) {
    CAPTURE(i);
    const std::uint16_t version = rng() % 2 ? 6 : 5;
    std::vector<std::pair<std::string, Key>> kept, removed;
    for (const auto& e : modules) {
      const auto roll = rng() % 4;
      const Key key = rng() % 3 ? e.key : key_of(static_cast<std::uint8_t>(rng()));
      if (roll == 0) kept.emplace_back(e.kernel, key);
      else if (roll == 1) removed.emplace_back(e.kernel, key);
    }
    if (rng() % 4 == 0) removed.emplace_back("absent" + std::to_string(i), key_of(1));
    auto h = delta_of(version, kept, removed, 1'700'000'000 + rng() % 200'000'000);
    if (rng() % 5 == 0) h.delta->kept_digest.bytes[0] ^= 1;
    auto path = write_delta(tmp.path() / ("r" + std::to_string(i) + ".kcb"), h);
    auto r = transfer::import_bundle(*dst, file(path), at(1'900'000'000));
    if (!r) ++refused;
    else CHECK(r->removed == 0);
    REQUIRE(contents(*dst) == before);
  }
  MESSAGE(refused, " of 50 random deltas refused, none removed anything");
}

TEST_CASE("import: an honest delta over newer local builds removes none of them") {
  TempDir tmp;
  auto modules = golden_modules();
  auto src = store::make_memory_store();
  REQUIRE(src->put(k_ns, modules).has_value());
  transfer::ExportOptions eo;
  eo.created = 1'700'000'100;
  REQUIRE(transfer::export_bundle(*src, {}, file(tmp.path() / "base.kcb"), eo).has_value());
  // The delta keeps saxpy and removes the rest of BASE.
  transfer::ExportSelection sel;
  sel.kernel_globs = {"saxpy*"};
  eo.since = tmp.path() / "base.kcb";
  auto exported = transfer::export_bundle(*src, sel, file(tmp.path() / "delta.kcb"), eo);
  REQUIRE_MESSAGE(exported.has_value(), exported.error().message);
  REQUIRE(exported->removed.value_or(0) > 2);
  auto header = bundle::BundleReader::open_file(tmp.path() / "delta.kcb").value().take_header();
  CHECK(header.format_version == 6);
  CHECK(header.delta->base_name == "base.kcb");

  auto dst = store::make_memory_store();
  REQUIRE(transfer::import_bundle(*dst, file(tmp.path() / "base.kcb"), at(1'800'000'000)).has_value());
  // Two of the kernels it removes were rebuilt here since, from other sources.
  std::vector<Entry> newer;
  for (const auto& name : {header.delta->removed[0], header.delta->removed[1]}) {
    auto it = std::find_if(modules.begin(), modules.end(), [&](const Entry& e) { return e.kernel == name; });
    REQUIRE(it != modules.end());
    Entry e = *it;
    rebuild_from(e, "edited here");
    e.created = 1'750'000'000;
    newer.push_back(e);
  }
  REQUIRE(dst->put(k_ns, newer).has_value());
  const auto before = contents(*dst);

  // Unsigned, without --replace: refused, nothing removed.
  auto r = transfer::import_bundle(*dst, file(tmp.path() / "delta.kcb"), at(1'800'000'000));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::validation_failed);
  CHECK(has(r.error().message, "'base.kcb'"));
  CHECK(contents(*dst) == before);

  auto options = at(1'800'000'000);
  options.replace = true;
  r = transfer::import_bundle(*dst, file(tmp.path() / "delta.kcb"), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->removed == header.delta->removed.size() - 2);
  CHECK(r->not_removed == std::vector<std::string>{newer[0].kernel, newer[1].kernel});
  auto after = contents(*dst);
  for (const auto& e : newer) CHECK(after.contains({e.kernel, e.key}));
  CHECK(after.size() == header.delta->kept.size() + 2);
}

TEST_CASE("import: a delta signed by a trusted key removes BASE's builds without --replace") {
  TempDir tmp;
  auto modules = golden_modules();
  auto dst = store::make_memory_store();
  REQUIRE(dst->put(k_ns, modules).has_value());
  const auto key = test_key(0x11);
  auto path = write_delta(tmp.path() / "signed.kcb", delta_of(6, {}, {{modules[0].kernel, modules[0].key}}), {}, &key);
  auto options = at(1'800'000'000);
  options.trusted = {key.public_key};
  auto r = transfer::import_bundle(*dst, file(path), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->removed == 1);
  CHECK(contents(*dst).size() == 13);
}

}  // namespace kcache::transfer_delta_test
