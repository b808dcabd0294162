// `kcache inspect FILE.kcb`: what a bundle says about itself, and whether
// every byte of it checks out, without importing it. Thread-safety: each call
// is independent.
#pragma once

#include "kcache/bundle/bundle.hpp"
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

}  // namespace kcache::bundle
