// The store: entries by namespace and kernel name. One interface, two
// implementations (LMDB for real use, memory for unit tests), so tests can
// swap one for the other or for a failing one (STYLE.md "Layout"). The
// on-disk layout (databases, keys, records) is specified in layout_internal.hpp.
//
// Thread-safety: a Store may be shared by threads; each read() runs in its
// own snapshot and writes are serialised (LMDB's writer lock, across
// processes too). A Reader is valid only inside the read() callback that
// handed it out, on that thread.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/core/error.hpp"
#include "kcache/core/namespace.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::store {

/// LMDB's compiled-in key limit. An entry's key is the namespace name, one
/// separator byte and the kernel name; put refuses longer keys with
/// invalid_argument before writing anything.
inline constexpr std::size_t k_max_key_bytes = 511;

/// What a store holds for one namespace.
struct NamespaceInfo {
  Namespace ns;             ///< with its full fingerprint record
  std::uint64_t entries = 0;
  std::uint64_t payload_bytes = 0;
};

/// Read access inside one snapshot.
class Reader {
 public:
  virtual ~Reader() = default;
  /// The entry for `kernel` in namespace `ns_name` ("spirv/vulkan1.2"), or
  /// nullopt. corruption when the stored record fails its checks;
  /// invalid_argument for a malformed namespace or a name no key can hold.
  virtual Result<std::optional<Entry>> get(std::string_view ns_name, std::string_view kernel) = 0;
  /// Visits every entry of `ns_name` in kernel-name order; stops early when
  /// `visit` returns false. A corrupt record is returned as an error.
  virtual Result<void> scan(std::string_view ns_name, const std::function<bool(Entry&&)>& visit) = 0;
  /// Every namespace with counts.
  virtual Result<std::vector<NamespaceInfo>> namespaces() = 0;
};

/// Counts from one write transaction.
struct PutSummary {
  std::size_t written = 0;          ///< new entries
  std::size_t replaced = 0;         ///< an entry of that name existed with another key or bytes
  std::size_t already_present = 0;  ///< an identical entry (same key and payload) was there
};

class Store {
 public:
  virtual ~Store() = default;

  /// Runs `fn` with a reader over one consistent snapshot.
  virtual Result<void> read(const std::function<Result<void>(Reader&)>& fn) = 0;

  /// Writes `entries` into `ns` in one transaction: all of them or none.
  /// Records `ns`'s fingerprint record if new. read_only on a read-only
  /// store; store_full when the map or disk is full; invalid_argument for an
  /// empty or too-long kernel name or an oversized payload (nothing written).
  virtual Result<PutSummary> put(const Namespace& ns, std::span<const Entry> entries) = 0;

  /// Removes the named kernels of `ns_name` in one transaction; returns how
  /// many existed. Removing a namespace's last entry keeps its record.
  virtual Result<std::size_t> remove(std::string_view ns_name, std::span<const std::string> kernels) = 0;

  /// An id that changes with every committed write transaction ("store
  /// unchanged" = same id before and after).
  virtual Result<std::uint64_t> last_transaction_id() = 0;

  virtual bool read_only() const = 0;
};

struct OpenOptions {
  /// Open without writing the data file (put/remove return read_only). The
  /// lock file gets this process's reader slot when it is writable (so
  /// concurrent writers keep our snapshot intact); when it is not, the store
  /// is opened without it and no file is touched at all.
  bool read_only = false;
  /// Map size for a new or existing environment. Large and sparse: LMDB only
  /// uses the disk it needs, and growing the map under other processes is fragile.
  std::uint64_t map_size = std::uint64_t{64} << 30;
  unsigned max_readers = 1024;
};

/// Opens (creating if needed, unless read-only) the LMDB store in `dir`.
/// Errors: io_error (permissions, not a directory), corruption (not an LMDB
/// store), read_only when `dir` is not writable and read_only was not asked,
/// not_found when read-only and there is no store, version_mismatch for a
/// newer store layout, busy when this process already holds `dir` open
/// read-only and a writable open is asked. Clears stale reader slots on open.
/// Opening one directory again in the same process shares its environment
/// (LMDB allows one per process); the first open's map size and reader
/// count apply.
Result<std::unique_ptr<Store>> open_lmdb_store(const std::filesystem::path& dir, const OpenOptions& options = {});

/// The LMDB library's version string, for `kcache --version`.
std::string lmdb_version();

/// A store held in memory, for unit tests.
std::unique_ptr<Store> make_memory_store();

/// Where the store lives when --store is not given: $KCACHE_STORE, else
/// $XDG_CACHE_HOME/kcache, else $HOME/.cache/kcache, else ./.kcache. Empty
/// variables count as unset, and a relative $XDG_CACHE_HOME is ignored (as
/// the XDG spec says).
std::filesystem::path default_store_dir();

}  // namespace kcache::store
