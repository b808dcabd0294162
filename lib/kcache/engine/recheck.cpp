#include "kcache/engine/recheck.hpp"

#include <fmt/format.h>

namespace kcache::engine {

Result<void> recheck_stored(store::Store& store, const BuildResult& result, const std::function<void()>& before_read) {
  if (before_read) before_read();
  // A handful of names is enough to find them in the per-kernel report.
  constexpr std::size_t k_named = 5;
  std::size_t checked = 0, gone = 0, replaced = 0;
  std::string names;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& r : result.receipts) {
      if (r.outcome != Outcome::hit && r.outcome != Outcome::compiled && r.outcome != Outcome::stale_replaced &&
          r.outcome != Outcome::remote_hit)
        continue;
      ++checked;
      auto head = KCACHE_TRY(reader.get_head(r.ns, r.kernel));
      if (head && head->key == r.key) continue;
      ++(head ? replaced : gone);
      if (gone + replaced <= k_named) names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", r.kernel, r.ns);
    }
    return {};
  }));
  const std::size_t missing = gone + replaced;
  if (missing == 0) return {};
  if (missing > k_named) names += fmt::format(" and {} more", missing - k_named);
  return fail(Category::busy,
              "{} of the {} kernels this build reported as stored are no longer in the store as reported ({} gone, "
              "{} replaced by another build): {}; evicted by a concurrent gc/eviction while this build ran; run "
              "the build again",
              missing, checked, gone, replaced, names);
}

}  // namespace kcache::engine
