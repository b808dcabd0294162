// Build leases (store.hpp Lease): the in-process list every Store has by
// default (the memory store's), and the LMDB store's lease files
// (layout_internal.hpp "Leases").
//
// flock(2), as kcache.lock (store_lock.cpp): the lock belongs to the open file
// description, so it lasts exactly as long as the holder's descriptor, and
// the OS drops it when the holder dies however it dies.
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/lmdb_store_impl_internal.hpp"
#include "kcache/util/file.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <map>
#include <mutex>
#include <random>

namespace kcache::store {
namespace internal {

/// The in-process leases of one Store: id → start.
class LeaseList {
 public:
  std::string add(std::uint64_t started) {
    std::lock_guard lock(m_mutex);
    std::string id = fmt::format("{}", ++m_next);
    m_started.emplace(id, started);
    return id;
  }
  void remove(const std::string& id) {
    std::lock_guard lock(m_mutex);
    m_started.erase(id);
  }
  std::optional<std::uint64_t> oldest(const Lease* except) const {
    std::lock_guard lock(m_mutex);
    std::optional<std::uint64_t> out;
    for (const auto& [id, started] : m_started)
      if ((!except || except->id() != id) && (!out || started < *out)) out = started;
    return out;
  }

 private:
  mutable std::mutex m_mutex;
  std::map<std::string, std::uint64_t> m_started;
  std::uint64_t m_next = 0;
};

namespace {

namespace fs = std::filesystem;

class ListedLease final : public Lease {
 public:
  ListedLease(std::shared_ptr<LeaseList> list, std::uint64_t started)
      : m_list(std::move(list)), m_started(started), m_id(m_list->add(started)) {}
  ~ListedLease() override { m_list->remove(m_id); }
  std::uint64_t started() const override { return m_started; }
  const std::string& id() const override { return m_id; }

 private:
  std::shared_ptr<LeaseList> m_list;
  std::uint64_t m_started;
  std::string m_id;
};

/// A lease file, locked while this object lives; removed before the lock
/// goes, so no reader ever sees it unlocked while it is held.
class FileLease final : public Lease {
 public:
  FileLease(fs::path path, util::UniqueFd fd, std::uint64_t started)
      : m_path(std::move(path)), m_fd(std::move(fd)), m_started(started), m_id(m_path.filename().string()) {}
  ~FileLease() override {
    ::unlink(m_path.c_str());
    m_fd.reset();  // releases the flock
  }
  std::uint64_t started() const override { return m_started; }
  const std::string& id() const override { return m_id; }

 private:
  fs::path m_path;
  util::UniqueFd m_fd;
  std::uint64_t m_started;
  std::string m_id;
};

std::string lease_text(std::uint64_t started) {
  return fmt::format("kcache-lease 1\nstarted {}\npid {}\n", started, ::getpid());
}

/// The start a lease file's text gives, nullopt when it does not parse.
std::optional<std::uint64_t> parse_lease(std::string_view text) {
  constexpr std::string_view head = "kcache-lease 1\nstarted ";
  if (!text.starts_with(head)) return std::nullopt;
  text.remove_prefix(head.size());
  std::uint64_t started = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), started);
  if (ec != std::errc{} || end == text.data() || end == text.data() + text.size() || *end != '\n') return std::nullopt;
  return started;
}

/// What one lease file says: nullopt when it is gone or dead (removed here
/// when `remove_dead`), else when its build started.
Result<std::optional<std::uint64_t>> read_lease(const fs::path& path, bool remove_dead) {
  // O_NONBLOCK: a FIFO planted under a lease's name must not hang us.
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT || errno == ELOOP) return std::optional<std::uint64_t>{};  // gone, or not a lease
    if (errno != EACCES) return util::os_error(path, "open the build lease", errno);
    // Another user's lease we may not read: live for all we know, since its mtime.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::optional<std::uint64_t>{};
    return std::optional<std::uint64_t>(static_cast<std::uint64_t>(st.st_mtime));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return util::os_error(path, "stat the build lease", errno);
  if (!S_ISREG(st.st_mode)) return std::optional<std::uint64_t>{};
  int locked;
  while ((locked = ::flock(fd.get(), LOCK_SH | LOCK_NB)) != 0 && errno == EINTR) {}
  if (locked == 0) {
    // Unlocked under its final name: its process ended without removing it.
    if (remove_dead) ::unlink(path.c_str());
    return std::optional<std::uint64_t>{};
  }
  if (errno != EWOULDBLOCK) return util::os_error(path, "test the lock of the build lease", errno);
  // Locked: its build is running.
  char buf[128];
  ssize_t n;
  while ((n = ::pread(fd.get(), buf, sizeof buf, 0)) < 0 && errno == EINTR) {}
  auto started = n > 0 ? parse_lease(std::string_view(buf, static_cast<std::size_t>(n))) : std::nullopt;
  return std::optional<std::uint64_t>(started ? *started : static_cast<std::uint64_t>(st.st_mtime));
}

}  // namespace
}  // namespace internal

Store::Store() : m_leases(std::make_shared<internal::LeaseList>()) {}
Store::~Store() = default;

Result<std::unique_ptr<Lease>> Store::begin_lease(std::uint64_t now) {
  return std::unique_ptr<Lease>(std::make_unique<internal::ListedLease>(m_leases, now));
}

Result<std::optional<std::uint64_t>> Store::oldest_lease(const Lease* except) { return m_leases->oldest(except); }

namespace internal {

Result<std::unique_ptr<Lease>> LmdbStore::begin_lease(std::uint64_t now) {
  if (m_read_only) return refuse_write("take a build lease");
  const fs::path dir = m_env->dir() / k_leases_dir_name;
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) return util::os_error(dir, "create", errno);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return util::os_error(dir, "stat", errno);
  if (!S_ISDIR(st.st_mode))
    return fail(Category::io_error, "{}: {} is not a folder; remove it (it holds only the leases of running builds)",
                store_name(), dir.string());
  std::random_device rd;  // getrandom(2)
  const std::string name = fmt::format("{}.{:08x}{:08x}", ::getpid(), rd(), rd());
  const fs::path temp = dir / fmt::format(".{}.tmp", name), path = dir / name;
  util::UniqueFd fd(::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd) return util::os_error(temp, "create the build lease", errno);
  struct RemoveTemp {
    const fs::path& path;
    bool armed = true;
    ~RemoveTemp() {
      if (armed) ::unlink(path.c_str());
    }
  } remove_temp{temp};
  // Locked before it gets its name: under that name it is never unlocked while held.
  while (::flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) return util::os_error(temp, "lock the build lease", errno);
  const std::string text = lease_text(now);
  if (!util::write_all(fd.get(), {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}))
    return util::os_error(temp, "write the build lease", errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) return util::os_error(path, "name the build lease", errno);
  remove_temp.armed = false;
  return std::unique_ptr<Lease>(std::make_unique<FileLease>(path, std::move(fd), now));
}

Result<std::optional<std::uint64_t>> LmdbStore::oldest_lease(const Lease* except) {
  const fs::path dir = m_env->dir() / k_leases_dir_name;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return std::optional<std::uint64_t>{};
  if (ec) return fail(Category::io_error, "{}: cannot list {}: {}", store_name(), dir.string(), ec.message());
  std::optional<std::uint64_t> oldest;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with('.') || (except && except->id() == name)) continue;
    auto started = KCACHE_TRY(read_lease(it->path(), !m_read_only));
    if (started && (!oldest || *started < *oldest)) oldest = started;
  }
  if (ec) return fail(Category::io_error, "{}: cannot list {}: {}", store_name(), dir.string(), ec.message());
  return oldest;
}

}  // namespace internal
}  // namespace kcache::store
