#include "kcache/util/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

Result<AtomicFile> AtomicFile::create(const std::filesystem::path& target, mode_t mode) {
  // mkstemp, not a pid-derived name: two threads of one process (or a
  // stale file from a crash) never collide.
  std::string temp = target.string() + ".tmp-XXXXXX";
  UniqueFd fd(::mkstemp(temp.data()));
  if (!fd) {
    auto folder = target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
    return os_error(folder, "create a temporary file in", errno);
  }
  // mkstemp makes 0600; the target gets the mode the caller asked for.
  if (::fchmod(fd.get(), mode) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return os_error(target, "set the mode of", err);
  }
  return AtomicFile(target, std::move(temp), std::move(fd));
}

AtomicFile::~AtomicFile() {
  if (!m_temp.empty()) ::unlink(m_temp.c_str());
}

Result<void> AtomicFile::write(std::span<const std::uint8_t> data) {
  if (!write_all(m_fd.get(), data)) return os_error(m_target, "write", errno);
  return {};
}

Result<void> AtomicFile::commit() {
  if (::fsync(m_fd.get()) != 0 || m_fd.reset() != 0) return os_error(m_target, "flush to disk", errno);
  if (::rename(m_temp.c_str(), m_target.c_str()) != 0) return os_error(m_target, "move into place", errno);
  m_temp.clear();
  return {};
}

Result<std::string> read_file(const std::filesystem::path& path, ReadLimits limits) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise block for
  // ever before fstat could refuse it; it does not affect regular files.
  const int flags = O_RDONLY | O_CLOEXEC | (limits.regular_only ? O_NONBLOCK : 0);
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd) return os_error(path, "read", errno);
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

Result<void> write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> data, mode_t mode) {
  auto file = KCACHE_TRY(AtomicFile::create(path, mode));
  KCACHE_CHECK(file.write(data));
  return file.commit();
}

}  // namespace kcache::util
