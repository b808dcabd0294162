#include "kcache/core/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace kcache {
namespace {

tl::unexpected<Error> os_error(const std::filesystem::path& path, std::string_view action, int err) {
  return fail(err == ENOENT ? Category::not_found : Category::io_error, "cannot {} {}: {}", action,
              path.string(), std::strerror(err));
}

}  // namespace

Result<std::string> read_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return os_error(path, "read", errno);
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) out.reserve(static_cast<std::size_t>(st.st_size));
  else if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return fail(Category::invalid_argument, "cannot read {}: it is a directory", path.string());
  }
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return os_error(path, "read", err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

Result<void> write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> data) {
  std::string tmp = path.string() + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return os_error(path, "write", errno);
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return os_error(path, "write", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return os_error(path, "write", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return os_error(path, "write", err);
  }
  return {};
}

std::uint64_t unix_now() {
  // Test-only hook (tests/cli/life_gc.sh): KCACHE_TEST_NOW=SECONDS pins the
  // clock, so age and last-use rules can be tested without waiting. Never set
  // it outside tests.
  if (const char* pinned = std::getenv("KCACHE_TEST_NOW"); pinned && *pinned) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(pinned, &end, 10);
    if (end && *end == '\0') return v;
  }
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

}  // namespace kcache
