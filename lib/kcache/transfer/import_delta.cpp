// What a delta bundle removes from a store: the store must hold its base, and only the base's own builds go.
#include "kcache/transfer/import_internal.hpp"

#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

namespace kcache::transfer {
namespace {

/// Up to five names quoted, and how many more: "'a', 'b' and 3 more".
std::string some_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 5; ++i)
    out += fmt::format("{}'{}'", i ? ", " : "", util::shown_untrusted(names[i]));
  if (names.size() > 5) out += fmt::format(" and {} more", names.size() - 5);
  return out;
}

}  // namespace

namespace internal {

/// What the store holds of the kernels a delta keeps and removes, from one
/// snapshot. A stored record that fails its checks is an error (corruption):
/// a delta is not applied over a damaged store.
Result<HeldEntries> held_entries(store::Store& store, const std::string& ns_name, const bundle::DeltaBase& d) {
  HeldEntries out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto* list : {&d.kept, &d.removed})
      for (const auto& k : *list)
        if (auto e = KCACHE_TRY(r.get(ns_name, k))) out.emplace(k, HeldEntry{e->key, e->created});
    return {};
  }));
  return out;
}

}  // namespace internal

Result<DeltaPlan> plan_delta(const bundle::BundleHeader& header, const HeldEntries& held,
                             const DeltaAuthority& authority, std::string_view label) {
  if (!header.delta) return fail(Category::invalid_argument, "{} is not a delta bundle", label);
  const bundle::DeltaBase& d = *header.delta;
  // Version 6 on: the delta records BASE's keys of what it removes.
  const bool keyed = bundle::format_traits(header.format_version).value_or(bundle::FormatTraits{}).delta_base_keys;
  if (keyed && (d.kept_tags.size() != d.kept.size() || d.removed_keys.size() != d.removed.size()))
    return fail(Category::invalid_argument, "{}: a format-6 delta without a tag per kept and a key per removed kernel",
                label);
  // BASE as a refusal names it: its file name (format 6) and digest.
  const std::string base = fmt::format(
      "{} is a delta on {}(BLAKE2b {}...)", label,
      d.base_name.empty() ? std::string("the bundle ") : fmt::format("'{}' ", util::shown_untrusted(d.base_name)),
      d.base_digest.hex().substr(0, 16));

  // The store must hold what it keeps of BASE exactly: same kernels, same keys.
  std::vector<std::string> missing;
  std::vector<std::pair<std::string, Key>> pairs;
  for (const auto& k : d.kept) {
    auto it = held.find(k);
    if (it == held.end()) missing.push_back(k);
    else pairs.emplace_back(k, it->second.key);
  }
  if (!missing.empty())
    return fail(Category::not_found,
                "{}; the store lacks {} of the {} entries of it the delta keeps: {}: import that bundle first, then "
                "this delta",
                base, missing.size(), d.kept.size(), some_names(missing));
  if (bundle::kept_entries_digest(pairs) != d.kept_digest) {
    std::vector<std::string> differ;
    if (keyed)
      for (std::size_t i = 0; i < pairs.size(); ++i)
        if (bundle::kept_entry_tag(pairs[i].first, pairs[i].second) != d.kept_tags[i]) differ.push_back(pairs[i].first);
    return fail(Category::fingerprint_mismatch,
                "{}; the store holds the {} kernels of it the delta keeps, but not all as that bundle built them: "
                "{}: this store does not hold that bundle; import it first, or import a whole bundle",
                base, d.kept.size(),
                !differ.empty() ? fmt::format("{} under other keys", some_names(differ))
                : keyed         ? std::string("its kept tags do not say which")
                                : std::string("a format-5 delta cannot say which"));
  }

  // A removal takes only BASE's own build of a kernel: the key a format-6
  // delta records for it. A format-5 delta records none; it is taken only
  // for an entry built no later than the delta was written, never a later
  // build it cannot have seen.
  DeltaPlan plan;
  for (std::size_t i = 0; i < d.removed.size(); ++i) {
    auto it = held.find(d.removed[i]);
    if (it == held.end()) continue;
    const bool bases = keyed ? it->second.key == d.removed_keys[i] : it->second.created <= header.created;
    (bases ? plan.remove : plan.not_removed).push_back(d.removed[i]);
  }
  if (plan.remove.empty()) return plan;
  // Removing is never a bundle's own say: anyone can write a delta that
  // lists a whole namespace.
  if (!keyed && !authority.replace)
    return fail(Category::validation_failed,
                "{}; it would remove {} entries of the store ({}), but a format-5 delta records no keys for what it "
                "removes, so it cannot show they are that bundle's builds: nothing was written; pass --replace to "
                "remove them anyway (never an entry built after the delta was written)",
                base, plan.remove.size(), some_names(plan.remove));
  if (!authority.replace && !authority.trusted)
    return fail(Category::validation_failed,
                "{}; it would remove {} entries of the store ({}), and removing needs a delta signed by a key you "
                "--trust, or --replace: nothing was written",
                base, plan.remove.size(), some_names(plan.remove));
  return plan;
}

}  // namespace kcache::transfer
