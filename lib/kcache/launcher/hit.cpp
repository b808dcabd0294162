// The launcher's hit path (launcher.hpp): a command served from the store
// by the direct rule alone, with no compiler loaded.
#include "kcache/launcher/launcher.hpp"

#include "kcache/core/key_binding.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/definition/definition.hpp"
#include "kcache/freshness/freshness.hpp"

namespace kcache::launcher {

std::string namespace_of(const Plan& plan) { return spirv_namespace(plan.command.target).name(); }

Result<std::optional<Hit>> find_hit(const Plan& plan, store::Store& store, const HitOptions& options) {
  Hit hit;
  hit.root = keys_root(plan, options.base_dir);
  const auto validate = validate_policy(plan, hit.root, options.validate);
  hit.kernel = kernel_name(plan, hit.root, validate);
  hit.ns = namespace_of(plan);
  const definition::KernelSpec spec = kernel_spec(plan, hit.root, hit.kernel, validate);
  const auto id = definition::compute_id(spec);
  definition::FileCache files(hit.root);

  std::optional<Entry> found;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    // The head first, as the engine's warm path: most commands that miss
    // here miss on it, and a stale entry's module is never read.
    auto head = reader.get_head(hit.ns, hit.kernel);
    if (!head || !*head) return {};  // absent, or unreadable: the engine rebuilds over it
    const EntryHead& h = **head;
    if (!check_key_binding(h) || !freshness::inputs_believed(h.origin_kind)) return {};
    if (freshness::check_direct(id, options.toolchain, freshness::recorded(h), files).state !=
        freshness::Freshness::fresh)
      return {};
    auto entry = reader.get(hit.ns, hit.kernel);  // both digests checked: the module is what the key says
    if (entry && *entry && (*entry)->key == h.key) found = std::move(**entry);
    return {};
  }));
  if (!found || found->payload_kind != PayloadKind::spirv) return std::optional<Hit>{};
  // glslc -Werror (without -w) refuses a module with warnings; -Werror is in
  // the key, so an honest store has none here (launcher_build::serve says so
  // by running the real program).
  if (plan.command.warnings_as_errors && !plan.command.suppress_warnings && !found->diagnostics.empty())
    return std::optional<Hit>{};
  hit.entry = std::move(*found);
  return std::optional<Hit>(std::move(hit));
}

Result<void> record_hit(store::Store& store, const Hit& hit, const store::Invocation& invocation, std::uint64_t now,
                        std::uint64_t wall_us) {
  store::UsageBatch batch;
  batch.time = now;
  batch.used.emplace_back(hit.ns, hit.kernel);
  store::RunRecord run;
  run.time = now;
  run.command = invocation.tool;
  run.kernels = 1;
  run.hits = 1;
  run.wall_us = wall_us;
  run.invocation = invocation;
  batch.run = std::move(run);
  return store.record_usage(batch);
}

}  // namespace kcache::launcher
