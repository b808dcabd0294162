// What every Reader shares, written once over its primitives.
#include "kcache/store/store.hpp"

namespace kcache::store {

Result<std::vector<NamespaceInfo>> Reader::namespaces() {
  std::vector<NamespaceInfo> out;
  for (auto& record : KCACHE_TRY(namespace_records())) {
    NamespaceInfo info{std::move(record.ns)};
    KCACHE_CHECK(scan(info.ns.name(), [&](Entry&& e) {
      ++info.entries;
      info.payload_bytes += e.payload.size();
      return true;
    }));
    out.push_back(std::move(info));
  }
  return out;
}

void Reader::note_damaged(std::string_view ns_name, std::string_view kernel, Error error) {
  // Several scans of one snapshot meet the same entry (inspect counts, then
  // lists); a report names it once. A set, so that a store whose every
  // record is damaged costs O(n log n), not O(n^2).
  if (m_damaged_seen.emplace(std::string(ns_name), std::string(kernel)).second)
    m_damaged.push_back({std::string(ns_name), std::string(kernel), std::move(error)});
}

}  // namespace kcache::store
