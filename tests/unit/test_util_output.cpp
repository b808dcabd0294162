// Output files (util/file.hpp AtomicFile, write_file_atomic) against targets
// that are not plain files: a FIFO, a symlink to one, a symlink to a device,
// a symlink to a regular file. Each must keep what it is; only a regular
// target is replaced by rename, and the temporary never leaks into a child.
#include "kcache/util/file.hpp"

#include "test_support.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace kcache::util {
namespace {

std::span<const std::uint8_t> bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

/// A FIFO's reading end, opened before the write so that neither side
/// blocks (the bytes are small enough for the pipe's buffer) and a test of
/// the old behaviour fails instead of hanging.
struct FifoReader {
  UniqueFd fd;
  explicit FifoReader(const std::filesystem::path& path) : fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK)) {
    REQUIRE(fd);
  }
  std::string drain() {
    std::string out;
    char buf[256];
    ssize_t n;
    while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
};

bool lstat_fifo(const std::filesystem::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}
bool lstat_link(const std::filesystem::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}
std::size_t entries_in(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("writing to a FIFO writes into it and leaves it a FIFO") {
  test::TempDir dir;
  auto fifo = dir.path() / "out.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  FifoReader reader(fifo);
  auto written = write_file_atomic(fifo, bytes("payload"));
  REQUIRE_MESSAGE(written.has_value(), written.error().message);
  CHECK(reader.drain() == "payload");
  CHECK(lstat_fifo(fifo));
  CHECK(entries_in(dir.path()) == 1);  // no temporary left beside it
}

TEST_CASE("a symlink to a FIFO stays a symlink and the FIFO gets the bytes") {
  test::TempDir dir;
  auto fifo = dir.path() / "real.fifo";
  auto link = dir.path() / "link";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::filesystem::create_symlink(fifo, link);
  FifoReader reader(fifo);
  auto file = AtomicFile::create(link);
  REQUIRE_MESSAGE(file.has_value(), file.error().message);
  REQUIRE(file->write(bytes("ab")).has_value());
  REQUIRE(file->write(bytes("cd")).has_value());
  auto committed = file->commit();
  REQUIRE_MESSAGE(committed.has_value(), committed.error().message);
  CHECK(reader.drain() == "abcd");
  CHECK(lstat_link(link));
  CHECK(lstat_fifo(fifo));
}

TEST_CASE("a symlink to a character device is written through, not replaced") {
  // /dev/null itself is left alone here (before this was fixed, a test run
  // as root would have replaced it); a link to it shows the same rule.
  test::TempDir dir;
  auto link = dir.path() / "null";
  std::filesystem::create_symlink("/dev/null", link);
  auto written = write_file_atomic(link, bytes("discarded"));
  REQUIRE_MESSAGE(written.has_value(), written.error().message);
  CHECK(lstat_link(link));
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(entries_in(dir.path()) == 1);
}

TEST_CASE("a symlink to a regular file: the file it names is replaced, the link stays") {
  // As /dev/stdout → /proc/self/fd/1 → a file the shell redirected to: the
  // link must survive (as root, /dev/stdout itself was replaced).
  test::TempDir dir;
  auto real = dir.write("sub/real.bin", "old");
  auto link = dir.path() / "link.bin";
  std::filesystem::create_symlink(real, link);
  auto written = write_file_atomic(link, bytes("new"));
  REQUIRE_MESSAGE(written.has_value(), written.error().message);
  CHECK(lstat_link(link));
  CHECK(*read_file(real) == "new");
  CHECK(entries_in(dir.path()) == 2);
  CHECK(entries_in(dir.path() / "sub") == 1);
}

TEST_CASE("a dangling symlink is written through: the file it names is created, the link stays") {
  // As `cc -o`, glslc and the launcher's users expect (issue 40 item 9):
  // out.spv → ../artifacts/out.spv before the artifact exists. Relative and
  // absolute links, and a chain of two.
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "artifacts");
  auto rel = dir.path() / "rel.bin";
  std::filesystem::create_symlink("artifacts/rel.bin", rel);
  auto abs = dir.path() / "abs.bin";
  std::filesystem::create_symlink(dir.path() / "artifacts/abs.bin", abs);
  auto chain = dir.path() / "chain.bin";
  std::filesystem::create_symlink("rel2.bin", chain);
  std::filesystem::create_symlink("artifacts/chain.bin", dir.path() / "rel2.bin");
  for (const auto& link_and_file :
       {std::pair{rel, std::string("artifacts/rel.bin")}, std::pair{abs, std::string("artifacts/abs.bin")},
        std::pair{chain, std::string("artifacts/chain.bin")}}) {
    // Named members, not a structured binding: CAPTURE's lambda cannot
    // capture a binding under clang 14.
    const auto& link = link_and_file.first;
    const auto& file = link_and_file.second;
    CAPTURE(link);
    auto written = write_file_atomic(link, bytes("new"));
    REQUIRE_MESSAGE(written.has_value(), written.error().message);
    CHECK(lstat_link(link));
    CHECK(*read_file(dir.path() / file) == "new");
  }
  CHECK(entries_in(dir.path() / "artifacts") == 3);
}

TEST_CASE("a regular target is replaced atomically; the temporary is close-on-exec and beside it") {
  test::TempDir dir;
  auto target = dir.write("out.bin", "old");
  auto file = AtomicFile::create(target, 0640);
  REQUIRE_MESSAGE(file.has_value(), file.error().message);
  // A worker child (fork + exec) must not inherit the half-written output.
  CHECK((::fcntl(file->fd(), F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(entries_in(dir.path()) == 2);
  CHECK(*read_file(target) == "old");  // readers still see the old file
  REQUIRE(file->write(bytes("new")).has_value());
  REQUIRE(file->commit().has_value());
  CHECK(*read_file(target) == "new");
  CHECK(entries_in(dir.path()) == 1);
  struct stat st {};
  REQUIRE(::stat(target.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
}

namespace {

/// Sets the umask for a scope (process-wide: doctest runs cases one at a time).
struct ScopedUmask {
  mode_t old;
  explicit ScopedUmask(mode_t mask) : old(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old); }
};

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("a new output honours the umask, and a secret's 0600 is never widened") {
  test::TempDir dir;
  {
    ScopedUmask mask(077);
    REQUIRE(write_file_atomic(dir.path() / "private.bin", bytes("x")).has_value());
    CHECK(mode_of(dir.path() / "private.bin") == 0600);
    // Replacing an existing file: the new one follows the umask too.
    auto shared = dir.write("shared.bin", "old");
    ::chmod(shared.c_str(), 0644);
    REQUIRE(write_file_atomic(shared, bytes("new")).has_value());
    CHECK(mode_of(shared) == 0600);
  }
  {
    ScopedUmask mask(022);
    REQUIRE(write_file_atomic(dir.path() / "public.bin", bytes("x")).has_value());
    CHECK(mode_of(dir.path() / "public.bin") == 0644);
  }
  {
    ScopedUmask mask(0);  // the most permissive umask: an explicit 0600 stays 0600
    REQUIRE(write_file_atomic(dir.path() / "secret.key", bytes("k"), 0600).has_value());
    CHECK(mode_of(dir.path() / "secret.key") == 0600);
  }
}

TEST_CASE("an uncommitted temporary is removed, and a planted symlink is never followed") {
  test::TempDir dir;
  auto target = dir.path() / "out.bin";
  auto victim = dir.write("victim", "keep");
  // Links planted at the names a predictable scheme would use.
  for (const std::string& suffix :
       std::vector<std::string>{".tmp", ".tmp-0", ".tmp-XXXXXX", ".tmp." + std::to_string(::getpid())})
    std::filesystem::create_symlink(victim, target.string() + suffix);
  const std::size_t before = entries_in(dir.path());
  {
    auto file = AtomicFile::create(target);
    REQUIRE(file.has_value());
    REQUIRE(file->write(bytes("x")).has_value());
  }
  CHECK(entries_in(dir.path()) == before);
  REQUIRE(write_file_atomic(target, bytes("data")).has_value());
  CHECK(*read_file(victim) == "keep");
  CHECK(*read_file(target) == "data");
  CHECK(!lstat_link(target));
}

TEST_CASE("a socket target is refused with the target's name, not replaced") {
  test::TempDir dir;
  auto sock = dir.path() / "s";
  // A named socket cannot be opened for writing: the error names it, and it stays.
  REQUIRE(::mknod(sock.c_str(), S_IFSOCK | 0600, 0) == 0);
  auto written = write_file_atomic(sock, bytes("x"));
  REQUIRE(!written.has_value());
  CHECK(written.error().message.find(sock.string()) != std::string::npos);
  struct stat st {};
  REQUIRE(::lstat(sock.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
}

}  // namespace kcache::util
