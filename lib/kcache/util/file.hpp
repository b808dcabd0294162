// File I/O that returns Results and never leaves half-written output: an
// owned descriptor, whole-file reads, and files written under a temporary
// name beside their target and renamed over it only when complete (or, for
// a device or FIFO, written in place: renaming over one would destroy it).
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

/// Whether a committed file is forced to disk first. to_disk: what kcache
/// keeps (bundles, settings) survives a power loss whole or not at all.
/// none: a build output a build system remakes when it is lost, as
/// compilers write theirs (the rename is still atomic to readers).
enum class Flush { to_disk, none };

/// An output file that readers see whole or not at all. A regular target
/// (or a missing one) is written under a fresh temporary name beside it and
/// commit() fsyncs it and renames it over the target, so readers see the old
/// file or the new one, never a mix; destroyed uncommitted, the temporary is
/// removed. A symlink to a regular file is followed: the file it names is
/// replaced and the link stays (so `-o /dev/stdout` redirected to a file
/// never replaces /dev/stdout); a dangling symlink is written through (the
/// file it names is created, as `cc -o` and glslc do). A target that is, or links to, something
/// else (a character or block device, a FIFO, e.g. /dev/null, /dev/stdout
/// on a pipe) cannot be replaced without destroying it: it is opened for
/// writing in place (no truncation; a FIFO's open waits for its reader), and
/// commit() only closes it.
class AtomicFile {
 public:
  /// Opens the output for `target`; a temporary file gets `mode` less the
  /// process's umask (0666 under umask 077 gives 0600; 0600 stays 0600). The
  /// temporary is created exclusively with a random name (O_EXCL,
  /// O_NOFOLLOW: a planted file or symlink is never opened) and close-on-exec
  /// (a worker child never inherits it). io_error / not_found naming the
  /// target's folder when it cannot be created, the target when a special
  /// file cannot be opened (a socket cannot).
  static Result<AtomicFile> create(const std::filesystem::path& target, mode_t mode = 0666);
  AtomicFile(AtomicFile&&) noexcept = default;
  AtomicFile& operator=(AtomicFile&&) noexcept = default;
  ~AtomicFile();

  int fd() const { return m_fd.get(); }
  /// Whether writes go straight to the target (a device or FIFO).
  bool in_place() const { return m_in_place; }
  /// Appends `data`; io_error naming the target.
  Result<void> write(std::span<const std::uint8_t> data);
  /// A temporary: fsync (unless `flush` is Flush::none), close, rename over
  /// the target. In place: close. io_error naming the target.
  Result<void> commit(Flush flush = Flush::to_disk);

 private:
  AtomicFile(std::filesystem::path target, std::string temp, UniqueFd fd, bool in_place)
      : m_target(std::move(target)), m_temp(std::move(temp)), m_fd(std::move(fd)), m_in_place(in_place) {}
  std::filesystem::path m_target;  ///< what is written or renamed over (a followed symlink's file)
  std::string m_temp;              ///< empty once committed or moved from, and when in place
  UniqueFd m_fd;
  bool m_in_place = false;
};

/// What read_file accepts. The defaults read anything readable (stdin-like
/// paths included); input from elsewhere (a bundle's record, an #include)
/// passes limits so that /dev/zero, a FIFO or a huge file cannot hang the
/// process or exhaust its memory.
struct ReadLimits {
  std::uint64_t max_bytes = UINT64_MAX;  ///< more is invalid_argument, nothing past it is read
  bool regular_only = false;             ///< refuse devices, FIFOs and sockets (opened non-blocking)
  bool no_symlink = false;               ///< refuse a symlink as the last component (O_NOFOLLOW)
};

/// Whole file as bytes; not_found when missing, invalid_argument for a
/// directory, for a special file when `limits.regular_only`, for a symlink
/// when `limits.no_symlink`, or for a file over `limits.max_bytes`; io_error
/// otherwise.
Result<std::string> read_file(const std::filesystem::path& path, ReadLimits limits = {});

/// Writes `data` to `path` through an AtomicFile (so a device or FIFO
/// target is written in place, anything else replaced whole); a new file
/// gets `mode` less the umask.
Result<void> write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> data,
                               mode_t mode = 0666, Flush flush = Flush::to_disk);

/// A new folder under `parent` (mkdtemp: PREFIX-XXXXXX, mode 0700),
/// removed with everything in it when this object goes. io_error when
/// `parent` has no room for one or cannot be written.
class ScratchDir {
 public:
  static Result<ScratchDir> make(const std::filesystem::path& parent, std::string_view prefix);
  ScratchDir(ScratchDir&& o) noexcept;
  ScratchDir& operator=(ScratchDir&&) = delete;
  ~ScratchDir();
  const std::filesystem::path& path() const { return m_path; }

 private:
  explicit ScratchDir(std::filesystem::path p) : m_path(std::move(p)) {}
  std::filesystem::path m_path;
};

/// A regular file mapped read-only, whole, for readers that index into it
/// without copying (a deployment file). The mapping is private and
/// read-only: a process that truncates the file under it could still make
/// a later access fault, which is why readers check a file once at open and
/// the documentation says such files are immutable once written.
class MappedFile {
 public:
  /// Maps `path`: not_found when missing, invalid_argument for anything but
  /// a regular file, for an empty one or one over `max_bytes` (nothing is
  /// mapped then), io_error otherwise. `populate`: fault every page in now
  /// (MAP_POPULATE), for a reader about to touch every byte anyway.
  static Result<MappedFile> open(const std::filesystem::path& path, std::uint64_t max_bytes, bool populate);
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  ~MappedFile();
  std::span<const std::uint8_t> bytes() const { return {m_data, m_size}; }

 private:
  MappedFile(const std::uint8_t* data, std::size_t size) : m_data(data), m_size(size) {}
  const std::uint8_t* m_data = nullptr;
  std::size_t m_size = 0;
};

/// The error for a failed OS call on `path`: not_found for ENOENT, io_error
/// otherwise; "cannot ACTION PATH: strerror".
tl::unexpected<Error> os_error(const std::filesystem::path& path, std::string_view action, int err);

}  // namespace kcache::util
