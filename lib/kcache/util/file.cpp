#include "kcache/util/file.hpp"

#include "kcache/util/text.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <random>
#include <utility>

namespace kcache::util {

tl::unexpected<Error> os_error(const std::filesystem::path& path, std::string_view action, int err) {
  return fail(err == ENOENT ? Category::not_found : Category::io_error, "cannot {} {}: {}", action, path.string(),
              std::strerror(err));
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    reset();
    m_fd = o.release();
  }
  return *this;
}

int UniqueFd::release() {
  int fd = m_fd;
  m_fd = -1;
  return fd;
}

int UniqueFd::reset() {
  int r = m_fd >= 0 ? ::close(m_fd) : 0;
  m_fd = -1;
  return r;
}

bool write_all(int fd, std::span<const std::uint8_t> data) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

namespace {

/// 16 random hex digits for a temporary's name: unguessable, so another
/// user cannot plant a file or symlink where it will be created.
std::string random_suffix() {
  std::uint8_t raw[8];
  std::size_t got = 0;
  while (got < sizeof raw) {
    ssize_t n = ::getrandom(raw + got, sizeof raw - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  if (got < sizeof raw) {  // no getrandom (old kernel, seccomp): the OS's other source
    std::random_device rd;
    for (auto& b : raw) b = static_cast<std::uint8_t>(rd());
  }
  return to_hex(raw);
}

/// Whether `st` is something a rename over would destroy rather than
/// replace: a device, FIFO or socket.
bool is_special(const struct stat& st) { return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode); }

}  // namespace

namespace {

/// Where a dangling symlink (or a chain of them) leads: the path a plain
/// open(O_CREAT) would create, as `cc -o` and glslc write through such a
/// link. nullopt when `path` is not a symlink or the chain is longer than
/// the kernel's own limit (ELOOP).
std::optional<std::filesystem::path> dangling_link_target(const std::filesystem::path& path) {
  std::filesystem::path at = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    const bool link = std::filesystem::is_symlink(std::filesystem::symlink_status(at, ec));
    if (ec || !link) return hops ? std::optional(at) : std::nullopt;
    auto next = std::filesystem::read_symlink(at, ec);
    if (ec) return std::nullopt;
    at = next.is_absolute() ? next : at.parent_path() / next;
  }
  return std::nullopt;
}

}  // namespace

Result<AtomicFile> AtomicFile::create(const std::filesystem::path& target, mode_t mode) {
  std::filesystem::path dest = target;
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (!exists && errno == ENOENT) {
    // A dangling symlink: write the file it names and keep the link, as
    // `cc -o` and glslc do (renaming over it would replace the link).
    if (auto leads_to = dangling_link_target(target)) dest = *leads_to;
  } else if (exists) {
    if (is_special(st)) {
      // In place: no O_TRUNC (a device has nothing to truncate, and a file
      // swapped in meanwhile must not lose its bytes), no O_CREAT.
      UniqueFd fd(::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY));
      if (!fd) return os_error(target, "open for writing", errno);
      struct stat opened {};
      if (::fstat(fd.get(), &opened) != 0) return os_error(target, "open for writing", errno);
      if (is_special(opened)) return AtomicFile(target, "", std::move(fd), true);
      // Replaced by a regular file since stat: treat it as one (below).
      if (::stat(target.c_str(), &st) != 0) st = opened;
    }
    // A symlink to a regular file: replace the file it names and keep the
    // link (/dev/stdout → /proc/self/fd/1 → a redirected file; as root a
    // rename over the link would replace /dev/stdout itself).
    struct stat lst {};
    if (S_ISREG(st.st_mode) && ::lstat(target.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      std::error_code ec;
      auto resolved = std::filesystem::canonical(target, ec);
      if (!ec) dest = resolved;
    }
  }
  // Beside the destination (rename needs one filesystem), under a random
  // name created exclusively: O_EXCL refuses any existing name, O_NOFOLLOW
  // says so for symlinks too, O_CLOEXEC keeps it from worker children.
  std::string temp;
  UniqueFd fd;
  int err = EEXIST;
  for (int attempt = 0; attempt < 16 && err == EEXIST; ++attempt) {
    temp = dest.string() + ".tmp-" + random_suffix();
    // Created with `mode` so the kernel applies the umask (and a default
    // ACL), as for any new file; never fchmod'ed afterwards, which would
    // widen it past what the user allows (0644 under umask 077).
    fd = UniqueFd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777));
    err = fd ? 0 : errno;
  }
  if (!fd) {
    auto folder = dest.parent_path().empty() ? std::filesystem::path(".") : dest.parent_path();
    return os_error(folder, "create a temporary file in", err);
  }
  return AtomicFile(dest, std::move(temp), std::move(fd), false);
}

AtomicFile::~AtomicFile() {
  if (!m_temp.empty()) ::unlink(m_temp.c_str());
}

Result<void> AtomicFile::write(std::span<const std::uint8_t> data) {
  if (!write_all(m_fd.get(), data)) return os_error(m_target, "write", errno);
  return {};
}

Result<void> AtomicFile::commit(Flush flush) {
  if (m_in_place) {
    // fsync means nothing to a FIFO or most devices (EINVAL); close reports
    // a deferred write error.
    if (m_fd.reset() != 0) return os_error(m_target, "write", errno);
    return {};
  }
  if ((flush == Flush::to_disk && ::fsync(m_fd.get()) != 0) || m_fd.reset() != 0)
    return os_error(m_target, "flush to disk", errno);
  if (::rename(m_temp.c_str(), m_target.c_str()) != 0) return os_error(m_target, "move into place", errno);
  m_temp.clear();
  return {};
}

Result<std::string> read_file(const std::filesystem::path& path, ReadLimits limits) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise block for
  // ever before fstat could refuse it; it does not affect regular files.
  const int flags =
      O_RDONLY | O_CLOEXEC | (limits.regular_only ? O_NONBLOCK : 0) | (limits.no_symlink ? O_NOFOLLOW : 0);
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd) {
    // O_NOFOLLOW on a symlink fails with ELOOP: refused, not an I/O fault.
    if (limits.no_symlink && errno == ELOOP)
      return fail(Category::invalid_argument, "cannot read {}: it is a symbolic link", path.string());
    return os_error(path, "read", errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return os_error(path, "read", errno);
  if (S_ISDIR(st.st_mode)) return fail(Category::invalid_argument, "cannot read {}: it is a directory", path.string());
  if (limits.regular_only && !S_ISREG(st.st_mode))
    return fail(Category::invalid_argument, "cannot read {}: not a regular file (a device, FIFO or socket)",
                path.string());
  auto too_large = [&] {
    return fail(Category::invalid_argument, "cannot read {}: larger than the limit of {} bytes", path.string(),
                limits.max_bytes);
  };
  std::string out;
  if (S_ISREG(st.st_mode)) {
    if (static_cast<std::uint64_t>(st.st_size) > limits.max_bytes) return too_large();
    out.reserve(static_cast<std::size_t>(st.st_size));
  }
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(path, "read", errno);
    }
    if (n == 0) break;
    // Checked as it grows too: a file may grow after fstat, a device has no size.
    if (out.size() + static_cast<std::uint64_t>(n) > limits.max_bytes) return too_large();
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

Result<void> write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> data, mode_t mode,
                               Flush flush) {
  auto file = KCACHE_TRY(AtomicFile::create(path, mode));
  KCACHE_CHECK(file.write(data));
  return file.commit(flush);
}

Result<ScratchDir> ScratchDir::make(const std::filesystem::path& parent, std::string_view prefix) {
  std::string tmpl = (parent / (std::string(prefix) + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) return os_error(parent, "make a temporary folder in", errno);
  return ScratchDir(tmpl);
}

ScratchDir::ScratchDir(ScratchDir&& o) noexcept : m_path(std::exchange(o.m_path, {})) {}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!m_path.empty()) std::filesystem::remove_all(m_path, ec);
}

Result<MappedFile> MappedFile::open(const std::filesystem::path& path, std::uint64_t max_bytes, bool populate) {
  // O_NONBLOCK: a FIFO planted under the name is refused below, not waited on.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return os_error(path, "open", errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return os_error(path, "read the size of", errno);
  if (!S_ISREG(st.st_mode)) return fail(Category::invalid_argument, "{} is not a regular file", path.string());
  if (st.st_size <= 0) return fail(Category::invalid_argument, "{} is empty", path.string());
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return fail(Category::invalid_argument, "{} is {} bytes, over the {} this reader maps", path.string(), st.st_size,
                max_bytes);
  const auto size = static_cast<std::size_t>(st.st_size);
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd.get(), 0);
  if (data == MAP_FAILED) return os_error(path, "map", errno);
  return MappedFile(static_cast<const std::uint8_t*>(data), size);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : m_data(std::exchange(o.m_data, nullptr)), m_size(std::exchange(o.m_size, 0)) {}

MappedFile::~MappedFile() {
  if (m_data) ::munmap(const_cast<std::uint8_t*>(m_data), m_size);
}

}  // namespace kcache::util
