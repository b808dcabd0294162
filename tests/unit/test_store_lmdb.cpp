// LMDB-only store behaviour: files on disk, read-only opens, damaged stores,
// one environment per process, map limits and other processes.
//
// The tests run as root in CI, where permission bits do not stop writes. The
// path a user without write access takes (MDB_RDONLY|MDB_NOLOCK) is reached
// through internal::LockFile::never; the real chmod tests run only when not
// root.
#include "kcache/store/lmdb_store_internal.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/file.hpp"

#include "raw_lmdb.hpp"
#include "test_support.hpp"

#include <fmt/format.h>
#include <lmdb.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

namespace kcache::store {
namespace {

namespace fs = std::filesystem;
using kcache::test::raw_put;

Entry make_entry(const std::string& kernel, std::size_t size, char fill = 'p') {
  Entry e;
  e.kernel = kernel;
  e.key.id = util::hash_string("id:" + kernel);
  e.key.ir = util::hash_string("ir");
  e.payload.assign(size, static_cast<std::uint8_t>(fill));
  e.created = 1'700'000'000;
  seal_payload(e);
  return e;
}

const Namespace k_ns = spirv_namespace("vulkan1.2");

std::unique_ptr<Store> open_ok(const fs::path& dir, const OpenOptions& options = {}) {
  auto store = open_lmdb_store(dir, options);
  REQUIRE_MESSAGE(store.has_value(), store.error().message);
  return std::move(*store);
}

Error open_error(const fs::path& dir, const OpenOptions& options = {}) {
  auto store = open_lmdb_store(dir, options);
  REQUIRE_FALSE(store.has_value());
  return store.error();
}

void put_ok(Store& store, const std::vector<Entry>& entries, const Namespace& ns = k_ns) {
  auto r = store.put(ns, entries);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
}

Result<std::optional<Entry>> try_get(Store& store, std::string_view kernel) {
  std::optional<Entry> out;
  auto r = store.read([&](Reader& reader) -> Result<void> {
    out = KCACHE_TRY(reader.get(k_ns.name(), kernel));
    return {};
  });
  if (!r) return tl::unexpected(r.error());
  return out;
}

std::optional<Entry> get(Store& store, std::string_view kernel) {
  auto r = try_get(store, kernel);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return *r;
}

std::uint64_t txn_id(Store& store) {
  auto id = store.last_transaction_id();
  REQUIRE(id.has_value());
  return *id;
}

/// A file's bytes and modification time, to prove it was not touched.
struct FileState {
  std::string bytes;
  timespec mtime{};
  bool operator==(const FileState& o) const {
    return bytes == o.bytes && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

FileState file_state(const fs::path& path) {
  auto bytes = util::read_file(path);
  REQUIRE_MESSAGE(bytes.has_value(), bytes.error().message);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return {std::move(*bytes), st.st_mtim};
}

/// A store with two entries, closed again.
fs::path make_store(const test::TempDir& tmp, const OpenOptions& options = {}) {
  fs::path dir = tmp.path() / "store";
  auto store = open_ok(dir, options);
  put_ok(*store, {make_entry("a", 10), make_entry("b", 20)});
  return dir;
}

/// Runs `fn` in a child process and returns its exit status (`fn`'s result).
/// The child opens its own environment: the registry is keyed by pid too.
int in_child(const std::function<int()>& fn) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(fn());
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("lmdb store: entries survive closing and reopening") {
  test::TempDir tmp;
  fs::path dir = make_store(tmp);
  CHECK(fs::exists(dir / "data.mdb"));
  CHECK(fs::exists(dir / "lock.mdb"));
  auto store = open_ok(dir);
  CHECK(get(*store, "a") == make_entry("a", 10));
  CHECK(get(*store, "b") == make_entry("b", 20));
}

TEST_CASE("lmdb store: opening a store without writing changes no transaction id") {
  test::TempDir tmp;
  fs::path dir = make_store(tmp);
  std::uint64_t before = txn_id(*open_ok(dir));
  auto store = open_ok(dir);
  CHECK(txn_id(*store) == before);
}

TEST_CASE("lmdb store: read-only open leaves data.mdb untouched and refuses writes") {
  test::TempDir tmp;
  fs::path dir = make_store(tmp);
  std::uint64_t id = txn_id(*open_ok(dir));
  FileState data_before = file_state(dir / "data.mdb");

  {
    // Lock file writable: MDB_RDONLY with a reader slot in lock.mdb (which
    // therefore changes; only data.mdb must stay byte-identical here).
    auto store = open_ok(dir, {.read_only = true});
    CHECK(store->read_only());
    CHECK(get(*store, "a") == make_entry("a", 10));
    auto put = store->put(k_ns, std::vector{make_entry("c", 1)});
    REQUIRE_FALSE(put.has_value());
    CHECK(put.error().category == Category::read_only);
    std::vector<std::string> kernels = {"a"};
    auto removed = store->remove(k_ns.name(), kernels);
    REQUIRE_FALSE(removed.has_value());
    CHECK(removed.error().category == Category::read_only);
    CHECK(txn_id(*store) == id);
  }
  CHECK(file_state(dir / "data.mdb") == data_before);
}

TEST_CASE("lmdb store: read-only open without the lock file touches no file at all") {
  test::TempDir tmp;
  fs::path dir = make_store(tmp);
  FileState data_before = file_state(dir / "data.mdb");
  FileState lock_before = file_state(dir / "lock.mdb");
  {
    auto store = internal::open_lmdb_store(dir, {.read_only = true}, internal::LockFile::never);
    REQUIRE_MESSAGE(store.has_value(), store.error().message);
    CHECK((*store)->read_only());
    CHECK(get(**store, "b") == make_entry("b", 20));
    auto put = (*store)->put(k_ns, std::vector{make_entry("c", 1)});
    REQUIRE_FALSE(put.has_value());
    CHECK(put.error().category == Category::read_only);
  }
  CHECK(file_state(dir / "data.mdb") == data_before);
  CHECK(file_state(dir / "lock.mdb") == lock_before);

  SUBCASE("and creates no lock file where there is none") {
    fs::remove(dir / "lock.mdb");
    auto store = internal::open_lmdb_store(dir, {.read_only = true}, internal::LockFile::never);
    REQUIRE_MESSAGE(store.has_value(), store.error().message);
    CHECK(get(**store, "a").has_value());
    store->reset();
    CHECK_FALSE(fs::exists(dir / "lock.mdb"));
  }
}

TEST_CASE("lmdb store: a directory without write permission (not as root)") {
  if (::geteuid() == 0) {
    MESSAGE("skipped as root: permission bits do not stop root; the LockFile::never test covers this path");
    return;
  }
  test::TempDir tmp;
  fs::path dir = make_store(tmp);
  FileState data_before = file_state(dir / "data.mdb");
  FileState lock_before = file_state(dir / "lock.mdb");
  fs::permissions(dir / "data.mdb", fs::perms(0444));
  fs::permissions(dir / "lock.mdb", fs::perms(0444));
  fs::permissions(dir, fs::perms(0555));

  Error error = open_error(dir);
  CHECK(error.category == Category::read_only);
  CHECK(error.message.find("--read-only") != std::string::npos);
  {
    auto store = open_ok(dir, {.read_only = true});
    CHECK(get(*store, "a").has_value());
  }
  CHECK(file_state(dir / "data.mdb") == data_before);
  CHECK(file_state(dir / "lock.mdb") == lock_before);

  fs::permissions(dir, fs::perms(0));
  CHECK(open_error(dir, {.read_only = true}).category == Category::io_error);
  fs::permissions(dir, fs::perms(0755));
}

TEST_CASE("lmdb store: missing, empty and non-directory paths") {
  test::TempDir tmp;
  SUBCASE("read-only open of a missing directory is not_found and creates nothing") {
    Error e = open_error(tmp.path() / "nowhere", {.read_only = true});
    CHECK(e.category == Category::not_found);
    CHECK_FALSE(fs::exists(tmp.path() / "nowhere"));
  }
  SUBCASE("read-only open of an empty directory is not_found") {
    fs::create_directories(tmp.path() / "empty");
    CHECK(open_error(tmp.path() / "empty", {.read_only = true}).category == Category::not_found);
    CHECK(fs::is_empty(tmp.path() / "empty"));
  }
  SUBCASE("a writable open creates the directory") {
    auto store = open_ok(tmp.path() / "new" / "store");
    CHECK(fs::exists(tmp.path() / "new" / "store" / "data.mdb"));
  }
  SUBCASE("a file where the directory should be is io_error") {
    fs::path file = tmp.write("file", "not a directory");
    CHECK(open_error(file).category == Category::io_error);
    CHECK(open_error(file, {.read_only = true}).category == Category::io_error);
  }
}

TEST_CASE("lmdb store: a data.mdb that is not an LMDB file is corruption and stays untouched") {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  fs::path data = tmp.write("store/data.mdb", std::string(64 << 10, 'x'));
  FileState before = file_state(data);

  Error rw = open_error(dir);
  CHECK(rw.category == Category::corruption);
  CHECK(rw.message.find("not an LMDB store") != std::string::npos);
  Error ro = open_error(dir, {.read_only = true});
  CHECK(ro.category == Category::corruption);
  CHECK(file_state(data) == before);

  SUBCASE("a short garbage file too") {
    tmp.write("store/data.mdb", "garbage");
    CHECK(open_error(dir).category == Category::corruption);
  }
}

TEST_CASE("lmdb store: a truncated data.mdb is corruption at open, never SIGBUS") {
  // LMDB maps data.mdb and trusts its meta page: a page past the file's end
  // is SIGBUS on first touch. Each open runs in a child so that a SIGBUS
  // fails this test instead of killing the test runner.
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  {
    auto store = open_ok(dir);
    std::vector<Entry> entries;
    for (int i = 0; i < 16; ++i) entries.push_back(make_entry("k" + std::to_string(i), 20'000, 'a' + i));
    put_ok(*store, entries);
  }
  fs::path data = dir / "data.mdb";
  std::uintmax_t full = fs::file_size(data);
  REQUIRE(full > 16 * 20'000);
  // An interrupted copy that wrote LMDB's two meta pages and nothing more:
  // every tree root lies past the end (a cut that keeps the roots is the
  // next test's).
  fs::resize_file(data, 2 * 4096);
  for (bool read_only : {false, true}) {
    CAPTURE(read_only);
    int status = in_child([&] {
      auto store = open_lmdb_store(dir, {.read_only = read_only});
      if (store) {
        // Before the check, the open succeeds and the first read of a cut page is SIGBUS.
        (void)(*store)->read([](Reader& r) -> Result<void> {
          for (int i = 0; i < 16; ++i) KCACHE_CHECK(r.get(k_ns.name(), "k" + std::to_string(i)));
          return {};
        });
        return 2;
      }
      if (store.error().category != Category::corruption) return 3;
      if (store.error().message.find("truncated") == std::string::npos) return 4;
      if (store.error().message.find(dir.string()) == std::string::npos) return 5;
      return 0;
    });
    CHECK(status == 0);
  }
  // compact opens the file its own way: refused the same.
  int compact = in_child([&] {
    auto r = compact_lmdb_store(dir);
    if (r) return 2;
    if (r.error().category != Category::corruption) return 3;
    return r.error().message.find("truncated") == std::string::npos ? 4 : 0;
  });
  CHECK(compact == 0);
  CHECK(fs::file_size(data) == 2 * 4096);  // refused, not "repaired"
}

TEST_CASE("lmdb store: after gc and rebuild churn, a cut last page is corruption at open, never SIGBUS") {
  // Issue 27 item 3: with every tree root still inside the file, the cut
  // page is a leaf or overflow page that only a read reaches (SIGBUS in
  // inspect and build). Each open and full read runs in a child.
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  {
    auto store = open_ok(dir);
    for (int round = 0; round < 4; ++round) {
      // gc: drop every other kernel of the round before; then the rebuild
      // stores new ones, so the last pages written hold live entries.
      std::vector<std::string> gone;
      for (int i = 0; round > 0 && i < 40; i += 2) gone.push_back(fmt::format("k{}-{}", round - 1, i));
      auto removed = store->remove(k_ns.name(), gone);
      REQUIRE_MESSAGE(removed.has_value(), removed.error().message);
      std::vector<Entry> entries;
      for (int i = 0; i < 40; ++i)
        entries.push_back(make_entry(fmt::format("k{}-{}", round, i), 500 + 3000 * ((i + round) % 7), 'a' + i % 26));
      put_ok(*store, entries);
    }
  }
  fs::path data = dir / "data.mdb";
  const std::uintmax_t full = fs::file_size(data);
  // Opens and reads every entry: 0; refused as truncated: 1; another
  // outcome: 2 and up; killed by a signal: 128 + signal.
  auto open_and_read = [&] {
    return in_child([&] {
      auto store = open_lmdb_store(dir, {.read_only = true});
      if (!store) {
        if (store.error().category != Category::corruption) return 2;
        return store.error().message.find("truncated") == std::string::npos ? 3 : 1;
      }
      auto r = (*store)->read(
          [](Reader& reader) -> Result<void> { return reader.scan(k_ns.name(), [](Entry&&) { return true; }); });
      return r ? 0 : 4;
    });
  };
  REQUIRE(open_and_read() == 0);  // the churned store itself opens: no false alarm
  const std::string whole = *util::read_file(data);
  for (std::uintmax_t cut = 1; cut <= 6; ++cut) {
    CAPTURE(cut);
    fs::resize_file(data, full - cut * 4096);
    const int status = open_and_read();
    // A cut that loses only free pages is harmless and may open; a page in
    // use past the end must be refused. The last page written is in use.
    CHECK((status == 0 || status == 1));
    if (cut == 1) CHECK(status == 1);
    std::ofstream(data, std::ios::binary | std::ios::trunc)
        .write(whole.data(), static_cast<std::streamsize>(whole.size()));
  }
}

TEST_CASE("lmdb store: another program's LMDB environment is refused, not mixed into") {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  fs::create_directories(dir);
  raw_put(dir, nullptr, "someone", "else's data");
  std::string before = *util::read_file(dir / "data.mdb");
  Error e = open_error(dir);
  CHECK(e.category == Category::corruption);
  CHECK(e.message.find("not a kcache store") != std::string::npos);
  CHECK(*util::read_file(dir / "data.mdb") == before);
}

TEST_CASE("lmdb store: a newer layout version is refused") {
  test::TempDir tmp;
  fs::path dir = make_store(tmp);
  raw_put(dir, "meta", "schema", "99");
  Error e = open_error(dir);
  CHECK(e.category == Category::version_mismatch);
  CHECK(open_error(dir, {.read_only = true}).category == Category::version_mismatch);
}

TEST_CASE("lmdb store: a damaged entry is reported as corruption and overwritten by put") {
  test::TempDir tmp;
  fs::path dir = make_store(tmp);
  raw_put(dir, "entries", k_ns.name() + '\x1f' + "a", "not an entry record");
  auto store = open_ok(dir);

  auto got = try_get(*store, "a");
  REQUIRE_FALSE(got.has_value());
  CHECK(got.error().category == Category::corruption);
  CHECK(got.error().message.find(dir.string()) != std::string::npos);
  // A scan skips it and reports it, so the rest of the store stays usable.
  std::vector<std::string> seen;
  std::vector<DamagedEntry> damaged;
  auto scan = store->read([&](Reader& r) -> Result<void> {
    KCACHE_CHECK(r.scan(k_ns.name(), [&](Entry&& e) {
      seen.push_back(e.kernel);
      return true;
    }));
    damaged = r.damaged();
    return {};
  });
  REQUIRE_MESSAGE(scan.has_value(), scan.error().message);
  CHECK(seen == std::vector<std::string>{"b"});
  REQUIRE(damaged.size() == 1);
  CHECK(damaged[0].ns == k_ns.name());
  CHECK(damaged[0].kernel == "a");
  CHECK(damaged[0].error.category == Category::corruption);

  auto summary = store->put(k_ns, std::vector{make_entry("a", 10)});
  REQUIRE(summary.has_value());
  CHECK(summary->replaced == 1);
  CHECK(get(*store, "a") == make_entry("a", 10));

  SUBCASE("a valid record stored under another kernel's key is corruption too") {
    std::vector<std::uint8_t> record = encode_entry(make_entry("b", 5));
    store.reset();
    raw_put(dir, "entries", k_ns.name() + '\x1f' + "a", std::string(record.begin(), record.end()));
    store = open_ok(dir);
    auto wrong = try_get(*store, "a");
    REQUIRE_FALSE(wrong.has_value());
    CHECK(wrong.error().category == Category::corruption);
  }
}

TEST_CASE("lmdb store: damaged entries are skipped and each reported once; the rest reads as before") {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  const Namespace other = spirv_namespace("vulkan1.3");
  {
    auto store = open_ok(dir);
    put_ok(*store, {make_entry("a", 10), make_entry("b", 20), make_entry("c", 30), make_entry("d", 40)});
    put_ok(*store, {make_entry("x", 10)}, other);
  }
  // "b": a record whose payload byte changed (digest mismatch); "d": not a record at all.
  std::vector<std::uint8_t> record = encode_entry(make_entry("b", 20));
  record[record.size() / 2] ^= 0x01;
  raw_put(dir, "entries", k_ns.name() + '\x1f' + "b", std::string(record.begin(), record.end()));
  raw_put(dir, "entries", k_ns.name() + '\x1f' + "d", "junk");
  auto store = open_ok(dir);

  std::vector<std::string> seen, facts_seen;
  std::vector<NamespaceInfo> infos;
  std::vector<DamagedEntry> damaged;
  auto read = store->read([&](Reader& r) -> Result<void> {
    infos = KCACHE_TRY(r.namespaces());
    KCACHE_CHECK(r.scan(k_ns.name(), [&](Entry&& e) {
      seen.push_back(e.kernel);
      return true;
    }));
    KCACHE_CHECK(r.scan_facts(k_ns.name(), [&](Entry&& e, const EntryFacts&) {
      facts_seen.push_back(e.kernel);
      return true;
    }));
    damaged = r.damaged();
    return {};
  });
  REQUIRE_MESSAGE(read.has_value(), read.error().message);
  CHECK(seen == std::vector<std::string>{"a", "c"});
  CHECK(facts_seen == seen);
  REQUIRE(infos.size() == 2);
  CHECK(infos[0].ns.name() == k_ns.name());
  CHECK(infos[0].entries == 2);  // the healthy ones
  CHECK(infos[1].entries == 1);
  // Three scans met them; each is reported once.
  REQUIRE(damaged.size() == 2);
  CHECK(damaged[0].kernel == "b");
  CHECK(damaged[0].error.message.find("digest") != std::string::npos);
  CHECK(damaged[1].kernel == "d");
  for (const auto& d : damaged) {
    CHECK(d.ns == k_ns.name());
    CHECK(d.error.category == Category::corruption);
  }
  // A healthy entry is read as before; the damaged one is still corruption by name.
  CHECK(get(*store, "c") == make_entry("c", 30));
  CHECK(try_get(*store, "b").error().category == Category::corruption);
  // A new snapshot starts with an empty list.
  auto fresh = store->read([&](Reader& r) -> Result<void> {
    CHECK(r.damaged().empty());
    return {};
  });
  CHECK(fresh.has_value());
}

TEST_CASE("lmdb store: one directory opened twice in a process shares one environment") {
  test::TempDir tmp;
  fs::path dir = make_store(tmp);
  auto first = open_ok(dir);
  auto second = open_ok(dir / ".");  // another spelling of the same directory
  put_ok(*first, {make_entry("c", 30)});
  CHECK(get(*second, "c").has_value());
  first.reset();
  put_ok(*second, {make_entry("d", 40)});
  CHECK(get(*second, "d").has_value());

  SUBCASE("a read-only Store on a writable environment refuses writes but sees them") {
    auto reader = open_ok(dir, {.read_only = true});
    CHECK(reader->read_only());
    auto refused = reader->put(k_ns, std::vector{make_entry("e", 1)});
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().category == Category::read_only);
    put_ok(*second, {make_entry("e", 50)});
    CHECK(get(*reader, "e").has_value());
  }
  SUBCASE("a writable open while only a read-only environment is open is busy") {
    second.reset();
    auto reader = open_ok(dir, {.read_only = true});
    CHECK(open_error(dir).category == Category::busy);
    reader.reset();
    CHECK(open_ok(dir) != nullptr);
  }
}

TEST_CASE("lmdb store: a full map refuses the batch and keeps what was there") {
  test::TempDir tmp;
  fs::path dir = make_store(tmp, {.map_size = 1 << 20});
  {
    auto store = open_ok(dir, {.map_size = 1 << 20});
    std::uint64_t before = txn_id(*store);
    auto r = store->put(k_ns, std::vector{make_entry("small", 100), make_entry("big", 2 << 20)});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().category == Category::store_full);
    CHECK(r.error().message.find("nothing from this transaction was written") != std::string::npos);
    CHECK(txn_id(*store) == before);
    CHECK_FALSE(get(*store, "small").has_value());
    CHECK(get(*store, "a").has_value());
    put_ok(*store, {make_entry("small", 100)});  // still writable after the refusal
  }
  auto store = open_ok(dir);  // the default, larger map
  CHECK(get(*store, "a") == make_entry("a", 10));
  CHECK(get(*store, "small").has_value());
  put_ok(*store, {make_entry("big", 2 << 20)});
  CHECK(get(*store, "big") == make_entry("big", 2 << 20));
}

TEST_CASE("lmdb store: a map grown by another process is adopted (MDB_MAP_RESIZED)") {
  test::TempDir tmp;
  fs::path dir = make_store(tmp, {.map_size = 1 << 20});
  auto store = open_ok(dir, {.map_size = 1 << 20});
  int status = in_child([&] {
    auto child = open_lmdb_store(dir, {.map_size = 16 << 20});
    return child && (*child)->put(k_ns, std::vector{make_entry("big", 4 << 20)}).has_value() ? 0 : 1;
  });
  REQUIRE(status == 0);
  CHECK(get(*store, "big") == make_entry("big", 4 << 20));
  put_ok(*store, {make_entry("after", 1 << 20)});  // writes use the adopted size
  CHECK(get(*store, "after").has_value());
}

TEST_CASE("lmdb store: reader slots of killed processes never surface as READERS_FULL") {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  constexpr int k_slots = 4;
  // This Store keeps the lock file (and its 4-slot reader table) alive.
  auto store = open_ok(dir, {.max_readers = k_slots});
  put_ok(*store, {make_entry("a", 10)});
  // Each child fills every slot with nested read transactions, checks that
  // one more read is a plain `busy` (the slots are live), and dies holding them.
  for (int i = 0; i < 2; ++i) {
    int status = in_child([&] {
      auto child = open_lmdb_store(dir);
      if (!child) return 1;
      Store& s = **child;
      std::function<Result<void>(int)> nest = [&](int depth) -> Result<void> {
        if (depth == k_slots) {
          auto extra = s.read([](Reader&) -> Result<void> { return {}; });
          ::_exit(!extra && extra.error().category == Category::busy ? 0 : 2);
        }
        return s.read([&](Reader&) { return nest(depth + 1); });
      };
      (void)nest(0);
      return 1;
    });
    REQUIRE(status == 0);
  }
  // Every slot is now held by a dead process: the next read clears them.
  for (int i = 0; i < 3; ++i) CHECK(get(*store, "a").has_value());
}

TEST_CASE("lmdb store: four threads opening one directory and putting overlapping entries") {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "store";
  constexpr int k_threads = 4, k_kernels = 60;
  std::atomic<int> errors{0};
  std::atomic<bool> writing{true};
  // Held open throughout: a read-only Store opened first would make the
  // environment read-only and the writers' opens busy.
  auto keeper = open_ok(dir);
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      auto store = open_lmdb_store(dir);
      if (!store) {
        ++errors;
        return;
      }
      // Every thread writes every kernel, in a different order, one entry per
      // transaction so the writers interleave.
      for (int i = 0; i < k_kernels; ++i) {
        int n = (i * 7 + t * 13) % k_kernels;
        if (!(*store)->put(k_ns, std::vector{make_entry("k" + std::to_string(n), 100 + n)})) ++errors;
      }
    });
  }
  std::thread reader([&] {
    while (writing) {
      auto store = open_lmdb_store(dir, {.read_only = true});
      if (!store) {
        ++errors;
        break;
      }
      auto r = (*store)->read([](Reader& r) { return r.scan(k_ns.name(), [](Entry&&) { return true; }); });
      if (!r) ++errors;
    }
  });
  for (auto& thread : threads) thread.join();
  writing = false;
  reader.join();
  CHECK(errors == 0);

  keeper.reset();
  auto store = open_ok(dir);
  std::vector<std::string> names;
  REQUIRE(store->read([&](Reader& r) {
    return r.scan(k_ns.name(), [&](Entry&& e) {
      CHECK(e == make_entry(e.kernel, e.payload.size()));
      names.push_back(e.kernel);
      return true;
    });
  }));
  CHECK(names.size() == k_kernels);
}

TEST_CASE("lmdb store: a full disk refuses the batch and leaves a usable store (2 MiB tmpfs)") {
  test::TempDir tmp;
  fs::path mount_point = tmp.path() / "fs";
  fs::create_directories(mount_point);
  constexpr int k_skipped = 77;
  // The child mounts a small tmpfs in its own mount namespace (gone when it
  // exits); each failing step has its own exit code.
  int status = in_child([&] {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=2m") != 0)
      return k_skipped;
    fs::path dir = mount_point / "store";
    auto store = open_lmdb_store(dir);  // the default 64 GiB map: only the disk can fill
    if (!store) return 10;
    if (!(*store)->put(k_ns, std::vector{make_entry("a", 1000)})) return 11;
    auto full = (*store)->put(k_ns, std::vector{make_entry("b", 100), make_entry("big", 4 << 20)});
    if (full || full.error().category != Category::store_full) return 12;
    if (!(*store)->put(k_ns, std::vector{make_entry("c", 1000)})) return 13;
    store->reset();
    auto reopened = open_lmdb_store(dir);
    if (!reopened) return 14;
    bool ok = true;
    auto r = (*reopened)->read([&](Reader& reader) -> Result<void> {
      ok = KCACHE_TRY(reader.get(k_ns.name(), "a")) == make_entry("a", 1000) &&
           KCACHE_TRY(reader.get(k_ns.name(), "c")) == make_entry("c", 1000) &&
           !KCACHE_TRY(reader.get(k_ns.name(), "b")).has_value();
      return {};
    });
    return r && ok ? 0 : 15;
  });
  if (status == k_skipped) {
    MESSAGE("skipped: cannot mount a tmpfs here (needs CAP_SYS_ADMIN)");
    return;
  }
  CHECK(status == 0);
}

}  // namespace kcache::store
