// File I/O that returns Results and never leaves half-written output.
// Thread-safety: the functions are reentrant.
#pragma once

#include "kcache/core/error.hpp"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace kcache {

/// Whole file as bytes; not_found when missing, io_error otherwise.
Result<std::string> read_file(const std::filesystem::path& path);

/// Writes `data` to a temporary file beside `path`, fsyncs it and renames it
/// over `path`, so readers see the old file or the new one, never a mix.
Result<void> write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> data);

/// Current time in unix seconds (tests may pin it with KCACHE_TEST_NOW).
std::uint64_t unix_now();

}  // namespace kcache
