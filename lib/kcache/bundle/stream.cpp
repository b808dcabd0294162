#include "kcache/bundle/stream.hpp"

#include <fmt/format.h>

namespace kcache::bundle {

std::string BundleStream::label() const {
  if (fd >= 0 && !path.empty()) return "bundle " + path.string();  // a pipe from a URL, named by it
  if (fd == 0) return "bundle <stdin>";
  if (fd == 1) return "bundle <stdout>";
  if (fd >= 0) return fmt::format("bundle <fd {}>", fd);
  return "bundle " + path.string();
}

Result<BundleReader> open_stream(const BundleStream& in, const ReadLimits& limits) {
  if (in.fd < 0) return BundleReader::open_file(in.path, limits);  // its messages name the path
  return in_context(BundleReader::open(in.fd, limits), in.label());
}

Result<void> write_stream(const BundleStream& out, const BundleHeader& header, const EntrySource& source,
                          const WriteOptions& options) {
  auto written = out.fd >= 0 ? write_bundle(out.fd, header, source, options)
                             : write_bundle_file(out.path, header, source, options);
  return in_context(std::move(written), "writing " + out.label());
}

std::uint64_t written_size(const BundleStream& out) {
  if (out.fd >= 0) return 0;
  std::error_code ec;
  auto n = std::filesystem::file_size(out.path, ec);
  return ec ? 0 : n;
}

}  // namespace kcache::bundle
