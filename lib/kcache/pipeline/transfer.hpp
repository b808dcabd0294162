// Moving namespaces between stores through bundles (DESIGN.md "Bundles"):
// export a namespace of a store to a bundle, import a bundle into a store,
// merge bundles of one fingerprint. The bundle module knows the bytes; this
// file knows the policy: what to select, which fingerprint a bundle must
// match, what every entry must pass before anything is written.
//
// Memory: every operation streams one entry at a time (export reads its
// entries inside one read snapshot, import writes them through
// Store::put_stream inside one write transaction, merge passes them from
// reader to writer). What LMDB itself holds for an open write transaction
// (its dirty pages, about the bytes imported) is the store's; FORMAT.md
// "Memory" states the bound.
//
// Nothing here prints. Thread-safety: each call is independent; a Store may
// be shared as store.hpp allows.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/core/error.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/store/store.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::pipeline {

/// Where a bundle is read from or written to: a path, or a borrowed file
/// descriptor (stdin / stdout) when `fd` ≥ 0. `label` names it in messages
/// and in imported entries' origin ("bundle shaders.kcb", "bundle <stdin>").
struct BundleStream {
  std::filesystem::path path;
  int fd = -1;
  std::string label() const;
};

/// Whether `name` matches a kernel glob: `*` is any run of characters, `?`
/// one character, everything else (brackets included, since variant names
/// contain them: `matmul[T=float,*`) is literal.
bool match_kernel_glob(std::string_view pattern, std::string_view name);

/// Which entries an export takes.
struct ExportSelection {
  std::string ns_name;      ///< "spirv/vulkan1.2"; empty = by backend and fingerprint
  std::string backend;      ///< with `fingerprint`, an alternative to ns_name
  std::string fingerprint;
  std::vector<std::string> kernel_globs;  ///< empty = every entry; else entries matching any
};

struct ExportResult {
  Namespace ns;
  std::size_t entries = 0;
  std::uint64_t record_bytes = 0;   ///< uncompressed entry records
  std::uint64_t payload_bytes = 0;  ///< the artifacts alone
  std::uint64_t bundle_bytes = 0;   ///< size of the written bundle (0 when written to an fd)
  std::optional<bundle::KeyId> signer;
};

/// The tool versions a bundle written here records: kcache, glslang, SPIRV-Tools.
std::vector<Field> bundle_tool_versions();

/// Writes the selected entries of `store` as a bundle to `out` (a path is
/// written atomically; an fd incrementally). The namespace is ns_name, or
/// backend/fingerprint, or the store's only namespace. Errors: invalid_argument
/// when no selector is given and the store holds several namespaces (the
/// message lists them) or the selector is half given; not_found for an
/// unknown namespace or globs that match nothing (listing what exists);
/// store and I/O errors unchanged. Reads one snapshot, one entry at a time.
Result<ExportResult> export_bundle(store::Store& store, const ExportSelection& selection, const BundleStream& out,
                                   const bundle::WriteOptions& options = {});

/// What an import compares a bundle's fingerprint with.
struct ImportTarget {
  /// spirv: the target environment ("vulkan1.2"). vulkan: the fingerprint id
  /// (16 hex digits); when the store already holds that namespace its full
  /// record is compared field by field.
  std::optional<std::string> fingerprint;
  /// vulkan only: the device (select_device_or_default; "" = default). Used
  /// for vulkan bundles when `fingerprint` is not given.
  std::optional<std::string> device;
};

/// How one bundle entry fares.
enum class ImportAction {
  imported,         ///< new to the store
  already_present,  ///< the store has the same key and payload
  replaced,         ///< the store had another key or payload under that name (stale)
  refused,          ///< failed validation: nothing of the bundle is written
};
std::string_view import_action_name(ImportAction a);

struct RefusedEntry {
  std::string kernel;
  Error error;  ///< what the validator or blob check said
};

struct ImportResult {
  bundle::BundleHeader header;  ///< the checked head, index included
  std::string target;           ///< what the fingerprint was compared with, in words
  std::optional<bundle::KeyId> signer;  ///< set when trust was given and the signature verified
  std::size_t imported = 0;
  std::size_t already_present = 0;
  std::size_t replaced = 0;
  std::vector<RefusedEntry> refused;  ///< non-empty: nothing was written
  bool dry_run = false;
  bool written = false;  ///< a transaction committed (false for dry runs, refusals and no-op imports)
};

struct ImportOptions {
  ImportTarget target;
  /// When non-empty, the bundle must be signed by one of these keys
  /// (checked from the head, before any entry is decompressed).
  std::vector<bundle::PublicKey> trusted;
  bool dry_run = false;  ///< check and count everything, write nothing
  bundle::ReadLimits limits;
  /// Validator threads (0 = all cores); entries are read on the calling thread.
  unsigned jobs = 0;
};

/// Checks a bundle completely and writes it into `store` in one transaction,
/// or writes nothing. Order: head (format, sizes, limits, head digest), then
/// fingerprint against the target, then the signature when `trusted` is
/// given, then every entry as it streams (index digest, record checks, SPIR-V
/// through spirv-val for the bundle's target, pipeline-cache blobs against
/// the target record), then the whole-file digest; only then the commit.
/// Imported entries get origin "imported" with the bundle's label.
/// Errors: corruption / version_mismatch (damaged or foreign bytes, bad or
/// untrusted signature), fingerprint_mismatch naming every differing field
/// with both values, device_unavailable (vulkan bundle, no --fingerprint, no
/// device), invalid_argument (--device for a spirv bundle), store errors.
/// Entries that fail validation are not an error: they are listed in
/// `refused` (all of them, not just the first) and nothing is written.
Result<ImportResult> import_bundle(store::Store& store, const BundleStream& in, const ImportOptions& options);

/// One kernel that two merged bundles disagree on.
struct MergeConflict {
  std::string kernel;
  std::string first_bundle, second_bundle;  ///< labels
  Key first_key, second_key;
  bool same_key = false;  ///< same key, different payload: a non-reproducible build
};

struct MergeResult {
  Namespace ns;
  std::size_t inputs = 0;
  std::size_t entries = 0;      ///< in the merged bundle
  std::size_t duplicates = 0;   ///< identical entries dropped (same kernel, key and payload)
  std::vector<MergeConflict> conflicts;  ///< non-empty: nothing was written
  std::uint64_t bundle_bytes = 0;
  std::optional<bundle::KeyId> signer;
};

/// Joins bundles of one namespace into `out`, deduplicating by kernel and
/// key: the same kernel with the same key and payload is kept once (first
/// bundle wins; its created time and origin stay); the same kernel with
/// another key, or the same key with another payload, is a conflict, listed
/// in the result, and then nothing is written. Every input is checked
/// completely (digests, trailer) while streaming. Errors: not_found /
/// corruption / version_mismatch for an input, fingerprint_mismatch (naming
/// the fields and the two bundles) when the inputs' namespaces differ,
/// invalid_argument for no inputs or an fd input that must be read twice.
Result<MergeResult> merge_bundles(const std::vector<BundleStream>& inputs, const BundleStream& out,
                                  const bundle::WriteOptions& options = {});

/// Loads public keys from key files (FORMAT.md "Key files"): not_found /
/// io_error for a file, invalid_argument (with the path) for a bad one.
Result<std::vector<bundle::PublicKey>> load_public_keys(const std::vector<std::filesystem::path>& paths);

/// Loads a secret key file; refuses (invalid_argument) one that others can
/// read, as ssh does, since anyone who reads it can sign bundles.
Result<bundle::KeyPair> load_secret_key(const std::filesystem::path& path);

}  // namespace kcache::pipeline
