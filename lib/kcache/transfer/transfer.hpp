// Moving namespaces between stores through bundles (docs/architecture.md
// "Data flow: import"): export a namespace of a store to a bundle, import a
// bundle into a store. The bundle module knows the bytes (and merges bundles);
// this module knows the policy: what to select, which fingerprint a bundle
// must match, what every entry must pass before anything is written.
//
// Memory: every operation streams one entry at a time (export reads its
// entries inside one read snapshot, import writes them through
// Store::put_stream inside one write transaction). What LMDB itself holds for
// an open write transaction (its dirty pages, about the bytes imported) is
// the store's; lib/kcache/bundle/FORMAT.md "Memory" states the bound.
//
// Nothing here prints. Thread-safety: each call is independent; a Store may
// be shared as store.hpp allows.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/bundle/stream.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/cuda_device/cuda_device.hpp"
#include "kcache/definition/kernel_spec.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/clock.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::transfer {

using bundle::BundleStream;

/// Which entries an export takes.
struct ExportSelection {
  std::string ns_name;  ///< "spirv/vulkan1.2"; empty = by backend and fingerprint
  std::string backend;  ///< with `fingerprint`, an alternative to ns_name
  std::string fingerprint;
  std::vector<std::string> kernel_globs;  ///< empty = every entry; else entries matching any
  /// When set, only these kernels (exact names), within kernel_globs.
  std::optional<std::set<std::string, std::less<>>> kernels;
};

struct ExportResult {
  Namespace ns;
  std::size_t entries = 0;  ///< in the bundle (a delta: added and replaced)
  /// A delta: BASE's entries kept (not shipped) and removed.
  std::optional<std::size_t> kept, removed;
  std::uint64_t record_bytes = 0;   ///< uncompressed entry records
  std::uint64_t payload_bytes = 0;  ///< the artifacts alone
  std::uint64_t bundle_bytes = 0;   ///< size of the written bundle (0 when written to an fd)
  std::optional<bundle::KeyId> signer;
  /// Selected entries of the namespace whose records fail their checks:
  /// left out of the bundle (not counted above), listed for the caller to
  /// report (store::DamagedEntry).
  std::vector<store::DamagedEntry> damaged;
};

/// The tool versions a bundle written here records: kcache, glslang, SPIRV-Tools.
std::vector<Field> bundle_tool_versions();

struct ExportOptions {
  bundle::WriteOptions write;
  /// Unix seconds recorded as the bundle's creation time; 0: its newest
  /// entry's (so the same entries export to the same bytes; a release's
  /// sections are written so).
  std::uint64_t created = 0;
  /// When set, a delta bundle (format version 6) of what changed since this
  /// bundle of the same namespace: entries added or replaced (another key),
  /// BASE's kernels kept (with a tag of their keys) and removed (with their
  /// keys in BASE), BASE named by its BLAKE2b digest and file name.
  std::filesystem::path since;
  /// With write.sign: sign entries that came from a remote cache too
  /// (is_remote_origin). Without it such an entry makes the export fail
  /// (invalid_argument naming it): a value fetched from a remote, trusted or
  /// not, is not vouched for as a build of this machine.
  bool sign_remote_entries = false;
};

/// Whether `e` came from a remote cache (remote::RemoteTier stores a fetched
/// value with origin "remote URL"; a build that confirms its key keeps that
/// origin): its payload was not built here.
bool is_remote_origin(const Entry& e);

/// Writes the selected entries of `store` as a bundle to `out` (a path is
/// written atomically; an fd incrementally). The namespace is ns_name, or
/// backend/fingerprint, or the store's only namespace. Errors: invalid_argument
/// when no selector is given and the store holds several namespaces (the
/// message lists them) or the selector is half given; not_found for an
/// unknown namespace or globs that match nothing (listing what exists);
/// store and I/O errors unchanged. Reads one snapshot, one entry at a time.
/// A damaged entry is not an error: it is left out and listed in `damaged`.
Result<ExportResult> export_bundle(store::Store& store, const ExportSelection& selection, const BundleStream& out,
                                   const ExportOptions& options);

/// What a release bundle (bundle/release.hpp) takes: several namespaces in
/// one file, e.g. everything one GPU class needs.
struct ReleaseSelection {
  std::vector<std::string> namespaces;  ///< exported whole (within kernel_globs)
  /// A vulkan fingerprint id: that class's pipelines, with each SPIR-V
  /// module they were built from (only those kernels of each spirv
  /// namespace). Empty: none.
  std::string for_device;
  std::vector<std::string> kernel_globs;  ///< as ExportSelection's, for every namespace named
  /// An existing folder where the sections are written before the release
  /// is assembled (the caller removes it).
  std::filesystem::path scratch;
};

struct ReleaseExportResult {
  std::vector<ExportResult> sections;  ///< in the release's order (SPIR-V first)
  std::uint64_t bundle_bytes = 0;      ///< size of the release (0 when written to an fd)
};

/// Writes the selected namespaces of `store`, read in one snapshot, as one
/// release bundle (format version 4) to `out`. Each section is exported as
/// export_bundle would (damaged entries left out and listed). Errors as
/// export_bundle; not_found when --for-device's class has no pipelines or a
/// pipeline's module is missing (naming both); invalid_argument for a
/// namespace named twice or no scratch folder.
Result<ReleaseExportResult> export_release(store::Store& store, const ReleaseSelection& selection,
                                           const BundleStream& out, const ExportOptions& options);

/// What a deployment file (lib/kcache/deploy/FORMAT.md) takes from a store.
struct DeploySelection {
  /// A vulkan fingerprint id: that class's pipeline-cache blobs ride with
  /// their modules. Empty: SPIR-V (and CUDA) only.
  std::string for_device;
  std::vector<std::string> targets;       ///< SPIR-V targets ("vulkan1.2"); empty: every one stored
  std::vector<std::string> cuda_archs;    ///< cuda namespaces ("sm_90"); empty: every one stored
  std::vector<std::string> kernel_globs;  ///< as ExportSelection's
  /// Also merge every blob into one pipeline cache for the class, on a
  /// device of this machine whose namespace is for_device's (FORMAT.md
  /// "Head", class cache): an application creates one VkPipelineCache per
  /// thread from it. Needs for_device.
  bool merge_caches = false;
};

struct DeployResult {
  std::size_t kernels = 0;              ///< records written (one per kernel and target or arch)
  std::size_t blobs = 0;                ///< of which carry the class's blob
  std::size_t cuda = 0;                 ///< of which are CUDA code
  std::uint64_t class_cache_bytes = 0;  ///< the merged pipeline cache; 0: none
  std::uint64_t bytes = 0;              ///< the file's size
  std::optional<bundle::KeyId> signer;  ///< the key that signed it
  /// What was left out and why: damaged records, modules spirv-val now
  /// rejects, blobs that fail a check (the kernel is written without one).
  std::vector<std::string> refused;
};

/// Writes the selected kernels of `store`, read in one snapshot, as one
/// deployment file at `out` (atomically, mode 0644), signed with `sign` when
/// given. Every check a runtime lookup would repeat runs here once: spirv-val
/// under each module's recorded policy, reflection of each compute kernel's
/// interface (docs/design.md "Deployment files"), each blob against the
/// class's record and its recorded interface against the reflected one,
/// each CUDA payload against its arch. A kernel or blob that fails is left
/// out and listed in `refused`. not_found when the class has no namespace in
/// the store, no blob of it serves a selected kernel, or nothing is
/// selected; with merge_caches, device_unavailable when this machine has no
/// device of the class, and the merge's errors; store and I/O errors
/// unchanged.
Result<DeployResult> write_deployment(store::Store& store, const DeploySelection& selection,
                                      const std::filesystem::path& out, const bundle::KeyPair* sign);

/// What an import compares a bundle's fingerprint with.
struct ImportTarget {
  /// spirv: the target environment ("vulkan1.2"). vulkan: the fingerprint id
  /// (16 hex digits); when the store already holds that namespace its full
  /// record is compared field by field.
  std::optional<std::string> fingerprint;
  /// vulkan only: the device (select_device_or_default; "" = default). Used
  /// for vulkan bundles when `fingerprint` is not given.
  std::optional<std::string> device;
  /// cuda bundles with `device`: the CUDA devices to select from (a test
  /// seam: the CLI fills it from KCACHE_TEST_CUDA_DEVICE); nullopt = ask the
  /// driver (cuda_device::survey). The bundle must run on the selected one
  /// (cuda_device::check_runs: arch and cuda_version), else
  /// fingerprint_mismatch naming both.
  std::optional<std::vector<cuda_device::DeviceInfo>> cuda_devices;
  /// The CUDA driver library survey() loads when cuda_devices is nullopt.
  std::string cuda_library = std::string(cuda_device::k_default_library);
};

/// How one bundle entry fares.
enum class ImportAction {
  imported,         ///< new to the store
  already_present,  ///< the store has the same key and payload
  replaced,         ///< the store had another key (stale), or a conflict replaced on request
  refused,          ///< failed validation, or a conflict: nothing of the bundle is written
};
std::string_view import_action_name(ImportAction a);

struct RefusedEntry {
  std::string kernel;
  Error error;  ///< what the validator, blob check or conflict rule said
};

/// Why a bundle entry may not replace the stored entry of its name without
/// ImportOptions::replace (docs/design.md "Import policy").
enum class ConflictKind {
  /// Same key, another product: module bytes, validation verdict, lowered
  /// name or recorded fields (core/key_binding.hpp product_difference). A
  /// key names exactly one build, so this is a forged bundle or a
  /// non-reproducible build; silently taking it would let a bundle swap what
  /// stands behind a kernel every check calls fresh.
  same_key_other_bytes,
  /// Another key, but built (the entry's signed `created`) before the stored
  /// entry: taking it rolls the kernel back to an older build.
  older,
};
std::string_view conflict_kind_name(ConflictKind k);

/// One conflict between a bundle entry and the stored entry of that name.
struct ImportConflict {
  std::string kernel;
  ConflictKind kind = ConflictKind::same_key_other_bytes;
  Key stored_key, bundle_key;
  util::Hash128 stored_payload, bundle_payload;          ///< payload digests
  std::uint64_t stored_created = 0, bundle_created = 0;  ///< unix seconds, from the entries
  /// same_key_other_bytes: the first difference, "payload 1a2b… ≠ 3c4d…";
  /// older: what differs between the records (bundle::record_difference,
  /// "id field source is 'a.comp' in the store but 'b.comp' in the bundle").
  std::string difference;
};

/// One namespace of an imported bundle (a release has several).
struct ImportedSection {
  Namespace ns;                            ///< as the bundle has it
  std::size_t entries = 0;                 ///< in its index
  std::string target;                      ///< what its fingerprint was compared with, in words
  std::optional<bundle::KeyId> signer;     ///< set when trust was given and the signature verified
  std::optional<bundle::KeyId> signed_by;  ///< the key id the section claims, checked or not
};

struct ImportResult {
  /// The checked head, index included (of the first section of a release).
  bundle::BundleHeader header;
  /// Every section read, in bundle order: one for a plain bundle.
  std::vector<ImportedSection> sections;
  /// Entries of every section (the index sizes).
  std::size_t total_entries() const;
  std::string target;                   ///< what the fingerprint was compared with, in words
  std::optional<bundle::KeyId> signer;  ///< set when trust was given and the signature verified
  std::size_t imported = 0;
  std::size_t already_present = 0;
  std::size_t replaced = 0;
  std::size_t removed = 0;  ///< a delta's removals the store held (would hold, for a dry run)
  /// Kernels a delta removes that the store holds as another build than
  /// BASE's (a newer local build): kept, and listed (plan_delta).
  std::vector<std::string> not_removed;
  /// Every refused entry: failed validation, or (without `replace`) a
  /// conflict. Non-empty: nothing was written.
  std::vector<RefusedEntry> refused;
  /// Every conflict with the store, in bundle order. Without `replace` each is
  /// also in `refused` (nothing written); with it each was replaced (counted
  /// in `replaced`), and is listed so that the caller can say so.
  std::vector<ImportConflict> conflicts;
  bool dry_run = false;
  bool written = false;  ///< a transaction committed (false for dry runs, refusals and no-op imports)
  /// The bundle has no entries: it was checked completely and nothing was
  /// written, not even its namespace record.
  bool empty_bundle = false;
};

struct ImportOptions {
  ImportTarget target;
  /// When non-empty, the bundle must be signed by one of these keys
  /// (checked from the head, before any entry is decompressed).
  std::vector<bundle::PublicKey> trusted;
  bool dry_run = false;  ///< check and count everything, write nothing
  bundle::ReadLimits limits;
  /// Validator threads (0 = all cores); entries are read on the calling
  /// thread. Any value is accepted: util::worker_threads caps it, as
  /// validation is CPU-bound. The reader checks records on the calling
  /// thread too unless `limits.threads` says otherwise: its check threads
  /// would only compete with the validators, which take the cores given
  /// (spirv-val is ~30x the reader's CPU per entry).
  unsigned jobs = 0;
  /// Take conflicting entries (ImportConflict) from the bundle instead of
  /// refusing the import; each is still listed in ImportResult::conflicts.
  /// For a delta: apply the removals of one not signed by a trusted key, and
  /// of a format-5 delta (plan_delta).
  bool replace = false;
  /// The weakest validation policy (manifest `validate`) an entry may ask
  /// for. A module is validated under the stricter of its entry's policy
  /// and this; an entry asking for a weaker one is refused unless the bundle
  /// is signed by a `trusted` key: a record's policy is its own claim, and
  /// an unsigned record could otherwise lower its own validation.
  definition::ValidatePolicy allow_validate = definition::ValidatePolicy::strict;
  /// The clock entries' and bundles' creation times are checked against
  /// (check_not_future).
  const util::Clock* clock = &util::system_clock();
};

/// What every entry from elsewhere must pass before it may be written, beyond
/// decode_entry and validate_entry_record (docs/design.md "Bundles"): the
/// payload kind fits `from_ns`'s backend; a SPIR-V module passes spirv-val
/// for `from_ns`'s target; a pipeline-cache blob's header matches `target`.
/// The one per-entry check of import and of remote fetches
/// (lib/kcache/remote). Returns the payload to store instead of the entry's,
/// or an empty vector to keep it: a blob of a fingerprint-schema-1 namespace
/// is checked against that record and wrapped again for its compatibility
/// class. validation_failed / corruption / fingerprint_mismatch naming what is
/// wrong. `signed_by_trusted`: the entry's record came signed by a key the
/// reader trusts, whose build validated the module under the policy its key
/// binds; spirv-val is then not run again (docs/design.md "Remote caches":
/// checked once where it was made, the signature binding the verdict), and
/// every other check is. Pure; thread-safe.
Result<std::vector<std::uint8_t>> check_entry_payload(const Entry& e, const Namespace& from_ns,
                                                      const FingerprintRecord& target, bool signed_by_trusted = false);

/// What a store holds of one kernel a delta names: its key and build time.
struct HeldEntry {
  Key key;
  std::uint64_t created = 0;
};
using HeldEntries = std::map<std::string, HeldEntry, std::less<>>;

/// Who vouches for a delta's removals.
struct DeltaAuthority {
  bool replace = false;  ///< the user asked for them (import --replace)
  bool trusted = false;  ///< the delta's signature verified under a --trust key
};

/// How a delta applies to a store (plan_delta).
struct DeltaPlan {
  std::vector<std::string> remove;       ///< stored entries the delta removes: BASE's own builds
  std::vector<std::string> not_removed;  ///< kernels it removes that the store holds as other builds: kept
};

/// Decides how the delta `header` (header.delta set) applies to a store
/// holding `held` of the kernels it keeps and removes (FORMAT.md "Delta
/// bundles", Import). The store must hold BASE's kept entries under BASE's
/// keys: else not_found naming the missing ones, or fingerprint_mismatch
/// naming (format 6, by their tags) the first that differ; `label` names the
/// delta, and BASE is named by file name and digest. A kernel it removes
/// is removed only when the stored entry is BASE's build: its key is the
/// one a format-6 delta records for it; a format-5 delta records none, so
/// only an entry built no later than the delta was written. Removing
/// anything needs `authority`: --replace, or (format 6) a trusted
/// signature; else validation_failed naming what would be removed. Pure.
Result<DeltaPlan> plan_delta(const bundle::BundleHeader& header, const HeldEntries& held,
                             const DeltaAuthority& authority, std::string_view label);

/// Checks a bundle completely and writes it into `store` in one transaction,
/// or writes nothing. Order: head (format, sizes, limits, head digest), then
/// fingerprint against the target, then the signature when `trusted` is
/// given, then every entry as it streams (index digest, record checks, SPIR-V
/// through spirv-val for the bundle's target, pipeline-cache blobs against
/// the target record), then the whole-file digest; only then the commit.
/// Imported entries get origin "imported" with the bundle's label.
/// What a record says of itself is not believed (issue 40): its name must
/// be what its id fields give (check_name_fields), a validation policy
/// weaker than options.allow_validate is refused unless a trusted key signed
/// it, a pipeline's recorded interface must be its module's, and an entry
/// or bundle dated more than k_max_future_seconds ahead of options.clock is
/// refused. A delta applies as plan_delta says, decided from its head.
/// Each entry is compared with the stored entry of its name in a snapshot
/// read just before the write (docs/design.md "Import policy"): conflicts
/// (same key with other bytes; an older build over a newer one) are refused
/// like invalid entries unless options.replace. A bundle without entries
/// (and, for a delta, without removals) is checked and writes nothing
/// (empty_bundle).
/// Errors: corruption / version_mismatch (damaged or foreign bytes, bad or
/// untrusted signature, a head dated in the future), fingerprint_mismatch
/// naming every differing field with both values (or a delta's base kept
/// under other keys), not_found (a delta's base missing), validation_failed
/// (a delta's removals without authority), device_unavailable (vulkan bundle, no --fingerprint, no
/// device), invalid_argument (--device for a spirv bundle), store errors,
/// io_error when a validator thread cannot be started (e.g. a process limit;
/// nothing is written and no thread is left behind).
/// Entries that fail validation are not an error: they are listed in
/// `refused` (all of them, not just the first) and nothing is written.
Result<ImportResult> import_bundle(store::Store& store, const BundleStream& in, const ImportOptions& options);

/// After import_bundle into the store in `dir` that this import created
/// (`created`: the folder did not exist before the store was opened): when
/// the import failed or wrote nothing (refused, a no-op), closes `store` and
/// removes the store again, so a refused first import leaves no empty store
/// behind. Nothing happens otherwise. Errors: store::remove_store_if_empty's
/// (the store stays; the caller says so as a warning).
Result<void> discard_store_if_unfilled(std::unique_ptr<store::Store>& store, const std::filesystem::path& dir,
                                       bool created, const Result<ImportResult>& result);

/// What an import that returned `result` comes to, as the error the command
/// ends with (its category decides the exit code), or nullopt when it
/// succeeded (entries imported or already present, or an empty bundle).
/// Conflicts alone are a policy refusal (validation_failed, as merge's
/// conflicts); any entry that failed its checks makes the bundle bad
/// (corruption). `replace`: the options' (conflicts were then taken, not
/// refused); `label` names the bundle in the message.
std::optional<Error> import_verdict(const ImportResult& result, bool replace, std::string_view label);

}  // namespace kcache::transfer
