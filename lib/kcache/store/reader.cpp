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

}  // namespace kcache::store
