#include "kcache/bundle/inspect.hpp"

namespace kcache::bundle {

namespace {

BundleSummary summarise(BundleReader& reader) {
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

}  // namespace

Result<BundleSummary> inspect_bundle(const BundleStream& in, const ReadLimits& limits) {
  auto reader = KCACHE_TRY(open_stream(in, limits));
  return summarise(reader);
}

Result<ReleaseSummary> inspect_release(const BundleStream& in, const ReadLimits& limits) {
  auto release = KCACHE_TRY(ReleaseReader::open(in, limits));
  ReleaseSummary out;
  out.release = release.release();
  for (;;) {
    auto section = release.next_section();
    if (!section) {
      // A plain bundle's head is the input's: its failure is the call's.
      if (!out.release) return tl::unexpected(std::move(section).error());
      out.error = std::move(section).error();
      return out;
    }
    if (!*section) break;
    out.sections.push_back(summarise(**section));
    if (out.sections.back().error) return out;
  }
  if (auto done = release.finish(); !done) out.error = std::move(done).error();
  return out;
}

}  // namespace kcache::bundle
