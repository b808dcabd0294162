// Helpers for the bundle tests: deterministic SPIR-V-like entries, whole-bundle
// read-back, and surgery on bundle bytes (split a bundle into head, frames and
// trailer, reassemble with correct digests) so hostile cases get past the
// digests and reach the check they target.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/core/key_binding.hpp"
#include "test_support.hpp"

#include <malloc.h>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace kcache::test {

using Bytes = std::vector<std::uint8_t>;

/// splitmix64: a tiny deterministic PRNG so every run builds the same data.
struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(next() % n); }
};

/// A SPIR-V-like module: the real header words, then instructions (word
/// count | opcode, then small ids and literals) drawn from a family seed, so
/// the variants of one family differ in a few words as real type variants
/// of one kernel do. About `words` 32-bit words.
inline Bytes spirv_like(std::uint64_t family, std::uint64_t variant, std::size_t words) {
  Rng base(family * 7919 + 1);
  std::vector<std::uint32_t> w = {0x07230203u, 0x00010500u, 0x000d000bu, 400, 0};
  static constexpr std::uint16_t opcodes[] = {17, 14, 15, 16, 19,  21,  22,  23,  32,  43, 54,
                                              59, 61, 62, 65, 128, 129, 132, 248, 249, 250};
  while (w.size() < words) {
    std::uint16_t op = opcodes[base.below(sizeof opcodes / sizeof opcodes[0])];
    std::uint16_t count = static_cast<std::uint16_t>(2 + base.below(5));
    w.push_back(std::uint32_t{count} << 16 | op);
    for (int k = 1; k < count; ++k) w.push_back(base.below(4) == 0 ? base.below(1u << 16) : 1 + base.below(400));
  }
  w.resize(words);
  // A variant changes a handful of literals (types, tile sizes, constants).
  Rng var(family * 104729 + variant * 31 + 7);
  for (int k = 0; k < 6 + static_cast<int>(words / 500); ++k)
    w[5 + var.below(static_cast<std::uint32_t>(words - 5))] ^= 1u + var.below(255);
  Bytes out(w.size() * 4);
  std::memcpy(out.data(), w.data(), out.size());
  return out;
}

/// Entry `i` of a deterministic set: 16 variants per family, payloads of
/// about `words` words (varied a little per family).
inline Entry make_entry(std::size_t i, std::size_t words = 256) {
  const std::uint64_t family = i / 16, variant = i % 16;
  static constexpr const char* types[] = {"f16", "f32", "bf16", "q4_0", "q8_0", "i8", "u8", "f64"};
  Entry e;
  e.kernel = "matmul_" + std::to_string(family) + "[T=" + types[variant % 8] +
             ",BM=" + std::to_string(32 << (variant / 8)) + "]";
  e.id_fields = {{"name", e.kernel}, {"entry", "main"}, {"stage", "compute"}, {"target", "vulkan1.2"}};
  e.ir_fields = {{"glslang", "15.1.0"}, {"spirv-tools", "2024.4"}, {"schema", "1"}};
  e.inputs = {{"shaders/matmul.comp", util::hash_string("matmul source " + std::to_string(family))},
              {"shaders/common.glsl", util::hash_string("common")}};
  e.payload_kind = PayloadKind::spirv;
  e.payload = spirv_like(family, variant, words + (family % 5) * 37);
  seal_payload(e);
  util::Hasher id;
  for (const auto& [k, v] : e.id_fields) id.field(k, v);
  e.key.id = id.finish();
  e.key.ir = util::hash_bytes(e.payload);
  e.created = 1'700'000'000 + i;
  e.origin_kind = OriginKind::built;
  e.origin_detail = "ci-runner-3 kcache 0.1.0";
  return e;
}

/// `e` as if rebuilt from other sources: another expanded source in its ir
/// fields and its key bound to its fields again (core/key_binding.hpp), as
/// every built record's is.
inline void rebuild_from(Entry& e, const std::string& sources) {
  std::erase_if(e.ir_fields, [](const Field& f) { return f.first == "expanded_source"; });
  e.ir_fields.emplace_back("expanded_source", util::hash_string(sources).hex());
  e.key = bound_key(e);
}

inline std::vector<Entry> make_entries(std::size_t n, std::size_t words = 256) {
  std::vector<Entry> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(make_entry(i, words));
  return out;
}

inline std::vector<Field> tool_versions() {
  return {{"kcache", "0.1.0"}, {"glslang", "15.1.0"}, {"spirv-tools", "2024.4"}};
}

/// A device record as kcache 0.1.0 wrote it (fingerprint schema 1: the
/// card's deviceUUID in it), as the golden bundle of format 1 holds it.
inline FingerprintRecord schema1_record() {
  return FingerprintRecord{{{"vendorID", "0x10de"},
                            {"deviceID", "0x2335"},
                            {"driverID", "4"},
                            {"driverVersion", "580.159"},
                            {"driverInfo", "580.159.01"},
                            {"deviceUUID", "a1b2c3d4e5f60718293a4b5c6d7e8f90"},
                            {"pipelineCacheUUID", "0f1e2d3c4b5a69788796a5b4c3d2e1f0"},
                            {"pointerSize", "8"}}};
}

/// That record's namespace as kcache 0.1.0 named it: every field hashed.
inline Namespace schema1_vulkan_ns() {
  return Namespace{"vulkan", recorded_vulkan_id(schema1_record()), schema1_record()};
}

/// Its namespace now: the card's fields dropped.
inline Namespace vulkan_ns() { return vulkan_namespace(schema1_record()); }

/// Writes `entries` to bytes (through an ostringstream).
inline Bytes write_to_bytes(const Namespace& ns, const std::vector<Entry>& entries, bundle::WriteOptions options = {},
                            std::uint64_t created = 1'700'000'000) {
  auto header = bundle::make_header(ns, tool_versions(), created, entries);
  std::ostringstream out(std::ios::binary);
  auto ok = bundle::write_bundle(out, header, bundle::entries_from(entries), options);
  REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
  auto s = out.str();
  return Bytes(s.begin(), s.end());
}

/// Reads a whole bundle: the first error of open/next/finish, or every entry.
inline Result<std::vector<Entry>> read_all(std::span<const std::uint8_t> bytes, const bundle::ReadLimits& limits = {}) {
  auto reader = KCACHE_TRY(bundle::BundleReader::open(bytes, limits));
  std::vector<Entry> out;
  for (;;) {
    auto e = KCACHE_TRY(reader.next());
    if (!e) break;
    out.push_back(std::move(*e));
  }
  KCACHE_CHECK(reader.finish());
  return out;
}

/// A bundle cut into its parts.
struct Parts {
  bundle::BundleHeader header;  ///< as the reader parsed it (signature included)
  Bytes head;                   ///< preamble .. head digest
  Bytes frames;                 ///< every zstd frame, back to back
};

inline std::size_t head_size(std::span<const std::uint8_t> b) {
  std::uint32_t header_size = b[8] | b[9] << 8 | b[10] << 16 | static_cast<std::uint32_t>(b[11]) << 24;
  bool is_signed = b[6] & 1;
  return 12 + header_size + (is_signed ? bundle::internal::k_signature_block_size : 0) + 32;
}

inline Parts split(const Bytes& b) {
  auto reader = bundle::BundleReader::open(std::span(b));
  REQUIRE(reader.has_value());
  Parts p;
  p.header = reader->header();
  auto hs = head_size(b);
  p.head.assign(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(hs));
  p.frames.assign(b.begin() + static_cast<std::ptrdiff_t>(hs), b.end() - bundle::internal::k_trailer_size);
  return p;
}

/// Head for `h` (encoded as is, digest recomputed) + `frames` + a correct trailer.
inline Bytes assemble(const bundle::BundleHeader& h, std::span<const std::uint8_t> frames) {
  Bytes out = bundle::internal::encode_head(h);
  out.insert(out.end(), frames.begin(), frames.end());
  bundle::internal::append_trailer(out);
  return out;
}

/// The concatenated records of `entries`, as one block's content.
inline Bytes records_of(const std::vector<Entry>& entries) {
  Bytes out;
  for (const auto& e : entries) {
    auto r = encode_entry(e);
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

/// A header describing `entries` in one block with window log `wl`, unsigned,
/// format version 1 (a block is the plain records: records_of).
inline bundle::BundleHeader one_block_header(const Namespace& ns, const std::vector<Entry>& entries, int wl = 20) {
  auto h = bundle::make_header(ns, tool_versions(), 1'700'000'000, entries);
  h.format_version = 1;
  h.compression = {3, wl, false, 8u << 20};
  if (!entries.empty()) h.block_entry_counts = {static_cast<std::uint32_t>(entries.size())};
  return h;
}

/// Offsets of a zstd frame header's fields (RFC 8878 3.1.1.1).
struct FrameLayout {
  std::size_t window_descriptor = 0;  ///< 0 when single-segment (no such byte)
  std::size_t fcs_offset = 0;
  std::size_t fcs_size = 0;
};

inline FrameLayout frame_layout(std::span<const std::uint8_t> f) {
  const std::uint8_t fhd = f[4];
  const int fcs_flag = fhd >> 6;
  const bool single = (fhd >> 5) & 1;
  const int dict_flag = fhd & 3;
  static constexpr std::size_t dict_sizes[] = {0, 1, 2, 4};
  FrameLayout l;
  std::size_t pos = 5;
  if (!single) l.window_descriptor = pos++;
  pos += dict_sizes[dict_flag];
  l.fcs_offset = pos;
  l.fcs_size = fcs_flag == 0 ? (single ? 1 : 0) : (fcs_flag == 1 ? 2 : (fcs_flag == 2 ? 4 : 8));
  return l;
}

/// Rewrites a frame's declared content size (must fit the existing field).
inline void patch_fcs(Bytes& f, std::uint64_t value) {
  auto l = frame_layout(f);
  REQUIRE(l.fcs_size >= 2);
  if (l.fcs_size == 2) {
    REQUIRE((value >= 256 && value < 65536 + 256));
    value -= 256;  // the 2-byte form stores size - 256
  }
  REQUIRE((l.fcs_size == 8 || value < (std::uint64_t{1} << (8 * l.fcs_size))));
  for (std::size_t k = 0; k < l.fcs_size; ++k) f[l.fcs_offset + k] = static_cast<std::uint8_t>(value >> (8 * k));
}

/// A zstd frame written by hand (RFC 8878 3.1.1): `content` in raw blocks,
/// then `zeros` zero bytes in RLE blocks (4 bytes of frame per 128 KiB), with
/// `declared` as its content size, a 2^window_log window and no checksum. A
/// decompression bomb costs almost nothing to build this way.
inline Bytes handmade_frame(std::span<const std::uint8_t> content, std::uint64_t zeros, std::uint64_t declared,
                            int window_log = 20) {
  Bytes f = {0x28,
             0xb5,
             0x2f,
             0xfd,
             0xc0 /* 8-byte size, windowed, no checksum */,
             static_cast<std::uint8_t>((window_log - 10) << 3)};
  for (int k = 0; k < 8; ++k) f.push_back(static_cast<std::uint8_t>(declared >> (8 * k)));
  const std::uint64_t max_block = std::min<std::uint64_t>(std::uint64_t{1} << window_log, 128u << 10);
  auto block = [&](bool last, std::uint32_t type, std::uint64_t size) {
    const auto h = static_cast<std::uint32_t>(last) | type << 1 | static_cast<std::uint32_t>(size) << 3;
    for (int k = 0; k < 3; ++k) f.push_back(static_cast<std::uint8_t>(h >> (8 * k)));
  };
  for (std::size_t pos = 0; pos < content.size();) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(max_block, content.size() - pos));
    block(pos + n == content.size() && zeros == 0, 0, n);
    f.insert(f.end(), content.begin() + static_cast<std::ptrdiff_t>(pos),
             content.begin() + static_cast<std::ptrdiff_t>(pos + n));
    pos += n;
  }
  while (zeros > 0) {
    const auto n = std::min(max_block, zeros);
    zeros -= n;
    block(zeros == 0, 1, n);
    f.push_back(0);
  }
  if (content.empty() && f.size() == 14) block(true, 0, 0);
  return f;
}

/// Peak resident set (VmHWM) and current (VmRSS) in KiB from /proc.
inline std::uint64_t proc_status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::strlen(key) + 1));
  return 0;
}

/// AddressSanitizer quarantines freed memory, so RSS bounds do not apply.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool k_sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool k_sanitized = true;
#else
inline constexpr bool k_sanitized = false;
#endif
#else
inline constexpr bool k_sanitized = false;
#endif

/// Starts a peak-memory measurement: returns freed heap memory to the OS (so
/// earlier tests' freed pages cannot hide new use), resets VmHWM to the
/// current RSS (Linux >= 4.0) and returns that RSS in KiB; 0 when VmHWM
/// cannot be reset or the build is sanitized (callers then skip the bound).
inline std::uint64_t begin_peak_measure() {
  ::malloc_trim(0);
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  if (!out || k_sanitized) return 0;
  return proc_status_kib("VmRSS:");
}

/// Peak RSS growth in KiB since begin_peak_measure() returned `base`.
inline std::uint64_t peak_growth_kib(std::uint64_t base) {
  auto peak = proc_status_kib("VmHWM:");
  return peak > base ? peak - base : 0;
}

}  // namespace kcache::test
