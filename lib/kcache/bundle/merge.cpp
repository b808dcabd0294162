#include "kcache/bundle/merge.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace kcache::bundle {

Result<MergeResult> merge_bundles(const std::vector<BundleStream>& inputs, const BundleStream& out,
                                  const WriteOptions& options, std::uint64_t created) {
  if (inputs.empty()) return fail(Category::invalid_argument, "merge needs at least one input bundle");
  for (const auto& in : inputs)
    if (in.fd >= 0)
      return fail(Category::invalid_argument, "merge reads its inputs twice: give files, not {}", in.label());
  MergeResult result;
  result.inputs = inputs.size();

  // Pass 1: heads only. Namespaces must agree; the merged index takes each
  // kernel from the first bundle that has it.
  struct Source {
    std::size_t bundle;
    std::size_t position;  ///< in that bundle's index
  };
  std::vector<BundleHeader> heads;
  std::map<std::string, Source, std::less<>> first;
  std::vector<Source> order;
  // Same kernel and key but another record digest: equal only if the
  // payloads are (created time and origin may differ); decided in pass 2.
  std::vector<std::pair<Source, Source>> compare;
  for (std::size_t b = 0; b < inputs.size(); ++b) {
    auto reader = KCACHE_TRY(open_stream(inputs[b], {}));
    heads.push_back(reader.header());
    const auto& h = heads.back();
    if (b > 0 && !(h.ns == heads.front().ns)) {
      auto diffs = diff_fingerprints(heads.front().ns.record, h.ns.record);
      if (h.ns.backend != heads.front().ns.backend)
        diffs.insert(diffs.begin(), {"backend", heads.front().ns.backend, h.ns.backend});
      return fail(Category::fingerprint_mismatch, "cannot merge {} ({}) with {} ({}): {}", inputs[0].label(),
                  heads.front().ns.name(), inputs[b].label(), h.ns.name(), describe_differences(diffs));
    }
    for (std::size_t i = 0; i < h.index.size(); ++i) {
      const auto& ie = h.index[i];
      auto [it, fresh] = first.try_emplace(ie.kernel, Source{b, i});
      if (fresh) {
        order.push_back({b, i});
        continue;
      }
      const auto& kept = heads[it->second.bundle].index[it->second.position];
      if (kept.key != ie.key) {
        result.conflicts.push_back(
            {ie.kernel, inputs[it->second.bundle].label(), inputs[b].label(), kept.key, ie.key, false});
      } else if (kept.digest == ie.digest) {
        ++result.duplicates;
      } else {
        compare.push_back({it->second, {b, i}});
      }
    }
  }
  result.ns = heads.front().ns;

  // Pass 2: read every input completely (digests, trailer) and collect the
  // payload digests that pass 1 could not decide.
  std::set<std::pair<std::size_t, std::size_t>> wanted;
  for (const auto& [a, b] : compare) wanted.insert({a.bundle, a.position}), wanted.insert({b.bundle, b.position});
  std::map<std::pair<std::size_t, std::size_t>, Hash128> payload_digest;
  for (std::size_t b = 0; b < inputs.size(); ++b) {
    auto reader = KCACHE_TRY(open_stream(inputs[b], {}));
    for (std::size_t i = 0;; ++i) {
      auto e = KCACHE_TRY(in_context(reader.next(), inputs[b].label()));
      if (!e) break;
      if (wanted.contains({b, i})) payload_digest[{b, i}] = e->payload_digest;
    }
    KCACHE_CHECK(in_context(reader.finish(), inputs[b].label()));
  }
  for (const auto& [a, b] : compare) {
    if (payload_digest[{a.bundle, a.position}] == payload_digest[{b.bundle, b.position}]) {
      ++result.duplicates;
      continue;
    }
    const auto& ie = heads[a.bundle].index[a.position];
    result.conflicts.push_back({ie.kernel, inputs[a.bundle].label(), inputs[b.bundle].label(), ie.key, ie.key, true});
  }
  if (!result.conflicts.empty()) return result;

  // Pass 3: write, pulling each kept entry from its bundle in order.
  BundleHeader header;
  header.ns = result.ns;
  header.tool_versions = heads.front().tool_versions;
  header.created = created;
  for (const auto& s : order) header.index.push_back(heads[s.bundle].index[s.position]);
  result.entries = header.index.size();
  std::optional<BundleReader> current;
  std::size_t current_bundle = 0, next_position = 0;
  EntrySource source = [&](std::size_t k) -> Result<Entry> {
    const Source& s = order[k];
    if (!current || current_bundle != s.bundle) {
      current.emplace(KCACHE_TRY(open_stream(inputs[s.bundle], {})));
      if (!(current->header() == heads[s.bundle]))
        return fail(Category::corruption, "{} changed while it was being merged", inputs[s.bundle].label());
      current_bundle = s.bundle;
      next_position = 0;
    }
    for (;;) {
      auto e = KCACHE_TRY(in_context(current->next(), inputs[s.bundle].label()));
      if (!e) return fail(Category::corruption, "{} ended early while it was being merged", inputs[s.bundle].label());
      if (next_position++ == s.position) return std::move(*e);
    }
  };
  KCACHE_CHECK(write_stream(out, header, source, options));
  if (options.sign) result.signer = key_id(options.sign->public_key);
  result.bundle_bytes = written_size(out);
  return result;
}

}  // namespace kcache::bundle
