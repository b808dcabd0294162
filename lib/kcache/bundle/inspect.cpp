#include "kcache/bundle/inspect.hpp"

namespace kcache::bundle {

Result<BundleSummary> inspect_bundle(const BundleStream& in, const ReadLimits& limits) {
  auto reader = KCACHE_TRY(open_stream(in, limits));
  auto check = [&]() -> Result<void> {
    while (KCACHE_TRY(reader.next())) {}
    return reader.finish();
  };
  auto checked = check();
  BundleSummary summary;
  summary.header = reader.take_header();
  summary.bundle_bytes = reader.bytes_read();
  if (!checked) summary.error = std::move(checked).error();
  return summary;
}

}  // namespace kcache::bundle
