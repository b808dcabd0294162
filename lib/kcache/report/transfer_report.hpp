// Reports of moving entries between machines: `kcache export`, `import`,
// `merge` and `inspect FILE.kcb`, as text and JSON. The library renders to
// strings; the CLI decides where they go (stderr when the bundle itself goes
// to stdout). Every string ends with a newline, or is empty.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/bundle/inspect.hpp"
#include "kcache/bundle/merge.hpp"
#include "kcache/remote/oci.hpp"
#include "kcache/transfer/transfer.hpp"

#include <string>
#include <string_view>

namespace kcache::report {

/// What an export wrote: entries, namespace, module and record bytes, the
/// destination (`output_label`: a path, or "stdout"), the bundle size and
/// compression ratio when known, then the signer or "unsigned".
std::string export_text(const transfer::ExportResult& result, std::string_view output_label);
/// The same as JSON: namespace, entries, byte counts, `output` (the -o
/// argument as given, "-" for stdout), signed and signer, and `damaged`:
/// [{"namespace", "kernel", "category", "message"}] (empty when none).
std::string export_json(const transfer::ExportResult& result, std::string_view output);
/// For stderr: "kcache: warning: N damaged entries not exported: a, b (run
/// kcache verify; rebuild them)"; empty when none was damaged.
std::string export_damaged_text(const transfer::ExportResult& result);

/// What a release export wrote: one export_text line per section (no
/// bundle size), then the release's size and how many sections.
std::string release_export_text(const transfer::ReleaseExportResult& result, std::string_view output_label);
/// What `kcache deploy` wrote: kernels, blobs, CUDA code, size, signer,
/// then each thing left out and why.
std::string deploy_text(const transfer::DeployResult& result, std::string_view output);
/// The same as JSON (schema kcache.deploy/1): `output`, `kernels`, `blobs`, `cuda`, `class_cache_bytes`, `bytes`,
/// `signed`, `signer` (key id or null), `refused` (strings).
std::string deploy_json(const transfer::DeployResult& result, std::string_view output);

/// The same as JSON: `output`, `bundle_bytes`, `sections`: export_json's
/// object per section.
std::string release_export_json(const transfer::ReleaseExportResult& result, std::string_view output);

/// What a push did: the reference, layers (sent, already in the registry),
/// bytes sent, the manifest digest (what `oci://HOST/REPO@DIGEST` pins).
std::string oci_push_text(const remote::OciPushResult& result, std::string_view file, std::string_view ref);
/// The same as JSON: `reference`, `file`, `manifest_digest`, `layers`,
/// `uploaded`, `present`, `bytes_sent`.
std::string oci_push_json(const remote::OciPushResult& result, std::string_view file, std::string_view ref);
/// What a pull fetched: layers, bytes written, the manifest digest.
std::string oci_pull_text(const remote::OciPullResult& result, std::string_view ref, std::string_view file);

/// Two lines on an import (or a dry run): what was checked against which
/// target and how it is signed (one line per section of a release), then
/// the counts per action. `bundle_label` names the input
/// (bundle::BundleStream::label()).
std::string import_text(const transfer::ImportResult& result, std::string_view bundle_label);
/// The same as JSON: `bundle` (the argument as given, "-" for stdin), the
/// head's facts, the counts and every refused entry with its category.
std::string import_json(const transfer::ImportResult& result, std::string_view bundle);
/// One "kcache: refused entry 'KERNEL': MESSAGE" line per refused entry, for
/// stderr; empty when none was refused.
std::string import_refusals_text(const transfer::ImportResult& result);

/// One line on a merge without conflicts: inputs, namespace, entries,
/// duplicates dropped, the destination (`output_label`: a path, or "stdout")
/// and the bundle size when known. Empty when there were conflicts (nothing
/// was written; see merge_conflicts_text).
std::string merge_text(const bundle::MergeResult& result, std::string_view output_label);
/// The whole merge result as JSON, conflicts included with both keys;
/// `output` is the -o argument as given.
std::string merge_json(const bundle::MergeResult& result, std::string_view output);
/// For stderr: one "kcache: conflict: ..." line per conflict, naming the
/// kernel, the short IR keys and both bundles, then a closing "kcache: error:"
/// line with the count and what to do. Empty when there were none.
std::string merge_conflicts_text(const bundle::MergeResult& result);

/// A bundle's head for `kcache inspect FILE.kcb`: format version, creation
/// time, namespace and fingerprint record, tools, compression, signature,
/// sizes, one line per entry, and "integrity: ok" when every entry and the
/// whole-file digest checked out. `bundle_label` names the input.
std::string bundle_text(const bundle::BundleSummary& summary, std::string_view bundle_label);
/// The same as JSON, with every index entry in full (ids, digests, sizes),
/// `ok`, and `error` (the failure's message) when the check failed; `bundle`
/// is the path argument as given.
std::string bundle_json(const bundle::BundleSummary& summary, std::string_view bundle);

/// A release: its head (created, each section's namespace, entries, size and
/// digest), then bundle_text of each section read. A plain bundle: its
/// bundle_text.
std::string release_text(const bundle::ReleaseSummary& summary, std::string_view bundle_label);
/// The same as JSON: `format_version` 4, `created`, `sections` (bundle_json's
/// object of each, with `section_bytes` and `section_digest`), `ok`, and
/// `error` for a failure of the release itself. A plain bundle: bundle_json.
std::string release_json(const bundle::ReleaseSummary& summary, std::string_view bundle);

}  // namespace kcache::report
