#include "kcache/remote/check.hpp"

#include "kcache/remote/backend.hpp"
#include "kcache/util/hash.hpp"

#include <fmt/format.h>

#include <chrono>
#include <random>

namespace kcache::remote {

CheckResult check_remote(const RemoteUrl& url) {
  CheckResult out;
  out.name = url.shown();
  out.read_only = url.read_only;
  auto backend = make_backend(url);
  std::string prefix = url.prefix.empty() || url.prefix.ends_with('/') ? url.prefix : url.prefix + "/";
  // A probe name of its own, outside kcache1/, so concurrent checks and
  // builds never see each other's probes.
  std::random_device rd;
  std::string probe = fmt::format("{}kcache-probe-{:08x}{:08x}", prefix, rd(), rd());
  auto there = backend->exists(probe);
  if (!there) {
    out.reach_error = std::move(there).error();
    return out;
  }
  out.reachable = true;
  if (!url.read_only) {
    std::string text = fmt::format("kcache remote check {}", probe);
    std::vector<std::uint8_t> bytes(text.begin(), text.end());
    auto done = [&]() -> Result<void> {
      KCACHE_CHECK(backend->put(probe, bytes));
      auto back = KCACHE_TRY(backend->get(probe, 4096));
      KCACHE_CHECK(backend->remove(probe));
      if (!back || *back != bytes)
        return fail(Category::io_error, "remote {}: a probe value written was not read back the same", out.name);
      return {};
    }();
    if (done) out.writable = true;
    else out.write_error = std::move(done).error();
  }
  auto counts = backend->count_values(prefix + "kcache1/");
  if (counts) out.values = std::move(*counts);
  else out.count_error = std::move(counts).error();
  return out;
}

}  // namespace kcache::remote
