#include "kcache/bundle/merge.hpp"

#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace kcache::bundle {

namespace {

/// Appends to `out` what differs between two field lists of `kind` ("id
/// field", "ir field"), by name.
void field_differences(std::vector<std::string>& out, std::string_view kind, const std::vector<Field>& a,
                       const std::vector<Field>& b, std::string_view a_name, std::string_view b_name) {
  std::map<std::string_view, std::string_view> in_a, in_b;
  for (const auto& [k, v] : a) in_a.emplace(k, v);
  for (const auto& [k, v] : b) in_b.emplace(k, v);
  for (const auto& [k, v] : in_a) {
    auto it = in_b.find(k);
    if (it == in_b.end())
      out.push_back(
          fmt::format("{} {} only in {} ('{}')", kind, util::shown_untrusted(k), a_name, util::shown_untrusted(v)));
    else if (it->second != v)
      out.push_back(fmt::format("{} {} is '{}' in {} but '{}' in {}", kind, util::shown_untrusted(k),
                                util::shown_untrusted(v), a_name, util::shown_untrusted(it->second), b_name));
  }
  for (const auto& [k, v] : in_b)
    if (!in_a.contains(k))
      out.push_back(
          fmt::format("{} {} only in {} ('{}')", kind, util::shown_untrusted(k), b_name, util::shown_untrusted(v)));
  // The same fields in another order hash to another key.
  if (out.empty() && a != b) out.push_back(fmt::format("{}s in another order", kind));
}

}  // namespace

std::string record_difference(const Entry& a, const Entry& b, std::string_view a_name, std::string_view b_name,
                              std::size_t max_items) {
  std::vector<std::string> items;
  field_differences(items, "id field", a.id_fields, b.id_fields, a_name, b_name);
  field_differences(items, "ir field", a.ir_fields, b.ir_fields, a_name, b_name);
  if (a.inputs != b.inputs) {
    std::map<std::string_view, Hash128> in_a, in_b;
    for (const auto& f : a.inputs) in_a.emplace(f.path, f.hash);
    for (const auto& f : b.inputs) in_b.emplace(f.path, f.hash);
    std::size_t before = items.size();
    for (const auto& [path, hash] : in_a) {
      auto it = in_b.find(path);
      if (it == in_b.end()) items.push_back(fmt::format("input {} only in {}", util::shown_untrusted(path), a_name));
      else if (it->second != hash)
        items.push_back(fmt::format("input {} has content {} in {} but {} in {}", util::shown_untrusted(path),
                                    hash.hex().substr(0, 16), a_name, it->second.hex().substr(0, 16), b_name));
    }
    for (const auto& [path, hash] : in_b)
      if (!in_a.contains(path))
        items.push_back(fmt::format("input {} only in {}", util::shown_untrusted(path), b_name));
    if (items.size() == before) items.push_back("the recorded inputs in another order");
  }
  if (a.payload_digest != b.payload_digest || a.payload_kind != b.payload_kind)
    items.push_back(fmt::format("the {} bytes differ (digest {} in {} but {} in {})",
                                a.payload_kind == PayloadKind::spirv ? "module" : "payload",
                                a.payload_digest.hex().substr(0, 16), a_name, b.payload_digest.hex().substr(0, 16),
                                b_name));
  if (items.empty()) {
    if (a.key.id != b.key.id)
      items.push_back(fmt::format("key id {} in {} but {} in {}", a.key.id.hex().substr(0, 16), a_name,
                                  b.key.id.hex().substr(0, 16), b_name));
    if (a.key.ir != b.key.ir)
      items.push_back(fmt::format("key ir {} in {} but {} in {}", a.key.ir.hex().substr(0, 16), a_name,
                                  b.key.ir.hex().substr(0, 16), b_name));
  }
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max_items; ++i) out += (i ? "; " : "") + items[i];
  if (items.size() > max_items) out += fmt::format("; and {} more differences", items.size() - max_items);
  return out;
}

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
  // Another key: a conflict; pass 2 reads both records to say what differs.
  std::vector<std::pair<Source, Source>> differing;
  for (std::size_t b = 0; b < inputs.size(); ++b) {
    auto reader = KCACHE_TRY(open_stream(inputs[b], {}));
    heads.push_back(reader.header());
    const auto& h = heads.back();
    if (h.delta)
      return fail(Category::invalid_argument,
                  "{} is a delta bundle (changes since another bundle): merge whole bundles, or import the delta",
                  inputs[b].label());
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
            {ie.kernel, inputs[it->second.bundle].label(), inputs[b].label(), kept.key, ie.key, false, {}});
        differing.push_back({it->second, {b, i}});
      } else if (kept.digest == ie.digest) {
        ++result.duplicates;
      } else {
        compare.push_back({it->second, {b, i}});
      }
    }
  }
  result.ns = heads.front().ns;

  // Pass 2: read every input completely (digests, trailer) and keep the
  // records (without payloads: their digests stand for them) that pass 1
  // could not decide or that conflict, to say what differs.
  std::set<std::pair<std::size_t, std::size_t>> wanted;
  for (const auto* list : {&compare, &differing})
    for (const auto& [a, b] : *list) wanted.insert({a.bundle, a.position}), wanted.insert({b.bundle, b.position});
  std::map<std::pair<std::size_t, std::size_t>, Entry> records;
  for (std::size_t b = 0; b < inputs.size(); ++b) {
    auto reader = KCACHE_TRY(open_stream(inputs[b], {}));
    for (std::size_t i = 0;; ++i) {
      auto e = KCACHE_TRY(in_context(reader.next(), inputs[b].label()));
      if (!e) break;
      if (wanted.contains({b, i})) {
        e->payload = {};
        records.emplace(std::pair{b, i}, std::move(*e));
      }
    }
    KCACHE_CHECK(in_context(reader.finish(), inputs[b].label()));
  }
  auto difference = [&](const Source& a, const Source& b) {
    return record_difference(records[{a.bundle, a.position}], records[{b.bundle, b.position}], inputs[a.bundle].label(),
                             inputs[b.bundle].label());
  };
  for (std::size_t k = 0; k < differing.size(); ++k)
    result.conflicts[k].difference = difference(differing[k].first, differing[k].second);
  for (const auto& [a, b] : compare) {
    if (records[{a.bundle, a.position}].payload_digest == records[{b.bundle, b.position}].payload_digest) {
      ++result.duplicates;
      continue;
    }
    const auto& ie = heads[a.bundle].index[a.position];
    result.conflicts.push_back(
        {ie.kernel, inputs[a.bundle].label(), inputs[b.bundle].label(), ie.key, ie.key, true, difference(a, b)});
  }
  if (!result.conflicts.empty()) return result;

  // Pass 3: write, in kernel-name order (the order `kcache export` writes a
  // store's namespace in), so that a merge of shards compresses as one
  // export of the same entries: variants of one kernel sit side by side in
  // zstd's window (in shard order they were apart: 19% larger on the
  // benchmark corpus).
  std::sort(order.begin(), order.end(), [&](const Source& a, const Source& b) {
    return heads[a.bundle].index[a.position].kernel < heads[b.bundle].index[b.position].kernel;
  });
  BundleHeader header;
  header.ns = result.ns;
  header.tool_versions = heads.front().tool_versions;
  header.created = created;
  for (const auto& s : order) header.index.push_back(heads[s.bundle].index[s.position]);
  result.entries = header.index.size();
  // One reader per input, each moving forward through its bundle (an
  // export's index is in kernel order already); an input whose next entry
  // lies behind its reader is read again from its start.
  struct Cursor {
    std::optional<BundleReader> reader;
    std::size_t next_position = 0;
  };
  std::vector<Cursor> cursors(inputs.size());
  ReadLimits one_thread;
  one_thread.threads = 1;  // several readers at once: no check threads each
  EntrySource source = [&](std::size_t k) -> Result<Entry> {
    const Source& s = order[k];
    Cursor& c = cursors[s.bundle];
    if (!c.reader || c.next_position > s.position) {
      c.reader.reset();
      c.reader.emplace(KCACHE_TRY(open_stream(inputs[s.bundle], one_thread)));
      if (!(c.reader->header() == heads[s.bundle]))
        return fail(Category::corruption, "{} changed while it was being merged", inputs[s.bundle].label());
      c.next_position = 0;
    }
    for (;;) {
      auto e = KCACHE_TRY(in_context(c.reader->next(), inputs[s.bundle].label()));
      if (!e) return fail(Category::corruption, "{} ended early while it was being merged", inputs[s.bundle].label());
      if (c.next_position++ == s.position) return std::move(*e);
    }
  };
  KCACHE_CHECK(write_stream(out, header, source, options));
  if (options.sign) result.signer = key_id(options.sign->public_key);
  result.bundle_bytes = written_size(out);
  return result;
}

}  // namespace kcache::bundle
