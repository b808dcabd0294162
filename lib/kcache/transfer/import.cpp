// import_bundle, step by step: opens a bundle's sections in order and streams their checked entries into one write.
#include "kcache/transfer/import_internal.hpp"

#include "kcache/bundle/release.hpp"
#include "kcache/bundle/stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache::transfer {
namespace internal {
namespace {

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

/// One import_bundle call: what its steps share, from the bundle's heads to
/// the result. Not moved (the validators point into it); `cur` is declared
/// after what its validators read, so that it is destroyed (its threads
/// joined) first.
class ImportRun {
 public:
  ImportRun(store::Store& store, const BundleStream& in, const ImportOptions& options, bundle::ReleaseReader& release)
      : store(store),
        in(in),
        options(options),
        release(release),
        is_release(release.release().has_value()),
        origin(in.fd >= 0 ? in.label() : "bundle " + in.path.filename().string()),
        now(options.clock->now()),
        trusted(!options.trusted.empty()) {
    result.dry_run = options.dry_run;
    rules.allow = trusted ? definition::ValidatePolicy::off : options.allow_validate;
    rules.now = now;
  }
  ImportRun(const ImportRun&) = delete;
  ImportRun& operator=(const ImportRun&) = delete;

  Result<void> check_release_heads();
  Result<bool> open_next();
  std::uint64_t declared_entries() const;
  bool removes_anything() const { return !removals.empty(); }
  Result<ImportResult> check_empty_bundle();
  Result<ImportResult> count_dry_run();
  Result<ImportResult> write();

 private:
  void close_section();
  Result<void> check_section_head(const bundle::BundleHeader& header);
  Result<void> snapshot_store(const bundle::BundleHeader& header);
  Result<void> start_validators();
  Result<std::optional<Entry>> read_entry();
  Result<std::optional<store::Store::NamespacedEntry>> next_valid();

  store::Store& store;
  const BundleStream& in;
  const ImportOptions& options;
  bundle::ReleaseReader& release;
  const bool is_release;
  const std::string origin;  ///< what imported entries record as their origin
  const std::uint64_t now;
  /// A signature verified under a --trust key vouches for what a bundle's
  /// records ask (a weaker validation policy) and for a delta's removals.
  const bool trusted;
  ImportResult result;
  EntryRules rules;
  std::vector<Namespace> into;                           // per section: where its entries go
  std::vector<Target> targets;                           // per section
  std::vector<StoredEntries> stored;                     // per section: the conflict snapshot
  std::optional<SpirvModules> modules;                   // the modules pipelines may name
  std::vector<store::Store::NamespacedKernel> removals;  // a delta's, that the store holds
  std::unique_ptr<Section> cur;
  std::size_t opened = 0;
};

/// Everything that needs only heads comes first: a foreign or untrusted
/// bundle is refused before a byte of payload is decompressed. A release
/// lists every section's namespace in its head, so each is checked against
/// its target before the first section is read.
Result<void> ImportRun::check_release_heads() {
  if (!is_release) return {};
  KCACHE_CHECK(check_not_future(release.release()->created, now, in.label() + " was written"));
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
  return {};
}

/// Ends the current section, if any: its validators stopped, the first
/// section's head kept for the result.
void ImportRun::close_section() {
  if (!cur) return;
  cur->window.reset();  // its checks read the section's index
  if (cur->index == 0) result.header = cur->reader.take_header();
  cur.reset();
}

/// Opens the next section: its head checked (against the release head by
/// the reader; here its fingerprint and signature). false after the last.
Result<bool> ImportRun::open_next() {
  close_section();
  auto reader = KCACHE_TRY(release.next_section());
  if (!reader) {
    KCACHE_CHECK(release.finish());
    return false;
  }
  cur = std::make_unique<Section>(std::move(*reader));
  cur->index = opened++;
  cur->label = release.section_label();
  const bundle::BundleHeader& header = cur->reader.header();
  KCACHE_CHECK(check_section_head(header));
  if (!is_release) {
    KCACHE_CHECK(snapshot_store(header));
  } else if (header.delta) {
    return fail(Category::corruption, "{}: a delta bundle inside a release", cur->label);
  }
  cur->stored = &stored[cur->index];
  KCACHE_CHECK(start_validators());
  return true;
}

/// The current section's fingerprint (a plain bundle's target is found
/// here), creation time and signature; its ImportedSection in the result.
Result<void> ImportRun::check_section_head(const bundle::BundleHeader& header) {
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
  return {};
}

/// A plain bundle's snapshots of the store, once its head is checked: the
/// modules its pipelines may name, the stored entries of its kernels, and
/// for a delta the removals it may make.
Result<void> ImportRun::snapshot_store(const bundle::BundleHeader& header) {
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
  return {};
}

/// Starts the current section's validator threads, within k_validate_budget.
Result<void> ImportRun::start_validators() {
  Section& section = *cur;
  const Namespace& ns = section.reader.header().ns;
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
  return {};
}

/// The entries the bundle's heads declare, of every section.
std::uint64_t ImportRun::declared_entries() const {
  if (!is_release) return static_cast<std::uint64_t>(cur->reader.header().index.size());
  std::uint64_t n = 0;
  for (const auto& s : release.release()->sections) n += s.entries;
  return n;
}

/// Nothing to import: checks the rest of the file (trailer digests) and
/// writes nothing, not even a namespace record, which would leave an empty
/// namespace (and a new store) behind.
Result<ImportResult> ImportRun::check_empty_bundle() {
  while (cur) {
    if (auto e = KCACHE_TRY(bundle::in_context(cur->reader.next(), cur->label)))
      return fail(Category::corruption, "{}: an entry the index does not list", cur->label);
    KCACHE_CHECK(bundle::in_context(cur->reader.finish(), cur->label));
    if (!KCACHE_TRY(open_next())) break;
  }
  result.empty_bundle = true;
  return std::move(result);
}

/// Reads the next entry of the current section; at its end, checks the
/// section's finish.
Result<std::optional<Entry>> ImportRun::read_entry() {
  auto e = KCACHE_TRY(bundle::in_context(cur->reader.next(), cur->label));
  if (!e) KCACHE_CHECK(bundle::in_context(cur->reader.finish(), cur->label));
  return e;
}

/// Reads, checks and validates the next entry of the current section;
/// invalid entries are recorded and skipped, so every refusal is listed,
/// not just the first.
Result<std::optional<store::Store::NamespacedEntry>> ImportRun::next_valid() {
  while (cur) {
    auto checked = KCACHE_TRY(cur->window->next([this] { return read_entry(); }));
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
    // Signed by a key the import trusts, its recorded inputs are believed as
    // a build's here (the signer vouches that they gave its key): the warm
    // path serves it without an expansion. Otherwise they are its own claim
    // until one expansion here confirms them (docs/design.md "The key binds
    // everything").
    checked->item.origin_kind = trusted ? OriginKind::confirmed : OriginKind::imported;
    checked->item.origin_detail = origin;
    return std::optional<store::Store::NamespacedEntry>{{cur->index, std::move(checked->item)}};
  }
  return std::optional<store::Store::NamespacedEntry>{};
}

/// A dry run: every entry read and checked, and counted as it would fare.
Result<ImportResult> ImportRun::count_dry_run() {
  result.removed = removals.size();
  while (auto e = KCACHE_TRY(next_valid())) {
    switch (classify(e->entry, stored[e->ns])) {
      case ImportAction::imported: ++result.imported; break;
      case ImportAction::already_present: ++result.already_present; break;
      default: ++result.replaced; break;
    }
  }
  return std::move(result);
}

/// The write: one transaction fed one entry at a time. A refusal found
/// anywhere (or damage found by a finish() at the very end) aborts it.
Result<ImportResult> ImportRun::write() {
  result.removed = removals.size();
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
    if (!result.refused.empty() && summary.error().message == k_refused) return std::move(result);
    return tl::unexpected(std::move(summary).error());
  }
  result.imported = summary->written;
  result.replaced = summary->replaced;
  result.already_present = summary->already_present;
  result.removed = summary->removed;
  result.written = summary->written + summary->replaced + summary->removed > 0;
  return std::move(result);
}

}  // namespace
}  // namespace internal

std::size_t ImportResult::total_entries() const {
  std::size_t n = 0;
  for (const auto& s : sections) n += s.entries;
  return sections.empty() ? header.index.size() : n;
}

Result<ImportResult> import_bundle(store::Store& store, const BundleStream& in, const ImportOptions& options) {
  bundle::ReadLimits limits = options.limits;
  if (limits.threads == 0) limits.threads = 1;  // ImportOptions::jobs says why
  auto release = KCACHE_TRY(bundle::ReleaseReader::open(in, limits));
  internal::ImportRun run(store, in, options, release);
  KCACHE_CHECK(run.check_release_heads());
  KCACHE_CHECK(run.open_next());
  if (run.declared_entries() == 0 && !run.removes_anything()) return run.check_empty_bundle();
  if (options.dry_run) return run.count_dry_run();
  return run.write();
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

Result<void> discard_store_if_unfilled(std::unique_ptr<store::Store>& store, const std::filesystem::path& dir,
                                       bool created, const Result<ImportResult>& result) {
  if (!created || (result && result->written)) return {};
  store.reset();  // no Store of `dir` may be open when it is removed
  KCACHE_CHECK(store::remove_store_if_empty(dir));
  return {};
}

}  // namespace kcache::transfer
