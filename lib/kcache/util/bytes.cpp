#include "kcache/util/bytes.hpp"

namespace kcache::util {

void ByteWriter::str(std::string_view s) {
  u32(static_cast<std::uint32_t>(s.size()));
  raw(as_bytes(s));
}

void ByteWriter::blob(std::span<const std::uint8_t> data) {
  u32(static_cast<std::uint32_t>(data.size()));
  raw(data);
}

std::optional<std::span<const std::uint8_t>> ByteReader::raw(std::size_t n) {
  if (m_failed || n > m_data.size() - m_pos) {
    m_failed = true;
    return std::nullopt;
  }
  auto out = m_data.subspan(m_pos, n);
  m_pos += n;
  return out;
}

std::optional<std::string> ByteReader::str(std::size_t max) {
  auto bytes = blob(max);
  if (!bytes) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

std::optional<std::span<const std::uint8_t>> ByteReader::blob(std::size_t max) {
  auto n = u32();
  if (!n) return std::nullopt;
  if (*n > max) {
    m_failed = true;
    return std::nullopt;
  }
  return raw(*n);
}

}  // namespace kcache::util
