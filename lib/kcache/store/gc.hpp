// Garbage collection rules for `kcache gc`: which entries to remove, decided
// from facts the caller gathered (a store scan plus, with a manifest, each
// entry's fresh/stale/orphan state). Pure planning: removing is the store's
// remove_unchanged, so a plan made from one snapshot never deletes an entry
// a concurrent build rewrote meanwhile; and it keeps whatever a running
// build may have written or read since it started (GcRules::leased_since).
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::store {

/// One stored entry as gc sees it.
struct GcCandidate {
  std::string ns;
  std::string kernel;
  Key key;
  std::uint64_t created = 0;
  std::uint64_t last_used = 0;  ///< usage's last_used, else created
  std::uint64_t bytes = 0;      ///< key + record: what removing it frees
  bool fresh = false;           ///< the given manifest still uses it, fresh: protected
  bool stale = false;           ///< can never hit again (manifest says stale, or another toolchain)
  bool orphan = false;          ///< the given manifest no longer has it
  /// A failure record (core/failure.hpp), not an entry: the same rules
  /// apply (stale: the next build compiles again anyway; orphan; age), and
  /// it is removed with Store::remove_failures. last_used = created.
  bool failure = false;
};

/// Which rules apply; an entry goes when any selected rule matches it.
struct GcRules {
  bool stale = false;
  bool orphans = false;
  std::optional<std::uint64_t> older_than;  ///< seconds since created
  std::optional<std::uint64_t> unused_for;  ///< seconds since last used
  /// After the rules above, evict least recently used entries until the
  /// scope's entries total at most this many bytes.
  std::optional<std::uint64_t> max_size;
  std::optional<std::string> ns;  ///< only entries of this namespace are considered
  bool include_fresh = false;     ///< also remove entries marked fresh
  std::uint64_t now = 0;          ///< unix seconds
  /// The start of the oldest running build but the caller's
  /// (Store::oldest_lease): an entry or failure record created or last used
  /// at or after it is kept whatever the rules say (include_fresh too),
  /// since that build may have written or read it. nullopt: none running.
  std::optional<std::uint64_t> leased_since;
};

/// Why an entry is removed. The names are persisted in gc --json.
enum class GcReason { stale, orphan, older_than, unused_for, max_size };
std::string_view gc_reason_name(GcReason r);

struct GcVictim {
  std::size_t index;  ///< into the candidates
  GcReason reason;    ///< the first matching rule, in the order above
};

struct GcPlan {
  std::vector<GcVictim> remove;          ///< in candidate order, then eviction order for max_size
  std::uint64_t scope_bytes_before = 0;  ///< bytes of the entries in scope
  std::uint64_t scope_bytes_after = 0;
  std::size_t scope_entries = 0;
  /// Fresh entries a rule matched but that were kept (no include_fresh).
  std::size_t kept_fresh = 0;
  /// Entries a rule matched but that were kept because a running build may
  /// use them (GcRules::leased_since).
  std::size_t kept_leased = 0;
  /// False when max_size could not be reached without removing fresh entries
  /// or those of a running build.
  bool max_size_reached = true;
};

/// Plans a collection over `candidates`.
GcPlan plan_gc(std::span<const GcCandidate> candidates, const GcRules& rules);

}  // namespace kcache::store
