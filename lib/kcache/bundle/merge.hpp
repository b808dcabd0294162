// `kcache merge`: joins bundles of one namespace (shard exports) into one,
// streaming entries from reader to writer. Thread-safety: each call is
// independent.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/bundle/stream.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::bundle {

/// What differs between two records of one kernel, named field by field and
/// never the same value twice: each id field (e.g. "id field source is
/// 'a.comp' in A but 'b.comp' in B", "id field x only in A"), then ir fields,
/// recorded inputs and the payload bytes (by digest), at most `max_items` (then "and N
/// more differences"); "; "-separated. When the records agree on all of
/// that, the key halves that differ. Empty only for two records of the same
/// key, fields, inputs and payload. Values are escaped and cut
/// (util::shown_untrusted); `a_name`, `b_name` are the labels used.
std::string record_difference(const Entry& a, const Entry& b, std::string_view a_name, std::string_view b_name,
                              std::size_t max_items = 3);

/// One kernel that two merged bundles disagree on.
struct MergeConflict {
  std::string kernel;
  std::string first_bundle, second_bundle;  ///< labels
  Key first_key, second_key;
  bool same_key = false;  ///< same key, different payload: a non-reproducible build
  /// record_difference(first, second): the fields that differ.
  std::string difference;
};

struct MergeResult {
  Namespace ns;
  std::size_t inputs = 0;
  std::size_t entries = 0;               ///< in the merged bundle
  std::size_t duplicates = 0;            ///< identical entries dropped (same kernel, key and payload)
  std::vector<MergeConflict> conflicts;  ///< non-empty: nothing was written
  std::uint64_t bundle_bytes = 0;
  std::optional<KeyId> signer;
};

/// Joins bundles of one namespace into `out`, deduplicating by kernel and
/// key: the same kernel with the same key and payload is kept once (first
/// bundle wins; its created time and origin stay); the same kernel with
/// another key, or the same key with another payload, is a conflict, listed
/// in the result, and then nothing is written. Every input is checked
/// completely (digests, trailer) while streaming. `created` (unix seconds)
/// is the merged bundle's creation time. The merged bundle lists its
/// entries in kernel-name order, as export writes a namespace, so merged
/// shards are the size of one export of the same entries; every input has a
/// reader open while it is written (FORMAT.md "Memory"). Errors: not_found / corruption /
/// version_mismatch for an input, fingerprint_mismatch (naming the fields and
/// the two bundles) when the inputs' namespaces differ, invalid_argument for
/// no inputs or an fd input (merge reads each input twice).
Result<MergeResult> merge_bundles(const std::vector<BundleStream>& inputs, const BundleStream& out,
                                  const WriteOptions& options, std::uint64_t created);

}  // namespace kcache::bundle
