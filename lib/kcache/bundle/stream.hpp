// Where a bundle is read from or written to: a path or a borrowed file
// descriptor (stdin / stdout), with the label that names it in messages.
// Thread-safety: plain values; the functions are reentrant.
#pragma once

#include "kcache/bundle/bundle.hpp"

#include <cstdint>
#include <filesystem>
#include <string>

namespace kcache::bundle {

/// A bundle's path, or a borrowed file descriptor when `fd` ≥ 0.
struct BundleStream {
  std::filesystem::path path;
  int fd = -1;
  /// "bundle shaders.kcb", "bundle <stdin>", "bundle <fd 5>"; with both an
  /// fd and a path (a pipe from a URL), "bundle " + path.
  std::string label() const;
};

/// Opens `in` for reading; errors as BundleReader::open / open_file, in the
/// stream's context.
Result<BundleReader> open_stream(const BundleStream& in, const ReadLimits& limits);

/// Writes a bundle to `out`: a path atomically (write_bundle_file), an fd
/// incrementally. Errors carry "writing <label>".
Result<void> write_stream(const BundleStream& out, const BundleHeader& header, const EntrySource& source,
                          const WriteOptions& options);

/// The size of a bundle written to a path; 0 for an fd or an unreadable file.
std::uint64_t written_size(const BundleStream& out);

/// `r`, its error prefixed with `what`.
template <typename T>
Result<T> in_context(Result<T> r, const std::string& what) {
  if (!r) return tl::unexpected(std::move(r).error().context(what));
  return r;
}

}  // namespace kcache::bundle
