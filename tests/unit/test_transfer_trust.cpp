// What an unsigned record may not claim for itself (issue 40, items 4, 5, 6,
// 12, 13): a weaker validation policy (refused unless the importer allows
// it or trusts the signer), a pipeline interface that is not its module's, a
// date in the future, another kernel's name; and an entry fetched from a
// remote is not signed as a local build unless asked. End to end:
// tests/cli/hostile_delta.sh.
#include "kcache/core/key_binding.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/transfer/transfer.hpp"
#include "test_bundle_support.hpp"

#include <algorithm>

using namespace kcache;
using namespace kcache::test;
namespace fs = std::filesystem;

namespace kcache::transfer_trust_test {

const Namespace k_ns = spirv_namespace("vulkan1.2");
constexpr std::uint64_t k_now = 1'800'000'000;

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
  REQUIRE(out.size() == 14);
  return out;
}

bundle::KeyPair test_key(std::uint8_t fill) {
  std::array<std::uint8_t, 32> seed;
  seed.fill(fill);
  return bundle::keypair_from_seed(seed);
}

/// `entries` of `ns` exported to `path`, created `created`, signed with `sign`.
fs::path bundle_of(const fs::path& path, const Namespace& ns, const std::vector<Entry>& entries,
                   std::uint64_t created = 1'700'000'000, const bundle::KeyPair* sign = nullptr) {
  auto src = store::make_memory_store();
  REQUIRE(src->put(ns, entries).has_value());
  transfer::ExportOptions options;
  options.created = created;
  options.write.sign = sign;
  auto r = transfer::export_bundle(*src, {}, file(path), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return path;
}

const util::FixedClock k_clock(k_now);

transfer::ImportOptions options_now() {
  transfer::ImportOptions o;
  o.clock = &k_clock;
  o.jobs = 1;
  return o;
}

void set_field(std::vector<Field>& fields, const std::string& name, const std::string& value) {
  auto it = std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.first == name; });
  if (it == fields.end()) fields.emplace_back(name, value);
  else it->second = value;
}

bool has(const std::string& text, std::string_view what) { return text.find(what) != std::string::npos; }

TEST_CASE("import: a record that lowers its own validation is refused unless allowed or trusted") {
  TempDir tmp;
  auto modules = golden_modules();
  for (const char* policy : {"off", "known"}) {
    CAPTURE(policy);
    Entry lowered = modules[0];
    set_field(lowered.id_fields, "validate", policy);
    lowered.key = bound_key(lowered);  // the hash rule is public: an attacker recomputes the key
    auto path = bundle_of(tmp.path() / (std::string(policy) + ".kcb"), k_ns, {lowered, modules[1]});

    auto dst = store::make_memory_store();
    auto r = transfer::import_bundle(*dst, file(path), options_now());
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK_FALSE(r->written);
    REQUIRE(r->refused.size() == 1);
    CHECK(r->refused[0].kernel == lowered.kernel);
    CHECK(r->refused[0].error.category == Category::validation_failed);
    CHECK_MESSAGE(has(r->refused[0].error.message, std::string("--allow-validate ") + policy),
                  r->refused[0].error.message);

    auto allowed = options_now();
    allowed.allow_validate = *definition::parse_validate_policy(policy);
    r = transfer::import_bundle(*dst, file(path), allowed);
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(r->refused.empty());
    CHECK(r->imported == 2);
  }
  // --allow-validate known does not accept off.
  Entry off = modules[0];
  set_field(off.id_fields, "validate", "off");
  off.key = bound_key(off);
  auto path = bundle_of(tmp.path() / "off-only.kcb", k_ns, {off});
  auto dst = store::make_memory_store();
  auto known = options_now();
  known.allow_validate = definition::ValidatePolicy::known;
  auto r = transfer::import_bundle(*dst, file(path), known);
  REQUIRE(r.has_value());
  CHECK(r->refused.size() == 1);
  // A bundle signed by a trusted key is taken as its records ask.
  const auto key = test_key(0x21);
  auto signed_path = bundle_of(tmp.path() / "signed.kcb", k_ns, {off}, 1'700'000'000, &key);
  auto trusted = options_now();
  trusted.trusted = {key.public_key};
  r = transfer::import_bundle(*dst, file(signed_path), trusted);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->refused.empty());
  CHECK(r->imported == 1);
}

TEST_CASE("import: an entry or a bundle dated more than 5 minutes ahead is refused") {
  TempDir tmp;
  auto modules = golden_modules();
  auto dst = store::make_memory_store();
  Entry ahead = modules[2];
  ahead.created = k_now + k_max_future_seconds + 1;  // not in the key: anyone may set it
  auto path = bundle_of(tmp.path() / "ahead.kcb", k_ns, {ahead, modules[3]}, k_now);
  auto r = transfer::import_bundle(*dst, file(path), options_now());
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK_FALSE(r->written);
  REQUIRE(r->refused.size() == 1);
  CHECK(r->refused[0].error.category == Category::corruption);
  CHECK_MESSAGE(has(r->refused[0].error.message, "in the future"), r->refused[0].error.message);

  ahead.created = k_now + k_max_future_seconds;  // within the clock skew allowed
  path = bundle_of(tmp.path() / "skew.kcb", k_ns, {ahead}, k_now);
  r = transfer::import_bundle(*dst, file(path), options_now());
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->imported == 1);

  // The bundle's own creation time: refused from its head.
  path = bundle_of(tmp.path() / "head.kcb", k_ns, {modules[4]}, k_now + 3600);
  auto head = transfer::import_bundle(*dst, file(path), options_now());
  REQUIRE_FALSE(head.has_value());
  CHECK(head.error().category == Category::corruption);
  CHECK(has(head.error().message, "was written"));
}

TEST_CASE("check_not_future: at most k_max_future_seconds ahead") {
  CHECK(check_not_future(100, 100, "x"));
  CHECK(check_not_future(0, 100, "x"));
  CHECK(check_not_future(100 + k_max_future_seconds, 100, "x"));
  auto r = check_not_future(101 + k_max_future_seconds, 100, "the entry was built");
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "the entry was built 1970-01-01"));
}

TEST_CASE("import: a record filed under another kernel's name is refused") {
  TempDir tmp;
  auto modules = golden_modules();
  for (const auto& e : modules) CHECK_MESSAGE(check_name_fields(e.kernel, e.id_fields), e.kernel);
  auto variant = std::find_if(modules.front().id_fields.begin(), modules.front().id_fields.end(),
                              [](const Field& f) { return f.first.starts_with("variant:"); });
  REQUIRE(variant != modules.front().id_fields.end());

  Entry relabelled = modules[0];
  set_field(relabelled.id_fields, variant->first, "int");
  relabelled.key = bound_key(relabelled);
  Entry renamed = modules[1];
  set_field(renamed.id_fields, "name", modules[2].kernel);
  renamed.key = bound_key(renamed);
  auto path = bundle_of(tmp.path() / "labels.kcb", k_ns, {relabelled, renamed, modules[3]});
  auto dst = store::make_memory_store();
  auto r = transfer::import_bundle(*dst, file(path), options_now());
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK_FALSE(r->written);
  REQUIRE(r->refused.size() == 2);
  CHECK_MESSAGE(has(r->refused[0].error.message, "filed under another variant"), r->refused[0].error.message);
  CHECK_MESSAGE(has(r->refused[1].error.message, "filed under another name"), r->refused[1].error.message);
}

TEST_CASE("check_name_fields: the name and the variant fields must name the kernel") {
  const std::vector<Field> fields = {{"name", "saxpy[T=float,N=4]"}, {"variant:T", "float"}, {"variant:N", "4"}};
  CHECK(check_name_fields("saxpy[T=float,N=4]", fields));
  CHECK_FALSE(check_name_fields("saxpy[T=float,N=8]", fields));
  CHECK_FALSE(check_name_fields("saxpy[T=int,N=4]", {{"variant:T", "float"}, {"variant:N", "4"}}));
  CHECK_FALSE(check_name_fields("saxpy[N=4,T=float]", {{"variant:T", "float"}, {"variant:N", "4"}}));
  CHECK_FALSE(check_name_fields("saxpy", {{"variant:T", "float"}}));
  CHECK(check_name_fields("launcher.out.k.spv", {{"name", "launcher.out.k.spv"}}));
  CHECK(check_name_fields("k", {{"source", "k.comp"}}));
}

TEST_CASE("export --sign refuses entries fetched from a remote unless asked") {
  TempDir tmp;
  auto modules = golden_modules();
  Entry fetched = modules[0];
  fetched.origin_kind = OriginKind::confirmed;  // a build here confirmed its key, not its bytes
  fetched.origin_detail = "remote redis://cache:6379/ci";
  Entry imported = modules[1];
  imported.origin_kind = OriginKind::imported;
  imported.origin_detail = "bundle shaders.kcb";
  CHECK(transfer::is_remote_origin(fetched));
  CHECK_FALSE(transfer::is_remote_origin(imported));
  CHECK_FALSE(transfer::is_remote_origin(modules[2]));

  auto src = store::make_memory_store();
  REQUIRE(src->put(k_ns, std::vector<Entry>{fetched, imported, modules[2]}).has_value());
  const auto key = test_key(0x31);
  transfer::ExportOptions options;
  options.write.sign = &key;
  auto r = transfer::export_bundle(*src, {}, file(tmp.path() / "a.kcb"), options);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().category == Category::invalid_argument);
  CHECK(has(r.error().message, fetched.kernel));
  CHECK(has(r.error().message, "--sign-remote-entries"));
  CHECK_FALSE(fs::exists(tmp.path() / "a.kcb"));

  options.sign_remote_entries = true;
  r = transfer::export_bundle(*src, {}, file(tmp.path() / "b.kcb"), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->signer.has_value());
  options.write.sign = nullptr;
  options.sign_remote_entries = false;
  CHECK(transfer::export_bundle(*src, {}, file(tmp.path() / "c.kcb"), options).has_value());
}

TEST_CASE("import: a pipeline whose recorded interface is not its module's is refused") {
  TempDir tmp;
  auto modules = golden_modules();
  const Entry& module = modules[0];
  // A device made by hand: the blob's header is all import checks of it.
  device::DeviceInfo d;
  d.name = "test device";
  d.vendor_id = 0x10005;
  d.driver_version = 1;
  d.driver_info = "test";
  for (int i = 0; i < 16; ++i) d.pipeline_cache_uuid[i] = static_cast<std::uint8_t>(i);
  d.seal_fingerprint();
  std::vector<std::uint8_t> raw(32, 0);
  raw[0] = 32, raw[4] = 1, raw[8] = 0x05, raw[10] = 0x01;  // headerSize, version, vendorID 0x10005
  std::memcpy(raw.data() + 16, d.pipeline_cache_uuid.data(), 16);
  device::PipelineRecipe recipe{k_ns.name(), module.payload_digest, "main", {}, std::string(device::k_pipeline_scheme)};
  std::vector<std::uint32_t> words(module.payload.size() / 4);
  std::memcpy(words.data(), module.payload.data(), words.size() * 4);
  auto interface = device::reflect_pipeline_interface(words, "main", {});
  REQUIRE_MESSAGE(interface.has_value(), interface.error().message);
  const Entry honest =
      device::make_pipeline_entry(module, recipe, *interface, device::wrap_blob(d, raw), 1'700'000'001, "built");
  Entry forged = honest;
  set_field(forged.ir_fields, "push_constants", "4096");
  REQUIRE(bound_key(forged) == forged.key);  // product fields: not in the key

  auto dst = store::make_memory_store();
  REQUIRE(dst->put(k_ns, modules).has_value());
  auto options = options_now();
  options.target.fingerprint = d.fingerprint();
  auto r = transfer::import_bundle(*dst, file(bundle_of(tmp.path() / "forged.kcb", d.ns, {forged})), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  REQUIRE(r->refused.size() == 1);
  CHECK_MESSAGE(has(r->refused[0].error.message, "recorded pipeline interface is not its module's"),
                r->refused[0].error.message);
  CHECK(has(r->refused[0].error.message, "push_constants = \"4096\""));

  r = transfer::import_bundle(*dst, file(bundle_of(tmp.path() / "honest.kcb", d.ns, {honest})), options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK_MESSAGE(r->refused.empty(), (r->refused.empty() ? "" : r->refused[0].error.message));
  CHECK(r->imported == 1);
}

}  // namespace kcache::transfer_trust_test
