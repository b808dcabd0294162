// A secondary tier behind the local store (docs/design.md "Remote caches"):
// what a build asks on a local miss before compiling, and tells after it
// compiled. build defines the interface and knows nothing of networks; the
// remote module implements it (hiredis, libcurl) and the CLI passes it in,
// so the arrows stay one way.
//
// Thread-safety: fetch() and publish() are called from build's compile
// threads (and the device stage's fetch threads) at once; an implementation
// must allow that.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::engine {

/// What one secondary store (one remote) did during a run, for the summary,
/// --json and the run log. Counts are per request, not per kernel.
struct SecondaryStats {
  std::string name;                 ///< the remote as shown to users (no password)
  bool writable = false;            ///< compiled kernels are written back to it
  bool authenticated = false;       ///< values were accepted only when signed by a trusted key
  std::size_t hits = 0;             ///< values found, checked and handed to the build
  std::size_t misses = 0;           ///< the remote has no value for the key
  std::size_t refused = 0;          ///< values found but damaged, foreign or untrusted
  std::size_t errors = 0;           ///< failed requests (connection, timeout, server error)
  std::size_t writes = 0;           ///< values written back
  std::uint64_t bytes_read = 0;     ///< value bytes received
  std::uint64_t bytes_written = 0;  ///< value bytes sent
  /// Set when the remote was given up for the rest of the run after
  /// consecutive failures: the last failure, in words.
  std::string skipped;
  /// "kernel: reason" of refused values, and failure warnings, each list
  /// bounded (the counts above are complete).
  std::vector<std::string> refusals;
  std::vector<std::string> warnings;
};

/// A check a stage adds to a fetched entry after the import's own (the device
/// stage: the pipeline was built from this build's module, entry point and
/// specialization); a failure refuses the value like any other refusal.
using EntryCheck = std::function<Result<void>(const Entry&)>;

/// A store consulted after the local one. Never fails a build: every fault is
/// counted in stats() and answered as a miss.
class SecondaryTier {
 public:
  virtual ~SecondaryTier() = default;
  /// An entry of `ns` for `kernel` whose key is exactly `key`, checked as an
  /// import checks an entry (record digest and fields, SPIR-V validated or
  /// blob checked for `ns`) and by `check` when given, or nullopt (miss,
  /// refusal or failure, counted).
  virtual std::optional<Entry> fetch(const Namespace& ns, std::string_view kernel, const Key& key,
                                     const EntryCheck& check) = 0;
  /// Offers a freshly compiled entry of `ns` to the writable remotes, and
  /// when `direct` is given under it too, as publish_direct() does: one value
  /// encoded (and signed) once for both.
  virtual void publish(const Namespace& ns, const Entry& entry,
                       const std::optional<Hash128>& direct = std::nullopt) = 0;
  /// Direct mode through remotes (docs/design.md "Remote caches"): an entry
  /// of `ns` for `kernel` filed under `direct` (direct_key() of the kernel's
  /// id and toolchain, known before any preprocessing), whose key's id half
  /// is `id`, checked as fetch() checks a value and then by `check` (the
  /// engine's: its recorded inputs are this checkout's files). Asked only of
  /// remotes whose values must be signed by a trusted key: a value's
  /// recorded inputs are believed only where a trusted signer vouches that
  /// they gave its key. nullopt: none, or none such (counted).
  virtual std::optional<Entry> fetch_direct(const Namespace& ns, std::string_view kernel, const Hash128& id,
                                            const Hash128& direct, const EntryCheck& check) = 0;
  /// Offers `entry`, whose key this process computed from its recorded
  /// inputs, to the writable remotes under `direct`; written only when
  /// values are signed (an unsigned one would never be read).
  virtual void publish_direct(const Namespace& ns, const Entry& entry, const Hash128& direct) = 0;
  /// What each remote did so far, in the order asked.
  virtual std::vector<SecondaryStats> stats() const = 0;
};

}  // namespace kcache::engine
