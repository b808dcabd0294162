#include "kcache/util/text.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>

namespace kcache::util {

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  if (v == static_cast<double>(static_cast<std::uint64_t>(v)))
    return fmt::format("{} {}", static_cast<std::uint64_t>(v), units[u]);
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

std::string iso_time(std::uint64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", tm);
}

}  // namespace kcache::util
