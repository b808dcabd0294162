// Opening one LMDB environment: creating it with the flags kcache relies on,
// and opening (creating, upgrading) the store's named databases. Sharing an
// environment between the Stores of one process is lmdb_env_registry.cpp.
//
// - MDB_NOTLS: read transactions are not tied to threads, so a Store can be
//   used from any thread. No MDB_WRITEMAP: a full disk must be an error, not
//   SIGBUS. An explicit, large, sparse map size; stale reader slots are
//   cleared on open and again (once) when the reader table is full
//   (lmdb_txn.cpp).
// - Before LMDB touches lock.mdb, the open takes kcache.lock shared (a running
//   compaction must finish first) and reserves the lock file's disk blocks
//   (lmdb_lock_file.cpp).
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/lmdb_env_internal.hpp"
#include "kcache/util/bytes.hpp"
#include "kcache/util/text.hpp"

#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kcache::store::internal {
namespace {

constexpr unsigned k_max_dbs = 8;  // six used; room for later databases

tl::unexpected<Error> env_open_error(const fs::path& dir, const EnvConfig& config, int rc) {
  switch (rc) {
    case MDB_INVALID:
      return fail(Category::corruption,
                  "store {}: data.mdb is not an LMDB store ({}); kcache leaves it alone: move it away or use "
                  "another --store directory",
                  dir.string(), mdb_strerror(rc));
    case MDB_VERSION_MISMATCH:
      return fail(Category::corruption, "store {}: data.mdb was written by an incompatible LMDB version ({})",
                  dir.string(), mdb_strerror(rc));
    case EACCES:
    case EPERM:
    case EROFS:
      if (!config.read_only)
        return fail(Category::read_only, "store {} is not writable ({}); pass --read-only to inspect it", dir.string(),
                    mdb_strerror(rc));
      return fail(Category::io_error, "store {}: cannot open: {}", dir.string(), mdb_strerror(rc));
    case ENOENT: return fail(Category::not_found, "no store at {} ({})", dir.string(), mdb_strerror(rc));
    default: return lmdb_fail(dir, "open", rc);
  }
}

}  // namespace

namespace {

// LMDB 0.9's on-disk layout, as far as the check below reads it (lmdb's
// mdb.c: MDB_page, MDB_meta, MDB_db, MDB_node; version 1 of the data file).
constexpr std::size_t k_page_header = 16;               // pgno(8) pad(2) flags(2) lower(2) upper(2)
constexpr std::size_t k_meta_dbs = k_page_header + 24;  // after magic(4) version(4) address(8) mapsize(8)
constexpr std::size_t k_db_size = 48;                   // pad(4) flags(2) depth(2) 4 counts(8 each) root(8)
constexpr std::size_t k_db_root = 40;
constexpr std::size_t k_meta_txnid = k_meta_dbs + 2 * k_db_size + 8;  // after last_pg(8)
constexpr std::uint32_t k_meta_magic = 0xBEEFC0DE;
constexpr std::uint16_t k_page_leaf = 0x02, k_node_subdata = 0x02;
constexpr std::uint64_t k_no_page = ~std::uint64_t{0};

template <typename T>
T load(const std::string& page, std::size_t at) {
  T v{};
  if (at + sizeof v <= page.size()) std::memcpy(&v, page.data() + at, sizeof v);
  return v;
}

/// Page `pgno` of data.mdb read with pread (never through the map, so a page
/// past the end is a short read, not SIGBUS); empty when it is not there.
std::string read_page(int fd, std::uint64_t pgno, std::uint32_t psize) {
  std::string page(psize, '\0');
  const ssize_t n = ::pread(fd, page.data(), psize, static_cast<off_t>(pgno * psize));
  return n == static_cast<ssize_t>(psize) ? page : std::string();
}

constexpr std::size_t k_meta_last_pg = k_meta_dbs + 2 * k_db_size;  // after the free and main trees' MDB_db
constexpr std::uint16_t k_page_branch = 0x01, k_node_bigdata = 0x01;
constexpr std::size_t k_node_header = 8;  // lo(2) hi(2) flags(2) ksize(2)
// A free list bigger than this is not read (the check then cannot tell, and
// lets the store open as before): a real one is a few pages.
constexpr std::size_t k_max_free_tree_pages = 1u << 16;
constexpr std::uint64_t k_max_free_list_bytes = 64u << 20;

/// What the truncation check found: nothing, or the first page it needs
/// that lies past the end of the file, and what that page is.
struct Missing {
  std::uint64_t pgno = 0;
  std::string what;
};

/// The pages at or past `file_pages` that the free-page tree rooted at
/// `root` lists as free, read with pread. nullopt when the tree cannot be
/// read as one (damaged, or too big): then nothing is concluded from it.
/// A page of the tree itself past the end is `missing`.
std::optional<std::vector<std::uint64_t>> free_pages_past(int fd, std::uint64_t root, std::uint32_t psize,
                                                          std::uint64_t file_pages, std::optional<Missing>& missing) {
  std::vector<std::uint64_t> out, todo;
  if (root != k_no_page) todo.push_back(root);
  std::size_t visited = 0;
  while (!todo.empty()) {
    const std::uint64_t pgno = todo.back();
    todo.pop_back();
    if (++visited > k_max_free_tree_pages) return std::nullopt;
    if (pgno >= file_pages) {
      missing = Missing{pgno, "a page of the free-page tree"};
      return out;
    }
    const std::string page = read_page(fd, pgno, psize);
    if (page.empty()) return std::nullopt;
    const auto flags = load<std::uint16_t>(page, 10);
    const auto lower = load<std::uint16_t>(page, 12);
    if (lower < k_page_header || lower > psize) return std::nullopt;
    const std::size_t nodes = (lower - k_page_header) / 2;
    for (std::size_t i = 0; i < nodes; ++i) {
      const std::size_t node = load<std::uint16_t>(page, k_page_header + 2 * i);
      if (node < k_page_header || node + k_node_header > page.size()) return std::nullopt;
      const auto lo = load<std::uint16_t>(page, node), hi = load<std::uint16_t>(page, node + 2);
      const auto node_flags = load<std::uint16_t>(page, node + 4);
      const auto key_size = load<std::uint16_t>(page, node + 6);
      if (flags & k_page_branch) {  // a child page number in lo, hi and flags (48 bits)
        todo.push_back(lo | std::uint64_t{hi} << 16 | std::uint64_t{node_flags} << 32);
        continue;
      }
      if (!(flags & k_page_leaf)) return std::nullopt;
      // A leaf node: key = a transaction id, data = the pages it freed (an
      // MDB_IDL: a count, then the page numbers), inline or in overflow pages.
      const std::uint64_t size = lo | std::uint64_t{hi} << 16;
      const std::size_t data = node + k_node_header + key_size;
      std::string list;
      if (node_flags & k_node_bigdata) {
        const auto first = load<std::uint64_t>(page, data);
        const std::uint64_t pages = (k_page_header - 1 + size) / psize + 1;  // LMDB's OVPAGES
        if (size > k_max_free_list_bytes || data + 8 > page.size()) return std::nullopt;
        if (first >= file_pages || pages > file_pages - first) {
          missing = Missing{std::max(first, file_pages), "an overflow page of the free-page tree"};
          return out;
        }
        list.resize(size);
        if (::pread(fd, list.data(), size, static_cast<off_t>(first * psize + k_page_header)) !=
            static_cast<ssize_t>(size))
          return std::nullopt;
      } else {
        if (data + size > page.size()) return std::nullopt;
        list = page.substr(data, size);
      }
      const auto count = load<std::uint64_t>(list, 0);
      if (list.size() < 8 || count > list.size() / 8 - 1) return std::nullopt;
      for (std::uint64_t j = 1; j <= count; ++j)
        if (auto free = load<std::uint64_t>(list, 8 * j); free >= file_pages) out.push_back(free);
    }
  }
  return out;
}

/// One pass of check_file_length over the newest meta page, `txnid`'s.
std::optional<Missing> find_missing_page(int fd, std::uint64_t txnid, std::uint32_t psize, std::uint64_t file_pages) {
  std::string meta;
  for (std::uint64_t pgno : {0, 1}) {
    std::string page = read_page(fd, pgno, psize);
    if (load<std::uint32_t>(page, k_page_header) == k_meta_magic && load<std::uint64_t>(page, k_meta_txnid) == txnid)
      meta = std::move(page);
  }
  if (meta.empty()) return std::nullopt;  // a writer committed in between: its pages precede its meta
  const std::uint64_t free_root = load<std::uint64_t>(meta, k_meta_dbs + k_db_root);
  const std::uint64_t main_root = load<std::uint64_t>(meta, k_meta_dbs + k_db_size + k_db_root);
  for (const auto& [pgno, what] :
       {std::pair{free_root, "the free-page tree's root"}, std::pair{main_root, "the main tree's root"}})
    if (pgno != k_no_page && pgno >= file_pages) return Missing{pgno, what};
  // The main tree holds one node per named database; its root is a leaf
  // whose nodes carry each database's record, root included.
  if (main_root != k_no_page) {
    const std::string page = read_page(fd, main_root, psize);
    if (!page.empty() && (load<std::uint16_t>(page, 10) & k_page_leaf)) {
      const auto lower = load<std::uint16_t>(page, 12);
      for (std::size_t i = 0; k_page_header + 2 * i + 2 <= lower && k_page_header + 2 * i + 2 <= page.size(); ++i) {
        const std::size_t node = load<std::uint16_t>(page, k_page_header + 2 * i);
        const auto flags = load<std::uint16_t>(page, node + 4);
        const auto key_size = load<std::uint16_t>(page, node + 6);
        if (!(flags & k_node_subdata)) continue;
        const std::uint64_t root = load<std::uint64_t>(page, node + 8 + key_size + k_db_root);
        if (root != k_no_page && root >= file_pages)
          return Missing{root, fmt::format("database '{}''s root", util::escape_untrusted(page.substr(
                                                                       std::min(node + 8, page.size()), key_size)))};
      }
    }
  }
  // Every page up to the meta's last one is either in use or free. One in
  // use past the end is SIGBUS when read; one that is free may lie past the
  // end legitimately (a page allocated and freed in one transaction is never
  // written) and is harmless. So the pages past the end must all be free.
  const std::uint64_t last_pg = load<std::uint64_t>(meta, k_meta_last_pg);
  if (last_pg < file_pages) return std::nullopt;
  std::optional<Missing> missing;
  auto free = free_pages_past(fd, free_root, psize, file_pages, missing);
  if (missing) return missing;
  if (!free) return std::nullopt;
  std::sort(free->begin(), free->end());
  free->erase(std::unique(free->begin(), free->end()), free->end());
  std::uint64_t expect = file_pages;
  for (std::uint64_t pgno : *free) {
    if (pgno > last_pg) break;
    if (pgno != expect) break;
    ++expect;
  }
  if (expect <= last_pg) return Missing{expect, "a page in use (the free list does not list it)"};
  return std::nullopt;
}

}  // namespace

// Why: LMDB maps data.mdb and trusts its meta page, so a page past the end
// of a truncated file (an interrupted copy, a full disk under another tool,
// a cut last page) is SIGBUS on first touch, in every command and in every
// application that calls kcache_lookup. The file's length alone cannot tell:
// LMDB's last page number may lie past the end legitimately (pages allocated
// and freed in one transaction are never written, and they are then in the
// free list). So the check reads, with pread, the newest meta page (the one
// with LMDB's last txnid), refuses the store when a tree root lies past the
// end (the free and main trees' and each named database's), and otherwise
// requires every page from the end of the file up to the meta's last page
// to be listed in the free-page tree (read the same way). A writer that
// commits meanwhile may reuse the pages read; the check then runs again.
Result<void> check_file_length(MDB_env* env, const fs::path& dir) {
  MDB_stat stat{};
  if (int rc = mdb_env_stat(env, &stat); rc != MDB_SUCCESS) return lmdb_fail(dir, "read the environment stats", rc);
  mdb_filehandle_t fd = -1;
  if (int rc = mdb_env_get_fd(env, &fd); rc != MDB_SUCCESS) return lmdb_fail(dir, "get data.mdb's descriptor", rc);
  const std::uint32_t psize = stat.ms_psize;
  for (int attempt = 0;; ++attempt) {
    MDB_envinfo info{};
    if (int rc = mdb_env_info(env, &info); rc != MDB_SUCCESS) return lmdb_fail(dir, "read the environment info", rc);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return os_fail(Category::io_error, dir, "cannot stat data.mdb", errno);
    const std::uint64_t file_pages = static_cast<std::uint64_t>(st.st_size) / psize;
    auto missing = find_missing_page(fd, info.me_last_txnid, psize, file_pages);
    if (!missing) return {};
    MDB_envinfo now{};
    if (int rc = mdb_env_info(env, &now); rc != MDB_SUCCESS) return lmdb_fail(dir, "read the environment info", rc);
    if (now.me_last_txnid != info.me_last_txnid && attempt < 3) continue;
    return fail(Category::corruption,
                "store {} is damaged: data.mdb was truncated ({} bytes, but {} is page {} of {} bytes, past its "
                "end); kcache will not read it: restore it from a copy, re-import its bundles into a new store, or "
                "move the store away and rebuild",
                dir.string(), st.st_size, missing->what, missing->pgno, psize);
  }
}

Result<bool> Env::open_databases(bool create) {
  Txn txn = KCACHE_TRY(Txn::begin(*this, create));
  auto open_dbi = [&](std::string_view name, unsigned flags, MDB_dbi& dbi) -> Result<bool> {
    int rc = mdb_dbi_open(txn.handle(), std::string(name).c_str(), flags, &dbi);
    if (rc == MDB_NOTFOUND) return false;
    if (rc == MDB_INCOMPATIBLE)
      return fail(Category::corruption,
                  "store {} is an LMDB environment but not a kcache store ('{}' is not a database)", m_dir.string(),
                  name);
    if (rc != MDB_SUCCESS) return lmdb_fail(m_dir, fmt::format("open database '{}'", name), rc);
    return true;
  };

  bool have_meta = KCACHE_TRY(open_dbi(internal::k_meta_db, 0, m_meta));
  if (!have_meta) {
    // Creating our databases inside someone else's LMDB environment would
    // mix two programs' data in one file.
    MDB_dbi main_dbi = 0;
    MDB_stat stat{};
    if (int rc = mdb_dbi_open(txn.handle(), nullptr, 0, &main_dbi); rc != MDB_SUCCESS)
      return lmdb_fail(m_dir, "open the main database", rc);
    if (int rc = mdb_stat(txn.handle(), main_dbi, &stat); rc != MDB_SUCCESS)
      return lmdb_fail(m_dir, "read the main database", rc);
    if (stat.ms_entries != 0)
      return fail(Category::corruption,
                  "store {} is an LMDB environment but not a kcache store (it has no 'meta' database); "
                  "kcache leaves it alone: use another --store directory",
                  m_dir.string());
    if (!create) return fail(Category::not_found, "store {} is empty: nothing was ever written to it", m_dir.string());
    KCACHE_CHECK(open_dbi(internal::k_meta_db, MDB_CREATE, m_meta));
  }
  unsigned flags = create ? MDB_CREATE : 0;
  const std::pair<std::string_view, MDB_dbi*> data_dbs[] = {{internal::k_entries_db, &m_entries},
                                                            {internal::k_namespaces_db, &m_namespaces}};
  for (auto [name, dbi] : data_dbs)
    if (!KCACHE_TRY(open_dbi(name, flags, *dbi)))
      return fail(Category::corruption, "store {} is damaged: its '{}' database is missing", m_dir.string(), name);

  auto schema = KCACHE_TRY(txn.get(m_meta, internal::k_schema_key, "the store's layout version"));
  std::string version = schema ? std::string(reinterpret_cast<const char*>(schema->data()), schema->size()) : "";
  if (!schema) {
    if (have_meta)
      return fail(Category::corruption, "store {} is damaged: it records no layout version", m_dir.string());
  } else if (!internal::readable_schema(version)) {
    return fail(Category::version_mismatch,
                "store {} has layout version '{}'; this kcache reads versions {} to {} (a newer kcache wrote it?)",
                m_dir.string(), version, internal::k_schema_min_version, internal::k_schema_version);
  }
  bool current = version == internal::k_schema_version;
  // Read-only or before the upgrade, an older store is read as it is:
  // version 1 has no usage and no run log, versions 1 and 2 no failures.
  const bool lifecycle = create || version != "1";
  const bool failures = create || current;
  const std::pair<std::string_view, MDB_dbi*> lifecycle_dbs[] = {{internal::k_usage_db, &m_usage},
                                                                 {internal::k_runs_db, &m_runs}};
  if (lifecycle)
    for (auto [name, dbi] : lifecycle_dbs)
      if (!KCACHE_TRY(open_dbi(name, flags, *dbi)))
        return fail(Category::corruption, "store {} is damaged: its '{}' database is missing", m_dir.string(), name);
  if (failures && !KCACHE_TRY(open_dbi(internal::k_failures_db, flags, m_failures)))
    return fail(Category::corruption, "store {} is damaged: its '{}' database is missing", m_dir.string(),
                internal::k_failures_db);
  if (!current && !create) {
    KCACHE_CHECK(txn.commit());
    m_has_lifecycle = lifecycle;
    return false;
  }
  if (!current)  // a new store, or the upgrade of an older one (layout_internal.hpp)
    KCACHE_CHECK(txn.put(m_meta, internal::k_schema_key, util::as_bytes(internal::k_schema_version),
                         "the store's layout version"));
  // Committing (a read transaction too) makes the handles usable by later
  // transactions.
  KCACHE_CHECK(txn.commit());
  m_has_lifecycle = true;
  m_has_failures = true;
  return true;
}

Result<std::unique_ptr<Env>> open_env(const fs::path& dir, EnvKey key, const OpenOptions& options,
                                      const EnvConfig& config) {
  MDB_env* raw = nullptr;
  if (int rc = mdb_env_create(&raw); rc != MDB_SUCCESS) return lmdb_fail(dir, "create an environment", rc);
  // From here the Env owns `raw`: LMDB requires mdb_env_close even after a
  // failed mdb_env_open.
  auto env = std::make_unique<Env>(raw, dir, key, config.read_only);
  // Before LMDB touches lock.mdb: a running compaction must finish first.
  if (config.use_lock) env->hold(KCACHE_TRY(internal::StoreLock::shared(dir, internal::k_compaction_wait)));
  if (int rc = mdb_env_set_mapsize(raw, options.map_size); rc != MDB_SUCCESS)
    return lmdb_fail(dir, "set the map size", rc);
  if (int rc = mdb_env_set_maxreaders(raw, options.max_readers); rc != MDB_SUCCESS)
    return lmdb_fail(dir, "set the reader count", rc);
  if (int rc = mdb_env_set_maxdbs(raw, k_max_dbs); rc != MDB_SUCCESS)
    return lmdb_fail(dir, "set the database count", rc);
  if (!config.read_only && config.use_lock) KCACHE_CHECK(reserve_lock_file(dir, options.max_readers));
  unsigned flags = MDB_NOTLS;
  if (config.read_only) flags |= MDB_RDONLY;
  if (!config.use_lock) flags |= MDB_NOLOCK;
  if (int rc = mdb_env_open(raw, dir.c_str(), flags, k_file_mode); rc != MDB_SUCCESS)
    return env_open_error(dir, config, rc);
  // Before anything reads a page of the tree.
  KCACHE_CHECK(check_file_length(raw, dir));
  // Slots of killed readers pin old pages and fill the table (docs/reliability.md).
  KCACHE_CHECK(env->clear_stale_readers());
  auto opened = env->open_databases(false);
  if (!opened) {
    if (opened.error().category != Category::not_found || config.read_only)
      return tl::unexpected(std::move(opened).error());
    KCACHE_CHECK(env->open_databases(true));
  } else if (!*opened && !config.read_only) {
    KCACHE_CHECK(env->open_databases(true));  // upgrade an older store
  }
  return env;
}

}  // namespace kcache::store::internal
