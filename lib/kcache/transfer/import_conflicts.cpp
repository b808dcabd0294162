// The conflict rules of import: snapshots of what the store holds of a bundle's kernels, and how each entry fares
// against them (docs/design.md "Import policy").
#include "kcache/transfer/import_internal.hpp"

#include "kcache/bundle/merge.hpp"
#include "kcache/core/key_binding.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>

namespace kcache::transfer {
namespace internal {

/// The stored entries of `ns_name` named by the bundle's index, from one
/// snapshot. A stored record that fails its checks is left out: the store
/// overwrites such a record (it cannot serve anything), so it is no conflict.
Result<StoredEntries> stored_entries(store::Store& store, const std::string& ns_name,
                                     const bundle::BundleHeader& header) {
  StoredEntries out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto& ie : header.index) {
      auto e = r.get(ns_name, ie.kernel);
      if (!e) {
        if (e.error().category == Category::corruption || e.error().category == Category::version_mismatch) continue;
        return tl::unexpected(std::move(e).error());
      }
      if (*e) {
        (*e)->payload = {};
        out.emplace(ie.kernel, std::move(**e));
      }
    }
    return {};
  }));
  return out;
}

/// The conflict rules (docs/design.md "Import policy"): the same key with
/// another product (module bytes, validation, lowered name) or other fields,
/// or another key built before the stored entry.
std::optional<ImportConflict> find_conflict(const Entry& incoming, const StoredFacts& stored) {
  std::optional<ConflictKind> kind;
  std::optional<std::string> difference;
  if (stored.key == incoming.key) {
    if ((difference = product_difference(stored, incoming))) kind = ConflictKind::same_key_other_bytes;
  } else if (incoming.created < stored.created) {
    kind = ConflictKind::older;
    difference = bundle::record_difference(stored, incoming, "the store", "the bundle");
  }
  if (!kind) return std::nullopt;
  return ImportConflict{incoming.kernel,
                        *kind,
                        stored.key,
                        incoming.key,
                        stored.payload_digest,
                        incoming.payload_digest,
                        stored.created,
                        incoming.created,
                        difference.value_or(std::string())};
}

Error conflict_error(const ImportConflict& c) {
  if (c.kind == ConflictKind::same_key_other_bytes)
    return {Category::validation_failed,
            fmt::format("the store has this kernel with the same key ({}) but another build of it ({}: stored "
                        "≠ bundle): a key names exactly one build, so a bundle that changes what stands behind a "
                        "known key is forged or comes from a non-reproducible build, and is not taken silently; "
                        "rebuild it, or pass --replace to take the bundle's entry",
                        c.bundle_key.ir.hex().substr(0, 16), c.difference)};
  return {Category::validation_failed,
          fmt::format("the bundle's entry was built {}, before the stored one built {}, and differs from it ({}): "
                      "importing it would roll the kernel back to an older build; pass --replace to take the "
                      "older entry",
                      util::iso_time(c.bundle_created), util::iso_time(c.stored_created), c.difference)};
}

ImportAction classify(const Entry& incoming, const StoredEntries& stored) {
  auto it = stored.find(incoming.kernel);
  if (it == stored.end()) return ImportAction::imported;
  const auto& s = it->second;
  if (s.key == incoming.key && !product_difference(s, incoming) && s.inputs == incoming.inputs)
    return ImportAction::already_present;
  return ImportAction::replaced;
}

/// Every stored entry of `ns_name` (payloads dropped): a release's conflict
/// snapshot, taken before its sections' heads are read.
Result<StoredEntries> stored_namespace(store::Store& store, const std::string& ns_name) {
  StoredEntries out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto& rec : KCACHE_TRY(r.namespace_records()))
      if (rec.ns.name() == ns_name)
        return r.scan(ns_name, [&](Entry&& e) {
          e.payload = {};
          out.emplace(e.kernel, std::move(e));
          return true;
        });
    return {};
  }));
  return out;
}

}  // namespace internal

std::string_view import_action_name(ImportAction a) {
  switch (a) {
    case ImportAction::imported: return "imported";
    case ImportAction::already_present: return "already_present";
    case ImportAction::replaced: return "replaced";
    case ImportAction::refused: return "refused";
  }
  return "?";
}

std::string_view conflict_kind_name(ConflictKind k) {
  switch (k) {
    case ConflictKind::same_key_other_bytes: return "same_key_other_bytes";
    case ConflictKind::older: return "older";
  }
  return "?";
}

}  // namespace kcache::transfer
