#include "kcache/transfer/transfer.hpp"

#include "kcache/core/key_binding.hpp"

#include "kcache/bundle/merge.hpp"
#include "kcache/bundle/release.hpp"
#include "kcache/compile/compiler.hpp"
#include "kcache/core/cuda.hpp"
#include "kcache/device/device.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/util/ordered_parallel_map.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <thread>

namespace kcache::transfer {
namespace {

/// The record a bundle must match and a description of where it came from.
struct Target {
  FingerprintRecord record;
  std::string text;
};

/// A cuda bundle's target: its own record (a cubin serves every device of
/// its arch), checked against a CUDA device when one is named.
Result<Target> resolve_cuda_target(const Namespace& bundle_ns, const ImportTarget& t) {
  if (t.fingerprint && *t.fingerprint != bundle_ns.fingerprint)
    return fail(Category::fingerprint_mismatch,
                "bundle namespace {} does not match the target: arch: bundle {} ≠ target {}", bundle_ns.name(),
                bundle_ns.fingerprint, util::escape_untrusted(*t.fingerprint));
  if (!t.device) return Target{bundle_ns.record, fmt::format("its own arch {}", bundle_ns.fingerprint)};
  std::vector<cuda_device::DeviceInfo> devices;
  if (t.cuda_devices) {
    devices = *t.cuda_devices;
  } else {
    auto found = cuda_device::survey(t.cuda_library);
    if (!found.available())
      return fail(Category::device_unavailable, "cannot check cuda bundle {} against this machine: {}",
                  bundle_ns.name(), found.absent);
    devices = std::move(found.devices);
  }
  auto dev = KCACHE_TRY(cuda_device::select_device(devices, *t.device));
  KCACHE_CHECK(cuda_device::check_runs(bundle_ns.record, dev));
  return Target{bundle_ns.record,
                fmt::format("CUDA device {} '{}' (compute capability {}, CUDA {})", dev.ordinal, dev.name,
                            dev.compute_capability(), cuda_device::cuda_version_text(dev.cuda_version))};
}

Result<Target> resolve_target(store::Store& store, const Namespace& bundle_ns, const ImportTarget& t) {
  if (bundle_ns.backend == k_cuda_backend) return resolve_cuda_target(bundle_ns, t);
  if (bundle_ns.backend == "spirv") {
    if (t.device)
      return fail(Category::invalid_argument,
                  "--device applies to vulkan bundles; this bundle is {} (portable SPIR-V): use --fingerprint "
                  "TARGET_ENV to require a target environment",
                  bundle_ns.name());
    // SPIR-V is portable: without an explicit target, the bundle's own
    // target environment is what every module is validated against.
    if (!t.fingerprint) return Target{bundle_ns.record, fmt::format("its own target {}", bundle_ns.fingerprint)};
    return Target{spirv_namespace(*t.fingerprint).record, fmt::format("--fingerprint {}", *t.fingerprint)};
  }
  if (t.fingerprint) {
    if (*t.fingerprint == bundle_ns.fingerprint)
      return Target{bundle_ns.record, fmt::format("--fingerprint {}", *t.fingerprint)};
    // The store may know the full record of the wanted namespace: then every
    // differing field can be named, not just the fingerprint id.
    std::optional<Namespace> known;
    KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
      for (auto& info : KCACHE_TRY(r.namespace_records()))
        if (info.ns.backend == bundle_ns.backend && info.ns.fingerprint == *t.fingerprint) known = info.ns;
      return {};
    }));
    if (known) return Target{known->record, fmt::format("namespace {} of the store", known->name())};
    FingerprintRecord only_id{{{"fingerprint", *t.fingerprint}}};
    FingerprintRecord bundle_id{{{"fingerprint", bundle_ns.fingerprint}}};
    return fail(Category::fingerprint_mismatch, "bundle namespace {} does not match the target: {}", bundle_ns.name(),
                describe_differences(diff_fingerprints(bundle_id, only_id), "bundle", "target"));
  }
  auto dev = device::select_device_or_default(t.device.value_or(""));
  if (!dev) {
    auto e = std::move(dev).error();
    if (e.category == Category::device_unavailable)
      e.message = fmt::format(
          "cannot check vulkan bundle {} against this machine: {} (or pass --fingerprint FP "
          "to import for a known fingerprint)",
          bundle_ns.name(), e.message);
    return tl::unexpected(std::move(e));
  }
  return Target{dev->record(), fmt::format("device '{}' ({})", dev->name, dev->fingerprint())};
}

}  // namespace

namespace {

/// check_entry_payload's result, and for a SPIR-V module what this store's
/// validator found under the entry's policy: the imported entry's flag.
struct PayloadChecked {
  std::vector<std::uint8_t> payload;
  std::optional<Validation> validation;
  std::string note;
};

Result<std::vector<std::uint8_t>> check_payload(const Entry& e, const Namespace& bundle_ns,
                                                const FingerprintRecord& target, definition::ValidatePolicy allow,
                                                PayloadChecked* flag);

}  // namespace

Result<std::vector<std::uint8_t>> check_entry_payload(const Entry& e, const Namespace& bundle_ns,
                                                      const FingerprintRecord& target) {
  // A remote value is asked for by the key a build here computed, so the
  // policy its key binds is this manifest's own: any is accepted.
  return check_payload(e, bundle_ns, target, definition::ValidatePolicy::off, nullptr);
}

namespace {

Result<std::vector<std::uint8_t>> check_payload(const Entry& e, const Namespace& bundle_ns,
                                                const FingerprintRecord& target, definition::ValidatePolicy allow,
                                                PayloadChecked* flag) {
  // The record's fields must be the ones its key was made of (the key binds
  // everything): otherwise it could serve another entry point,
  // specialization or policy under a key every check calls fresh. And they
  // must describe the kernel it is filed under, not another variant.
  auto bound = check_key_binding(e).and_then([&] { return check_name_fields(e.kernel, e.id_fields); });
  KCACHE_CHECK(std::move(bound).map_error([](Error err) { return Error{Category::validation_failed, err.message}; }));
  // A cubin or PTX: its bytes must be what its namespace's arch runs
  // (core/cuda.hpp check_cuda_payload); loading it is the device's check.
  if (bundle_ns.backend == k_cuda_backend) {
    // Its lowered name is what the runtime resolves: a kernel entry of these bytes.
    KCACHE_CHECK(check_cuda_payload(e.payload_kind, bundle_ns.fingerprint, e.payload)
                     .and_then([&] { return check_cuda_symbol(e.payload_kind, e.payload, cuda_function_symbol(e)); })
                     .map_error([](Error err) {
                       return Error{Category::validation_failed, err.message};
                     }));
    return std::vector<std::uint8_t>{};
  }
  if (bundle_ns.backend == "spirv") {
    if (e.payload_kind != PayloadKind::spirv)
      return fail(Category::validation_failed, "a pipeline-cache blob in a spirv namespace");
    // Under the policy its id fields record (README "validate"): a module
    // stored with validate = "known" may use what this spirv-val does not
    // know; one stored with "off" is checked for structure only.
    const auto policy = definition::recorded_validate_policy(e.id_fields);
    // The record's policy is its own claim: one weaker than the importer
    // allows is refused, never believed (the stricter of the two applies).
    if (policy > allow)
      return fail(Category::validation_failed,
                  "its entry asks for validate = \"{}\" ({}), and this import accepts at most \"{}\": pass "
                  "--allow-validate {} to accept it, or import a bundle signed by a key you --trust",
                  definition::validate_policy_name(policy),
                  policy == definition::ValidatePolicy::off ? "its module checked for structure only"
                                                            : "what spirv-val does not know accepted",
                  definition::validate_policy_name(allow), definition::validate_policy_name(policy));
    // Refused before its words are copied: spirv-val would refuse it anyway.
    if (policy != definition::ValidatePolicy::off && e.payload.size() > compile::k_max_validated_module_bytes)
      return fail(Category::validation_failed, "the module is {} ({} bytes), over the {} spirv-val may check",
                  util::human_bytes(e.payload.size()), e.payload.size(),
                  util::human_bytes(compile::k_max_validated_module_bytes));
    auto words = KCACHE_TRY(compile::spirv_words(e.payload));
    std::string note;
    const Validation found = KCACHE_TRY(compile::validate_under(words, bundle_ns.fingerprint, policy, &note));
    if (flag) flag->validation = found, flag->note = std::move(note);
    return std::vector<std::uint8_t>{};
  }
  if (e.payload_kind != PayloadKind::pipeline_cache)
    return fail(Category::validation_failed, "a SPIR-V module in a vulkan namespace (expected a pipeline-cache blob)");
  if (has_per_card_fields(bundle_ns.record)) return device::rewrap_schema1_blob(e.payload, bundle_ns.record);
  KCACHE_CHECK(device::check_blob_against_record(e.payload, target));
  return std::vector<std::uint8_t>{};
}

/// A SPIR-V module a pipeline may be built from: the store's, or one of an
/// earlier section of the same release.
struct ModuleRef {
  util::Hash128 digest;  ///< its payload_digest
  /// Its bytes, for the pipeline interface check; null when not held (the
  /// store's module in a namespace a release carries: that section carries
  /// the modules of the release's pipelines).
  std::shared_ptr<const std::vector<std::uint8_t>> payload;
  bool strict = true;      ///< stored under validate = "strict": its pipelines' interface is checked (as verify)
  bool validated = false;  ///< spirv-val accepted it in this import
};

/// The SPIR-V modules a vulkan bundle's pipelines were built from, by
/// (spirv namespace, kernel). A pipeline entry is useless without its module
/// (the runtime and verify create the pipeline from it), and a trusted
/// runtime believes the interface it records, so import checks both.
using SpirvModules = std::map<std::pair<std::string, std::string>, ModuleRef>;

ModuleRef module_ref(const Entry& e, bool with_payload, bool validated) {
  ModuleRef m;
  m.digest = e.payload_digest;
  if (with_payload) m.payload = std::make_shared<const std::vector<std::uint8_t>>(e.payload);
  m.strict = definition::recorded_validate_policy(e.id_fields) == definition::ValidatePolicy::strict;
  m.validated = validated;
  return m;
}

/// The store's modules of a vulkan bundle's kernels, with their bytes.
Result<SpirvModules> spirv_modules(store::Store& store, const bundle::BundleHeader& header) {
  SpirvModules out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto& rec : KCACHE_TRY(r.namespace_records())) {
      if (rec.ns.backend != "spirv") continue;
      for (const auto& ie : header.index)
        if (auto e = r.get(rec.ns.name(), ie.kernel); e && *e)
          out.emplace(std::pair{rec.ns.name(), ie.kernel}, module_ref(**e, true, false));
    }
    return {};
  }));
  return out;
}

/// Whether the store (or the release) holds the exact module `pipeline` was
/// built from, and whether the interface the pipeline records is that
/// module's (device::check_pipeline_interface; spirv-val first, since
/// reflection trusts what it parses). Runs on a validator thread: `modules`
/// is not written while a vulkan section's entries are checked.
Result<void> check_pipeline_module(const Entry& pipeline, const SpirvModules& modules) {
  auto recipe = KCACHE_TRY(device::read_pipeline_recipe(pipeline));
  auto it = modules.find({recipe.spirv_namespace, pipeline.kernel});
  if (it == modules.end())
    return fail(Category::not_found,
                "its SPIR-V module is not in {} of this store, and a pipeline cannot be created without it: import "
                "the {} bundle first (kcache export --namespace {} where it was built)",
                recipe.spirv_namespace, recipe.spirv_namespace, recipe.spirv_namespace);
  const ModuleRef& m = it->second;
  if (m.digest != recipe.spirv_digest)
    return fail(Category::fingerprint_mismatch,
                "the store's SPIR-V module in {} differs from the one this pipeline was built from: import the "
                "matching {} bundle first",
                recipe.spirv_namespace, recipe.spirv_namespace);
  // Scheme 1 records no interface; a module under "known" or "off" is never
  // reflected (verify skips it alike).
  if (!KCACHE_TRY(device::read_pipeline_interface(pipeline)) || !m.strict) return {};
  if (!m.payload)
    return fail(Category::validation_failed,
                "its SPIR-V module is the store's, in {}, a namespace this release carries: a release carries the "
                "modules of its pipelines, and the interface this pipeline records cannot be checked otherwise",
                recipe.spirv_namespace);
  auto words = KCACHE_TRY(compile::spirv_words(*m.payload));
  const std::string target = recipe.spirv_namespace.substr(recipe.spirv_namespace.find('/') + 1);
  if (!m.validated && !compile::validate(words, target))
    return fail(Category::corruption, "its SPIR-V module in {} does not pass spirv-val", recipe.spirv_namespace);
  return device::check_pipeline_interface(pipeline, recipe, words);
}

/// What the conflict rules need of a stored entry (its payload is not kept).
/// A stored entry without its payload (its digest stands for it): what the
/// conflict rules compare.
using StoredFacts = Entry;
using StoredEntries = std::map<std::string, StoredFacts, std::less<>>;

/// The stored entries of `ns_name` named by the bundle's index, from one
/// snapshot. A stored record that fails its checks is left out: the store
/// overwrites such a record (it cannot serve anything), so it is no conflict.
Result<StoredEntries> stored_entries(store::Store& store, const std::string& ns_name,
                                     const bundle::BundleHeader& header) {
  StoredEntries out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto& ie : header.index) {
      auto e = r.get(ns_name, ie.kernel);
      if (!e) {
        if (e.error().category == Category::corruption || e.error().category == Category::version_mismatch) continue;
        return tl::unexpected(std::move(e).error());
      }
      if (*e) {
        (*e)->payload = {};
        out.emplace(ie.kernel, std::move(**e));
      }
    }
    return {};
  }));
  return out;
}

/// The conflict rules (docs/design.md "Import policy"): the same key with
/// another product (module bytes, validation, lowered name) or other fields,
/// or another key built before the stored entry.
std::optional<ImportConflict> find_conflict(const Entry& incoming, const StoredFacts& stored) {
  std::optional<ConflictKind> kind;
  std::optional<std::string> difference;
  if (stored.key == incoming.key) {
    if ((difference = product_difference(stored, incoming))) kind = ConflictKind::same_key_other_bytes;
  } else if (incoming.created < stored.created) {
    kind = ConflictKind::older;
    difference = bundle::record_difference(stored, incoming, "the store", "the bundle");
  }
  if (!kind) return std::nullopt;
  return ImportConflict{incoming.kernel,
                        *kind,
                        stored.key,
                        incoming.key,
                        stored.payload_digest,
                        incoming.payload_digest,
                        stored.created,
                        incoming.created,
                        difference.value_or(std::string())};
}

Error conflict_error(const ImportConflict& c) {
  if (c.kind == ConflictKind::same_key_other_bytes)
    return {Category::validation_failed,
            fmt::format("the store has this kernel with the same key ({}) but another build of it ({}: stored "
                        "≠ bundle): a key names exactly one build, so a bundle that changes what stands behind a "
                        "known key is forged or comes from a non-reproducible build, and is not taken silently; "
                        "rebuild it, or pass --replace to take the bundle's entry",
                        c.bundle_key.ir.hex().substr(0, 16), c.difference)};
  return {Category::validation_failed,
          fmt::format("the bundle's entry was built {}, before the stored one built {}, and differs from it ({}): "
                      "importing it would roll the kernel back to an older build; pass --replace to take the "
                      "older entry",
                      util::iso_time(c.bundle_created), util::iso_time(c.stored_created), c.difference)};
}

ImportAction classify(const Entry& incoming, const StoredEntries& stored) {
  auto it = stored.find(incoming.kernel);
  if (it == stored.end()) return ImportAction::imported;
  const auto& s = it->second;
  if (s.key == incoming.key && !product_difference(s, incoming) && s.inputs == incoming.inputs)
    return ImportAction::already_present;
  return ImportAction::replaced;
}

/// What an import asks of each entry beyond its payload's checks.
struct EntryRules {
  definition::ValidatePolicy allow = definition::ValidatePolicy::strict;  ///< weakest policy accepted
  std::uint64_t now = 0;                                                  ///< for check_not_future
  const SpirvModules* modules = nullptr;  ///< a vulkan section's: its pipelines' modules
};

/// Validates entries on worker threads while the caller's thread reads
/// them, handing results back in bundle order.
Result<PayloadChecked> check_for_import(const Entry& e, const Namespace& ns, const FingerprintRecord& target,
                                        const EntryRules& rules) {
  // A build dated in the future would outrank every later honest one (the
  // rollback rule below) until that date: the remote tier's rule.
  KCACHE_CHECK(check_not_future(e.created, rules.now, "the entry was built"));
  PayloadChecked out;
  out.payload = KCACHE_TRY(check_payload(e, ns, target, rules.allow, &out));
  if (rules.modules && e.payload_kind == PayloadKind::pipeline_cache)
    KCACHE_CHECK(check_pipeline_module(e, *rules.modules));
  return out;
}
using ValidatorWindow = util::OrderedParallelMap<Entry, Result<PayloadChecked>>;

/// Bytes the validators may hold at once beyond one entry. With typical
/// records (kilobytes) the window's count (4 per thread) binds; with large
/// records or modules this does, so that -j never multiplies the largest
/// one (FORMAT.md "Memory").
constexpr std::uint64_t k_validate_budget = 64u << 20;

/// What validating an entry of `payload` bytes may hold: the entry, and for
/// a module its words and spirv-val's working set, which grows with the
/// instruction count (about 150 bytes per one-word instruction, so 40x the
/// module at worst, within compile::k_max_validated_instructions).
std::uint64_t validation_cost(PayloadKind kind, std::uint64_t payload) {
  if (kind != PayloadKind::spirv || payload > compile::k_max_validated_module_bytes) return payload;
  return 2 * payload +
         std::min<std::uint64_t>(40 * payload, 160 * std::uint64_t{compile::k_max_validated_instructions});
}

}  // namespace

std::string_view import_action_name(ImportAction a) {
  switch (a) {
    case ImportAction::imported: return "imported";
    case ImportAction::already_present: return "already_present";
    case ImportAction::replaced: return "replaced";
    case ImportAction::refused: return "refused";
  }
  return "?";
}

std::string_view conflict_kind_name(ConflictKind k) {
  switch (k) {
    case ConflictKind::same_key_other_bytes: return "same_key_other_bytes";
    case ConflictKind::older: return "older";
  }
  return "?";
}

namespace {

/// The target a section of a bundle is checked against. In a release, a
/// SPIR-V section is portable (its own target environment); --device and
/// --fingerprint name the device the release's vulkan and CUDA sections are
/// for.
ImportTarget section_target(const ImportTarget& given, const Namespace& ns, bool in_release) {
  if (in_release && ns.backend == "spirv") return {};
  return given;
}

/// The namespace a section's entries go to. A vulkan bundle of fingerprint
/// schema 1 (its record names one card) goes to its compatibility class,
/// where every card of that GPU model and driver finds it.
Namespace destination(const Namespace& ns) { return ns.backend == "vulkan" ? vulkan_namespace(ns.record) : ns; }

/// Checks `ns` (a section as the bundle has it) against its target; the
/// target in words.
Result<Target> check_target(store::Store& store, const Namespace& ns, const ImportTarget& t, const std::string& label) {
  auto target = KCACHE_TRY(resolve_target(store, destination(ns), t));
  if (auto diffs = diff_fingerprints(compatible_record(ns.record), compatible_record(target.record)); !diffs.empty())
    return fail(Category::fingerprint_mismatch, "{} ({}) does not match {}: {}", label, ns.name(), target.text,
                describe_differences(diffs, "bundle", "target"));
  return target;
}

/// Every stored entry of `ns_name` (payloads dropped): a release's conflict
/// snapshot, taken before its sections' heads are read.
Result<StoredEntries> stored_namespace(store::Store& store, const std::string& ns_name) {
  StoredEntries out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto& rec : KCACHE_TRY(r.namespace_records()))
      if (rec.ns.name() == ns_name)
        return r.scan(ns_name, [&](Entry&& e) {
          e.payload = {};
          out.emplace(e.kernel, std::move(e));
          return true;
        });
    return {};
  }));
  return out;
}

/// Every SPIR-V module the store holds: what a release's pipelines may be
/// built from besides its own SPIR-V sections. The bytes are kept only of
/// namespaces the release does not carry (`carried`): a carried one's
/// pipelines take their modules from its section, and the store's whole
/// namespace is not held in memory for them.
Result<SpirvModules> all_spirv_modules(store::Store& store, const std::set<std::string>& carried) {
  SpirvModules out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto& rec : KCACHE_TRY(r.namespace_records())) {
      if (rec.ns.backend != "spirv") continue;
      const std::string name = rec.ns.name();
      const bool keep = !carried.contains(name);
      KCACHE_CHECK(r.scan(name, [&](Entry&& e) {
        out.emplace(std::pair{name, e.kernel}, module_ref(e, keep, false));
        return true;
      }));
    }
    return {};
  }));
  return out;
}

/// What the store holds of the kernels a delta keeps and removes, from one
/// snapshot. A stored record that fails its checks is an error (corruption):
/// a delta is not applied over a damaged store.
Result<HeldEntries> held_entries(store::Store& store, const std::string& ns_name, const bundle::DeltaBase& d) {
  HeldEntries out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto* list : {&d.kept, &d.removed})
      for (const auto& k : *list)
        if (auto e = KCACHE_TRY(r.get(ns_name, k))) out.emplace(k, HeldEntry{e->key, e->created});
    return {};
  }));
  return out;
}

/// Up to five names quoted, and how many more: "'a', 'b' and 3 more".
std::string some_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 5; ++i)
    out += fmt::format("{}'{}'", i ? ", " : "", util::shown_untrusted(names[i]));
  if (names.size() > 5) out += fmt::format(" and {} more", names.size() - 5);
  return out;
}

/// One section of the bundle being imported, with what its entries are
/// checked against.
struct Section {
  explicit Section(bundle::BundleReader r) : reader(std::move(r)) {}
  bundle::BundleReader reader;
  std::size_t index = 0;  ///< in the bundle, and in the put's namespace list
  std::string label;
  const Target* target = nullptr;
  const StoredEntries* stored = nullptr;
  std::unique_ptr<ValidatorWindow> window;
};

}  // namespace

Result<DeltaPlan> plan_delta(const bundle::BundleHeader& header, const HeldEntries& held,
                             const DeltaAuthority& authority, std::string_view label) {
  if (!header.delta) return fail(Category::invalid_argument, "{} is not a delta bundle", label);
  const bundle::DeltaBase& d = *header.delta;
  const bool keyed = header.format_version >= 6;  // records BASE's keys of what it removes
  if (keyed && (d.kept_tags.size() != d.kept.size() || d.removed_keys.size() != d.removed.size()))
    return fail(Category::invalid_argument, "{}: a format-6 delta without a tag per kept and a key per removed kernel",
                label);
  // BASE as a refusal names it: its file name (format 6) and digest.
  const std::string base = fmt::format(
      "{} is a delta on {}(BLAKE2b {}...)", label,
      d.base_name.empty() ? std::string("the bundle ") : fmt::format("'{}' ", util::shown_untrusted(d.base_name)),
      d.base_digest.hex().substr(0, 16));

  // The store must hold what it keeps of BASE exactly: same kernels, same keys.
  std::vector<std::string> missing;
  std::vector<std::pair<std::string, Key>> pairs;
  for (const auto& k : d.kept) {
    auto it = held.find(k);
    if (it == held.end()) missing.push_back(k);
    else pairs.emplace_back(k, it->second.key);
  }
  if (!missing.empty())
    return fail(Category::not_found,
                "{}; the store lacks {} of the {} entries of it the delta keeps: {}: import that bundle first, then "
                "this delta",
                base, missing.size(), d.kept.size(), some_names(missing));
  if (bundle::kept_entries_digest(pairs) != d.kept_digest) {
    std::vector<std::string> differ;
    if (keyed)
      for (std::size_t i = 0; i < pairs.size(); ++i)
        if (bundle::kept_entry_tag(pairs[i].first, pairs[i].second) != d.kept_tags[i]) differ.push_back(pairs[i].first);
    return fail(Category::fingerprint_mismatch,
                "{}; the store holds the {} kernels of it the delta keeps, but not all as that bundle built them: "
                "{}: this store does not hold that bundle; import it first, or import a whole bundle",
                base, d.kept.size(),
                !differ.empty() ? fmt::format("{} under other keys", some_names(differ))
                : keyed         ? std::string("its kept tags do not say which")
                                : std::string("a format-5 delta cannot say which"));
  }

  // A removal takes only BASE's own build of a kernel: the key a format-6
  // delta records for it. A format-5 delta records none; it is taken only
  // for an entry built no later than the delta was written, never a later
  // build it cannot have seen.
  DeltaPlan plan;
  for (std::size_t i = 0; i < d.removed.size(); ++i) {
    auto it = held.find(d.removed[i]);
    if (it == held.end()) continue;
    const bool bases = keyed ? it->second.key == d.removed_keys[i] : it->second.created <= header.created;
    (bases ? plan.remove : plan.not_removed).push_back(d.removed[i]);
  }
  if (plan.remove.empty()) return plan;
  // Removing is never a bundle's own say: anyone can write a delta that
  // lists a whole namespace.
  if (!keyed && !authority.replace)
    return fail(Category::validation_failed,
                "{}; it would remove {} entries of the store ({}), but a format-5 delta records no keys for what it "
                "removes, so it cannot show they are that bundle's builds: nothing was written; pass --replace to "
                "remove them anyway (never an entry built after the delta was written)",
                base, plan.remove.size(), some_names(plan.remove));
  if (!authority.replace && !authority.trusted)
    return fail(Category::validation_failed,
                "{}; it would remove {} entries of the store ({}), and removing needs a delta signed by a key you "
                "--trust, or --replace: nothing was written",
                base, plan.remove.size(), some_names(plan.remove));
  return plan;
}

std::size_t ImportResult::total_entries() const {
  std::size_t n = 0;
  for (const auto& s : sections) n += s.entries;
  return sections.empty() ? header.index.size() : n;
}

Result<ImportResult> import_bundle(store::Store& store, const BundleStream& in, const ImportOptions& options) {
  bundle::ReadLimits limits = options.limits;
  if (limits.threads == 0) limits.threads = 1;  // ImportOptions::jobs says why
  auto release = KCACHE_TRY(bundle::ReleaseReader::open(in, limits));
  const bool is_release = release.release().has_value();
  ImportResult result;
  result.dry_run = options.dry_run;
  const std::uint64_t now = options.clock->now();
  // A signature verified under a --trust key vouches for what a bundle's
  // records ask (a weaker validation policy) and for a delta's removals.
  const bool trusted = !options.trusted.empty();
  EntryRules rules;
  rules.allow = trusted ? definition::ValidatePolicy::off : options.allow_validate;
  rules.now = now;
  if (is_release) KCACHE_CHECK(check_not_future(release.release()->created, now, in.label() + " was written"));

  // Everything that needs only heads comes first: a foreign or untrusted
  // bundle is refused before a byte of payload is decompressed. A release
  // lists every section's namespace in its head, so each is checked against
  // its target before the first section is read.
  std::vector<Namespace> into;                           // per section: where its entries go
  std::vector<Target> targets;                           // per section
  std::vector<StoredEntries> stored;                     // per section: the conflict snapshot
  std::optional<SpirvModules> modules;                   // the modules pipelines may name
  std::vector<store::Store::NamespacedKernel> removals;  // a delta's, that the store holds
  if (is_release) {
    bool vulkan = false;
    std::set<std::string> carried;  // its spirv namespaces
    for (const auto& s : release.release()->sections) {
      targets.push_back(KCACHE_TRY(check_target(store, s.ns, section_target(options.target, s.ns, true), in.label())));
      into.push_back(destination(s.ns));
      vulkan = vulkan || s.ns.backend == "vulkan";
      if (s.ns.backend == "spirv") carried.insert(s.ns.name());
    }
    // The snapshots the conflict rules compare with, read before the write
    // transaction begins (the Store interface allows no read from inside
    // it). The sections' indexes come later in the stream, so each
    // namespace is read whole.
    for (const auto& ns : into) stored.push_back(KCACHE_TRY(stored_namespace(store, ns.name())));
    if (vulkan) modules = KCACHE_TRY(all_spirv_modules(store, carried));
  }

  std::unique_ptr<Section> cur;
  std::size_t opened = 0;
  // Opens the next section: its head checked (against the release head by
  // the reader; here its fingerprint and signature). false after the last.
  auto open_next = [&]() -> Result<bool> {
    if (cur) {
      cur->window.reset();  // its checks read the section's index
      if (cur->index == 0) result.header = cur->reader.take_header();
      cur.reset();
    }
    auto reader = KCACHE_TRY(release.next_section());
    if (!reader) {
      KCACHE_CHECK(release.finish());
      return false;
    }
    cur = std::make_unique<Section>(std::move(*reader));
    cur->index = opened++;
    cur->label = release.section_label();
    const bundle::BundleHeader& header = cur->reader.header();
    if (!is_release) {
      targets.push_back(KCACHE_TRY(check_target(store, header.ns, options.target, in.label())));
      into.push_back(destination(header.ns));
    }
    cur->target = &targets[cur->index];
    KCACHE_CHECK(check_not_future(header.created, now, cur->label + " was written"));
    ImportedSection seen{header.ns, header.index.size(), cur->target->text, std::nullopt,
                         header.signature ? std::optional(header.signature->key_id) : std::nullopt};
    if (!options.trusted.empty())
      seen.signer = KCACHE_TRY(bundle::in_context(bundle::verify_signature(header, options.trusted), cur->label));
    if (cur->index == 0) result.signer = seen.signer, result.target = seen.target;
    result.sections.push_back(std::move(seen));
    if (!is_release) {
      if (header.ns.backend == "vulkan") modules = KCACHE_TRY(spirv_modules(store, header));
      // The snapshot the conflict rules compare with, read before the write
      // transaction begins: while put_stream pulls entries the store holds
      // its writer lock, and the Store interface allows no read from inside
      // it (the memory store's lock is not reentrant). A writer that changes
      // one of these kernels in between is not compared; docs/design.md
      // "Import policy".
      stored.push_back(KCACHE_TRY(stored_entries(store, into.back().name(), header)));
      if (header.delta) {
        auto held = KCACHE_TRY(held_entries(store, into.back().name(), *header.delta));
        auto plan = KCACHE_TRY(plan_delta(header, held, {options.replace, trusted}, in.label()));
        for (auto& k : plan.remove) removals.push_back({0, std::move(k)});
        result.not_removed = std::move(plan.not_removed);
      }
    } else if (header.delta) {
      return fail(Category::corruption, "{}: a delta bundle inside a release", cur->label);
    }
    cur->stored = &stored[cur->index];
    Section& section = *cur;
    const Namespace& ns = header.ns;
    // The next entry costs the reader its record and the decoded entry, then
    // its validation.
    ValidatorWindow::Budget budget{
        k_validate_budget, [](const Entry& e) { return validation_cost(e.payload_kind, e.payload.size()); },
        [&section]() -> std::uint64_t {
          const auto& index = section.reader.header().index;
          const std::size_t i = section.reader.entries_read();
          if (i >= index.size()) return 0;
          const auto& ie = index[i];
          return std::max(2 * ie.record_size, validation_cost(ie.payload_kind, ie.payload_size));
        }};
    // A vulkan section's pipelines are checked against their modules; no
    // module is added to `modules` while its validators run (only SPIR-V
    // sections add theirs, next_valid).
    EntryRules section_rules = rules;
    if (ns.backend == "vulkan" && modules) section_rules.modules = &*modules;
    cur->window = KCACHE_TRY(ValidatorWindow::start(
        util::worker_threads(options.jobs),
        [&section, &ns, section_rules](const Entry& e) {
          return check_for_import(e, ns, section.target->record, section_rules);
        },
        std::move(budget)));
    return true;
  };

  KCACHE_CHECK(open_next());
  // Nothing to import: check the rest of the file (trailer digests) and
  // write nothing, not even a namespace record, which would leave an empty
  // namespace (and a new store) behind.
  const std::uint64_t declared = [&] {
    if (!is_release) return static_cast<std::uint64_t>(cur->reader.header().index.size());
    std::uint64_t n = 0;
    for (const auto& s : release.release()->sections) n += s.entries;
    return n;
  }();
  if (declared == 0 && removals.empty()) {
    while (cur) {
      if (auto e = KCACHE_TRY(bundle::in_context(cur->reader.next(), cur->label)))
        return fail(Category::corruption, "{}: an entry the index does not list", cur->label);
      KCACHE_CHECK(bundle::in_context(cur->reader.finish(), cur->label));
      if (!KCACHE_TRY(open_next())) break;
    }
    result.empty_bundle = true;
    return result;
  }

  std::string origin = in.fd >= 0 ? in.label() : "bundle " + in.path.filename().string();
  // Reads, checks and validates the next entry of the current section;
  // invalid entries are recorded and skipped, so every refusal is listed,
  // not just the first.
  auto read = [&]() -> Result<std::optional<Entry>> {
    auto e = KCACHE_TRY(bundle::in_context(cur->reader.next(), cur->label));
    if (!e) KCACHE_CHECK(bundle::in_context(cur->reader.finish(), cur->label));
    return e;
  };
  auto next_valid = [&]() -> Result<std::optional<store::Store::NamespacedEntry>> {
    while (cur) {
      auto checked = KCACHE_TRY(cur->window->next(read));
      if (!checked) {
        KCACHE_CHECK(open_next());
        continue;
      }
      if (!checked->result) {
        result.refused.push_back({checked->item.kernel, std::move(checked->result).error()});
        continue;
      }
      if (!checked->result->payload.empty()) {
        checked->item.payload = std::move(checked->result->payload);
        seal_payload(checked->item);
      }
      if (checked->result->validation) {  // what this store's validator found, not what the bundle says
        checked->item.validation = *checked->result->validation;
        checked->item.validation_note = std::move(checked->result->note);
      }
      // After a re-wrap, so that the payload compared is the one stored.
      if (auto it = cur->stored->find(checked->item.kernel); it != cur->stored->end())
        if (auto conflict = find_conflict(checked->item, it->second)) {
          result.conflicts.push_back(std::move(*conflict));
          if (!options.replace) {
            result.refused.push_back({checked->item.kernel, conflict_error(result.conflicts.back())});
            continue;
          }
        }
      // A release's pipelines may be built from its own modules (validated
      // here: their interface check need not run spirv-val again).
      if (modules && checked->item.payload_kind == PayloadKind::spirv && into[cur->index].backend == "spirv")
        (*modules)[{into[cur->index].name(), checked->item.kernel}] =
            module_ref(checked->item, true, checked->item.validation == Validation::validated);
      checked->item.origin_kind = OriginKind::imported;
      checked->item.origin_detail = origin;
      return std::optional<store::Store::NamespacedEntry>{{cur->index, std::move(checked->item)}};
    }
    return std::optional<store::Store::NamespacedEntry>{};
  };

  result.removed = removals.size();
  if (options.dry_run) {
    while (auto e = KCACHE_TRY(next_valid())) {
      switch (classify(e->entry, stored[e->ns])) {
        case ImportAction::imported: ++result.imported; break;
        case ImportAction::already_present: ++result.already_present; break;
        default: ++result.replaced; break;
      }
    }
    return result;
  }

  // The write: one transaction fed one entry at a time. A refusal found
  // anywhere (or damage found by a finish() at the very end) aborts it.
  static constexpr std::string_view k_refused = "entries refused";
  auto stream = [&]() -> Result<std::optional<store::Store::NamespacedEntry>> {
    auto e = KCACHE_TRY(next_valid());
    if (!e && !result.refused.empty()) return fail(Category::validation_failed, "{}", k_refused);
    if (!result.refused.empty()) {
      // Keep validating the rest to list every refusal, but write no more.
      while (KCACHE_TRY(next_valid())) {}
      return fail(Category::validation_failed, "{}", k_refused);
    }
    return e;
  };
  auto summary = store.put_streams(into, stream, removals);
  if (cur) cur->window.reset();
  if (!summary) {
    if (!result.refused.empty() && summary.error().message == k_refused) return result;
    return tl::unexpected(std::move(summary).error());
  }
  result.imported = summary->written;
  result.replaced = summary->replaced;
  result.already_present = summary->already_present;
  result.removed = summary->removed;
  result.written = summary->written + summary->replaced + summary->removed > 0;
  return result;
}

std::optional<Error> import_verdict(const ImportResult& r, bool replace, std::string_view label) {
  if (r.empty_bundle || r.refused.empty()) return std::nullopt;
  const std::size_t conflict_refusals = replace ? 0 : r.conflicts.size();
  if (conflict_refusals > 0 && r.refused.size() == conflict_refusals)
    return Error{Category::validation_failed,
                 fmt::format("{} of {} entries of {} conflict with the store's entries; nothing {} imported. Pass "
                             "--replace to take the bundle's entries anyway",
                             r.conflicts.size(), r.total_entries(), label, r.dry_run ? "would be" : "was")};
  return Error{
      Category::corruption,
      fmt::format("{} of {} entries of {} {}; nothing was imported", r.refused.size(), r.total_entries(), label,
                  conflict_refusals == 0
                      ? std::string("failed validation")
                      : fmt::format("failed validation or conflict with the store ({} conflicts)", conflict_refusals))};
}

}  // namespace kcache::transfer
