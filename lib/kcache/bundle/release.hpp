// Release bundles (format version 4, FORMAT.md "Release bundles"): one file
// that carries several namespaces, e.g. a vulkan device class's pipelines
// with every SPIR-V namespace they were built from, or one cubin namespace
// per CUDA arch. A release is a small head listing each section (namespace,
// entry count, size, BLAKE2b-256) followed by the sections, each a complete
// bundle of format 1..3 with its own head, signature and trailer, so every
// check a single bundle gets applies to each section unchanged, and a
// section is also a bundle that imports alone (one OCI layer per namespace).
//
// ReleaseReader reads either kind from a file or a pipe: a plain bundle is a
// release of one section without a release head. Memory: the release head
// (at most k_max_release_head_bytes) plus one BundleReader at a time.
// Thread-safety: a ReleaseReader is used from one thread at a time.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/bundle/stream.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kcache::bundle {

/// The format version of a release head. A plain bundle's versions stay
/// k_min_format_version..k_max_format_version.
inline constexpr std::uint16_t k_release_format_version = 4;
/// Most sections a release may list (a device class needs 1 + the SPIR-V
/// targets, a CUDA release one per arch).
inline constexpr std::uint32_t k_max_release_sections = 256;
/// Largest release head body: 256 sections of large fingerprint records.
inline constexpr std::uint32_t k_max_release_head_bytes = 1u << 20;

/// One namespace of a release, as its head lists it.
struct ReleaseSection {
  Namespace ns;
  std::uint32_t entries = 0;
  std::uint64_t size = 0;  ///< bytes of the section (a complete bundle)
  Digest256 digest;        ///< BLAKE2b-256 of those bytes
  bool operator==(const ReleaseSection&) const = default;
};

/// What a release says before its sections.
struct ReleaseHead {
  std::uint64_t created = 0;  ///< unix seconds
  std::vector<ReleaseSection> sections;
  bool operator==(const ReleaseHead&) const = default;
};

/// The release head's bytes (preamble, body, head digest) for `head`; does
/// not validate (tests build hostile heads with it). A file is these bytes
/// followed by each section's bytes in order.
std::vector<std::uint8_t> encode_release_head(const ReleaseHead& head);

/// Parses and checks a whole release head (the bytes encode_release_head
/// writes): corruption naming what is wrong.
Result<ReleaseHead> decode_release_head(std::span<const std::uint8_t> bytes, const ReadLimits& limits = {});

/// Describes a complete bundle file (format 1..3) as a section: its
/// namespace and entry count from its head, its size and BLAKE2b-256.
/// Errors as BundleReader::open_file.
Result<ReleaseSection> describe_section(const std::filesystem::path& bundle_file);

/// Writes a release of `sections` (complete bundle files of distinct
/// namespaces, in the order given) to `out`: a path atomically, an fd as it
/// goes. invalid_argument for no sections, too many or a repeated
/// namespace; errors of describe_section; io_error writing.
Result<void> write_release(const BundleStream& out, std::uint64_t created,
                           std::span<const std::filesystem::path> sections);

/// Reads a release or a plain bundle, section by section.
///
/// open() reads the release head (or, for a plain bundle, only its first
/// bytes, which the one section's reader reads again). next_section() hands
/// out a reader over the next section; the caller reads it to its finish()
/// before asking for the next one, which first checks that the previous
/// section had its declared size and digest. finish() checks, after the
/// last section, that nothing follows it.
class ReleaseReader {
 public:
  static Result<ReleaseReader> open(const BundleStream& in, const ReadLimits& limits = {});
  ReleaseReader(ReleaseReader&&) noexcept;
  ReleaseReader& operator=(ReleaseReader&&) noexcept;
  ~ReleaseReader();

  /// The release head; nullopt for a plain bundle.
  const std::optional<ReleaseHead>& release() const;
  /// Sections in all (1 for a plain bundle).
  std::size_t section_count() const;
  /// "bundle r.kcb" for a plain bundle; "bundle r.kcb, section 2 of 3
  /// (spirv/vulkan1.2)" for the section last handed out of a release.
  std::string section_label() const;

  /// A reader over the next section (its head checked against the release
  /// head), or nullopt after the last one. corruption when the previous
  /// section's size or digest differs from the release head.
  Result<std::optional<BundleReader>> next_section();
  /// After the last section: end of input. corruption for trailing bytes.
  Result<void> finish();

 private:
  struct Impl;
  explicit ReleaseReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace kcache::bundle
