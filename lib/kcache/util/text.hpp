// Small text renderings shared by every report and message: sizes, hex,
// times. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace kcache::util {

/// "812 B", "1.5 KiB", "64 KiB", "3.2 MiB" … "EiB": binary units; one decimal
/// unless the value is a whole number of its unit.
std::string human_bytes(std::uint64_t bytes);

/// Lowercase hex of `bytes`, two digits each.
std::string to_hex(std::span<const std::uint8_t> bytes);

/// "2025-01-31T12:00:00Z": unix seconds as ISO 8601 UTC.
std::string iso_time(std::uint64_t unix_seconds);

}  // namespace kcache::util
