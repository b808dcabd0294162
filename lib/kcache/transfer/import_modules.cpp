// The SPIR-V modules a vulkan bundle's pipelines are checked against: the store's, or a release's own.
#include "kcache/transfer/import_internal.hpp"

#include "kcache/compile/compiler.hpp"
#include "kcache/device/pipeline_entry.hpp"

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kcache::transfer::internal {

ModuleRef module_ref(const Entry& e, bool with_payload, bool validated) {
  ModuleRef m;
  m.digest = e.payload_digest;
  if (with_payload) m.payload = std::make_shared<const std::vector<std::uint8_t>>(e.payload);
  m.strict = definition::recorded_validate_policy(e.id_fields) == definition::ValidatePolicy::strict;
  m.validated = validated;
  return m;
}

/// The store's modules of a vulkan bundle's kernels, with their bytes.
Result<SpirvModules> spirv_modules(store::Store& store, const bundle::BundleHeader& header) {
  SpirvModules out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto& rec : KCACHE_TRY(r.namespace_records())) {
      if (rec.ns.backend != "spirv") continue;
      for (const auto& ie : header.index)
        if (auto e = r.get(rec.ns.name(), ie.kernel); e && *e)
          out.emplace(std::pair{rec.ns.name(), ie.kernel}, module_ref(**e, true, false));
    }
    return {};
  }));
  return out;
}

/// Whether the store (or the release) holds the exact module `pipeline` was
/// built from, and whether the interface the pipeline records is that
/// module's (device::check_pipeline_interface; spirv-val first, since
/// reflection trusts what it parses). Runs on a validator thread: `modules`
/// is not written while a vulkan section's entries are checked.
Result<void> check_pipeline_module(const Entry& pipeline, const SpirvModules& modules) {
  auto recipe = KCACHE_TRY(device::read_pipeline_recipe(pipeline));
  auto it = modules.find({recipe.spirv_namespace, pipeline.kernel});
  if (it == modules.end())
    return fail(Category::not_found,
                "its SPIR-V module is not in {} of this store, and a pipeline cannot be created without it: import "
                "the {} bundle first (kcache export --namespace {} where it was built)",
                recipe.spirv_namespace, recipe.spirv_namespace, recipe.spirv_namespace);
  const ModuleRef& m = it->second;
  if (m.digest != recipe.spirv_digest)
    return fail(Category::fingerprint_mismatch,
                "the store's SPIR-V module in {} differs from the one this pipeline was built from: import the "
                "matching {} bundle first",
                recipe.spirv_namespace, recipe.spirv_namespace);
  // Scheme 1 records no interface; a module under "known" or "off" is never
  // reflected (verify skips it alike).
  if (!KCACHE_TRY(device::read_pipeline_interface(pipeline)) || !m.strict) return {};
  if (!m.payload)
    return fail(Category::validation_failed,
                "its SPIR-V module is the store's, in {}, a namespace this release carries: a release carries the "
                "modules of its pipelines, and the interface this pipeline records cannot be checked otherwise",
                recipe.spirv_namespace);
  auto words = KCACHE_TRY(compile::spirv_words(*m.payload));
  const std::string target = recipe.spirv_namespace.substr(recipe.spirv_namespace.find('/') + 1);
  if (!m.validated && !compile::validate(words, target))
    return fail(Category::corruption, "its SPIR-V module in {} does not pass spirv-val", recipe.spirv_namespace);
  return device::check_pipeline_interface(pipeline, recipe, words);
}

/// Every SPIR-V module the store holds: what a release's pipelines may be
/// built from besides its own SPIR-V sections. The bytes are kept only of
/// namespaces the release does not carry (`carried`): a carried one's
/// pipelines take their modules from its section, and the store's whole
/// namespace is not held in memory for them.
Result<SpirvModules> all_spirv_modules(store::Store& store, const std::set<std::string>& carried) {
  SpirvModules out;
  KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
    for (const auto& rec : KCACHE_TRY(r.namespace_records())) {
      if (rec.ns.backend != "spirv") continue;
      const std::string name = rec.ns.name();
      const bool keep = !carried.contains(name);
      KCACHE_CHECK(r.scan(name, [&](Entry&& e) {
        out.emplace(std::pair{name, e.kernel}, module_ref(e, keep, false));
        return true;
      }));
    }
    return {};
  }));
  return out;
}

}  // namespace kcache::transfer::internal
