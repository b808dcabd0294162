// The pending run log (format and reliability: pending_runs_internal.hpp).
#include "kcache/store/pending_runs_internal.hpp"

#include "kcache/store/layout_internal.hpp"
#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kcache::store::internal {
namespace {

constexpr std::uint8_t k_pending_magic[4] = {'K', 'C', 'P', 0x01};

std::uint64_t new_generation() {
  std::random_device rd;  // getrandom(2)
  std::uint64_t g = 0;
  while (g == 0) g = (std::uint64_t{rd()} << 32) | rd();  // 0 means "no valid header"
  return g;
}

}  // namespace

PendingLog parse_pending_runs(std::span<const std::uint8_t> bytes) {
  PendingLog log;
  util::ByteReader r(bytes);
  auto magic = r.raw(4);
  auto version = r.u16();
  auto reserved = r.u16();
  auto generation = r.u64();
  if (!magic || std::memcmp(magic->data(), k_pending_magic, 4) != 0 || version != k_pending_runs_version ||
      reserved != 0 || !generation || *generation == 0)
    return log;
  log.generation = *generation;
  log.valid_end = k_pending_header_bytes;
  while (r.remaining() > 0) {
    auto length = r.u32();
    if (!length || *length == 0 || *length > k_max_pending_record) break;
    auto record = r.raw(*length);
    if (!record) break;  // torn tail
    auto run = decode_run(log.runs.size() + 1, *record);
    if (!run) break;  // damaged: it and everything after are ignored
    log.valid_end = r.position();
    log.runs.emplace_back(log.valid_end, std::move(*run));
  }
  return log;
}

std::vector<std::uint8_t> encode_pending_header(std::uint64_t generation) {
  util::ByteWriter w;
  w.raw(k_pending_magic);
  w.u16(k_pending_runs_version);
  w.u16(0);
  w.u64(generation);
  return w.take();
}

std::vector<std::uint8_t> encode_pending_record(const RunRecord& run) {
  auto record = encode_run(run);
  util::ByteWriter w;
  w.u32(static_cast<std::uint32_t>(record.size()));
  w.raw(record);
  return w.take();
}

std::vector<std::uint8_t> encode_pending_mark(const PendingMark& mark) {
  util::ByteWriter w;
  w.u64(mark.generation);
  w.u64(mark.offset);
  return w.take();
}

std::optional<PendingMark> decode_pending_mark(std::span<const std::uint8_t> bytes) {
  if (bytes.size() != 16) return std::nullopt;
  util::ByteReader r(bytes);
  return PendingMark{*r.u64(), *r.u64()};
}

std::vector<RunRecord> unfolded_runs(PendingLog log, const std::optional<PendingMark>& mark) {
  std::vector<RunRecord> out;
  const bool same = mark && mark->generation == log.generation;
  for (auto& [end, run] : log.runs)
    if (!same || end > mark->offset) out.push_back(std::move(run));
  return out;
}

Result<std::optional<PendingRunsFile>> PendingRunsFile::open_locked(const std::filesystem::path& dir, bool create) {
  auto path = dir / k_pending_runs_file;
  // O_NOFOLLOW: a symlink planted in the store directory is not followed.
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0664);
  if (fd < 0) {
    if (errno == ENOENT && !create) return std::optional<PendingRunsFile>{};
    return util::os_error(path, "open the pending run log", errno);
  }
  PendingRunsFile file(path, fd);
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) return util::os_error(path, "lock the pending run log", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return util::os_error(path, "stat the pending run log", errno);
  if (!S_ISREG(st.st_mode))
    return fail(Category::io_error, "{} is not a regular file; remove it (it holds only build statistics)",
                path.string());
  return std::optional(std::move(file));
}

PendingRunsFile::~PendingRunsFile() {
  if (m_fd >= 0) ::close(m_fd);  // releases the flock
}

Result<PendingLog> PendingRunsFile::read() const {
  // Sized by the file (a warm launcher command reads a log of a few runs:
  // a buffer of the bound would be a megabyte zeroed and faulted in for it).
  struct stat st {};
  if (::fstat(m_fd, &st) != 0) return util::os_error(m_path, "stat the pending run log", errno);
  std::vector<std::uint8_t> bytes(std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), k_max_pending_file));
  std::size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::pread(m_fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return util::os_error(m_path, "read the pending run log", errno);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  bytes.resize(got);
  return parse_pending_runs(bytes);
}

Result<std::uint64_t> PendingRunsFile::append(const RunRecord& run) {
  std::uint8_t head[k_pending_header_bytes];
  ssize_t n = ::pread(m_fd, head, sizeof head, 0);
  if (n < 0) return util::os_error(m_path, "read the pending run log", errno);
  if (n != static_cast<ssize_t>(sizeof head) || parse_pending_runs(std::span(head, sizeof head)).generation == 0)
    KCACHE_CHECK(restart());
  auto record = encode_pending_record(run);
  off_t end = ::lseek(m_fd, 0, SEEK_END);
  if (end < 0) return util::os_error(m_path, "append to the pending run log", errno);
  errno = 0;
  if (::pwrite(m_fd, record.data(), record.size(), end) != static_cast<ssize_t>(record.size()))
    return util::os_error(m_path, "append to the pending run log", errno ? errno : EIO);
  return static_cast<std::uint64_t>(end) + record.size();
}

Result<void> PendingRunsFile::restart() {
  if (::ftruncate(m_fd, 0) != 0) return util::os_error(m_path, "empty the pending run log", errno);
  auto header = encode_pending_header(new_generation());
  errno = 0;
  if (::pwrite(m_fd, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()))
    return util::os_error(m_path, "write the pending run log's header", errno ? errno : EIO);
  return {};
}

PendingLog read_pending_runs(const std::filesystem::path& dir) {
  auto path = dir / k_pending_runs_file;
  auto bytes = util::read_file(path, {k_max_pending_file, true});
  if (!bytes) return {};
  return parse_pending_runs(std::span(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()));
}

}  // namespace kcache::store::internal
