// `kcache inspect FILE.kcb`: what a bundle says about itself, and whether
// every byte of it checks out, without importing it. Thread-safety: each call
// is independent.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/bundle/release.hpp"
#include "kcache/bundle/stream.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <optional>

namespace kcache::bundle {

/// A bundle's checked head and the verdict on the rest of it.
struct BundleSummary {
  BundleHeader header;             ///< the head, checked as BundleReader::open checks it
  std::uint64_t bundle_bytes = 0;  ///< bytes read: the whole file when `error` is empty, else up to the failure
  /// The first failure reading the entries or the trailer (without the
  /// stream's label); empty when every entry and the whole-file digest check
  /// out, i.e. `import` would accept the bytes.
  std::optional<Error> error;
};

/// Opens `in`, then reads and checks every entry and the trailer. A damaged
/// payload is not an error of the call: it is reported in the summary, so
/// the head can still be shown. Errors (as open_stream): not_found / io_error
/// for the file, corruption / version_mismatch when the head itself fails.
Result<BundleSummary> inspect_bundle(const BundleStream& in, const ReadLimits& limits = {});

/// A release's (or a plain bundle's) sections, each as inspect_bundle
/// summarises one bundle.
struct ReleaseSummary {
  std::optional<ReleaseHead> release;  ///< nullopt for a plain bundle
  /// The sections read, in order; reading stops after one whose `error` is set.
  std::vector<BundleSummary> sections;
  /// A failure of the release itself after its last section read (a
  /// section's size or digest against the release head, trailing bytes), or
  /// of a section's head; empty when every section checked out.
  std::optional<Error> error;
};

/// As inspect_bundle, for a release or a plain bundle. Errors as
/// inspect_bundle for the input and the release head; a section's damage is
/// reported in the summary.
Result<ReleaseSummary> inspect_release(const BundleStream& in, const ReadLimits& limits = {});

}  // namespace kcache::bundle
