// File I/O that returns Results and never leaves half-written output: an
// owned descriptor, whole-file reads, and files written under a temporary
// name beside their target and renamed over it only when complete.
// Thread-safety: the functions are reentrant; an object is used by one thread.
#pragma once

#include "kcache/util/error.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace kcache::util {

/// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : m_fd(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : m_fd(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return m_fd; }
  explicit operator bool() const { return m_fd >= 0; }
  /// Gives up ownership without closing.
  int release();
  /// Closes now; returns close()'s result (a deferred write error shows here).
  int reset();

 private:
  int m_fd = -1;
};

/// Writes all of `data` to `fd`, retrying short writes and EINTR; false with
/// errno set on failure.
bool write_all(int fd, std::span<const std::uint8_t> data);

/// A file being written under a temporary name beside `target`; commit()
/// fsyncs it and renames it over the target, so readers see the old file or
/// the new one, never a mix. Destroyed uncommitted, the temporary is removed.
class AtomicFile {
 public:
  /// Creates the temporary file with `mode`. io_error / not_found naming
  /// the target's folder when it cannot.
  static Result<AtomicFile> create(const std::filesystem::path& target, mode_t mode = 0644);
  AtomicFile(AtomicFile&&) noexcept = default;
  AtomicFile& operator=(AtomicFile&&) noexcept = default;
  ~AtomicFile();

  int fd() const { return m_fd.get(); }
  /// Appends `data`; io_error naming the target.
  Result<void> write(std::span<const std::uint8_t> data);
  /// fsync, close, rename over the target; io_error naming the target.
  Result<void> commit();

 private:
  AtomicFile(std::filesystem::path target, std::string temp, UniqueFd fd)
      : m_target(std::move(target)), m_temp(std::move(temp)), m_fd(std::move(fd)) {}
  std::filesystem::path m_target;
  std::string m_temp;  ///< empty once committed or moved from
  UniqueFd m_fd;
};

/// What read_file accepts. The defaults read anything readable (stdin-like
/// paths included); input from elsewhere (a bundle's record, an #include)
/// passes limits so that /dev/zero, a FIFO or a huge file cannot hang the
/// process or exhaust its memory.
struct ReadLimits {
  std::uint64_t max_bytes = UINT64_MAX;  ///< more is invalid_argument, nothing past it is read
  bool regular_only = false;             ///< refuse devices, FIFOs and sockets (opened non-blocking)
};

/// Whole file as bytes; not_found when missing, invalid_argument for a
/// directory, for a special file when `limits.regular_only`, or for a file
/// over `limits.max_bytes`; io_error otherwise.
Result<std::string> read_file(const std::filesystem::path& path, ReadLimits limits = {});

/// Writes `data` to `path` through an AtomicFile.
Result<void> write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> data,
                               mode_t mode = 0644);

/// The error for a failed OS call on `path`: not_found for ENOENT, io_error
/// otherwise; "cannot ACTION PATH: strerror".
tl::unexpected<Error> os_error(const std::filesystem::path& path, std::string_view action, int err);

}  // namespace kcache::util
