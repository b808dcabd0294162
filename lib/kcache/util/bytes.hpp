// Little-endian byte encoding for kcache's persisted formats.
//
// ByteWriter appends; ByteReader reads untrusted input with every access
// bounds-checked, so a truncated or hostile record fails cleanly instead of
// reading past its end. Neither allocates more than the caller asks for: a
// length read from input is checked against the bytes remaining before any
// allocation. Thread-safety: none; use one per thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::util {

/// Appends little-endian fields to a byte vector.
class ByteWriter {
 public:
  void u8(std::uint8_t v) { m_out.push_back(v); }
  void u16(std::uint16_t v) { put_le(v, 2); }
  void u32(std::uint32_t v) { put_le(v, 4); }
  void u64(std::uint64_t v) { put_le(v, 8); }
  /// Raw bytes with no length prefix.
  void raw(std::span<const std::uint8_t> data) { m_out.insert(m_out.end(), data.begin(), data.end()); }
  /// u32 length + bytes.
  void str(std::string_view s);
  /// u32 length + bytes.
  void blob(std::span<const std::uint8_t> data);

  /// Reserves room for `n` more bytes.
  void reserve(std::size_t n) { m_out.reserve(m_out.size() + n); }

  std::vector<std::uint8_t>& bytes() { return m_out; }
  std::vector<std::uint8_t> take() { return std::move(m_out); }

 private:
  void put_le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) m_out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  std::vector<std::uint8_t> m_out;
};

/// Reads little-endian fields from a borrowed span. Every getter returns
/// nullopt (and latches failed()) when the input is too short; after a
/// failure every further read fails too, so callers may check once at the end.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> data) : m_data(data) {}

  std::optional<std::uint8_t> u8() { return get_le<std::uint8_t>(1); }
  std::optional<std::uint16_t> u16() { return get_le<std::uint16_t>(2); }
  std::optional<std::uint32_t> u32() { return get_le<std::uint32_t>(4); }
  std::optional<std::uint64_t> u64() { return get_le<std::uint64_t>(8); }
  /// `n` raw bytes, borrowed from the input.
  std::optional<std::span<const std::uint8_t>> raw(std::size_t n);
  /// u32 length + bytes; fails when the length exceeds `max` or the input.
  std::optional<std::string> str(std::size_t max = 1 << 20);
  /// u32 length + bytes, borrowed; fails when the length exceeds `max` or the input.
  std::optional<std::span<const std::uint8_t>> blob(std::size_t max);

  std::size_t remaining() const { return m_failed ? 0 : m_data.size() - m_pos; }
  std::size_t position() const { return m_pos; }
  bool failed() const { return m_failed; }

 private:
  template <typename T>
  std::optional<T> get_le(std::size_t n) {
    auto bytes = raw(n);
    if (!bytes) return std::nullopt;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{(*bytes)[i]} << (8 * i);
    return static_cast<T>(v);
  }
  std::span<const std::uint8_t> m_data;
  std::size_t m_pos = 0;
  bool m_failed = false;
};

/// Views a string's bytes as a byte span.
inline std::span<const std::uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace kcache::util
