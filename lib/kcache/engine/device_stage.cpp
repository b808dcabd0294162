// The device stage of a vulkan build (contract in device_build.hpp).
#include "kcache/engine/device_stage.hpp"

#include "kcache/device/pipeline_entry.hpp"
#include "kcache/engine/record_rules.hpp"
#include "kcache/engine/stage.hpp"

#include <fmt/format.h>

#include <cstring>
#include <map>

namespace kcache::engine {
namespace {

using definition::KernelSpec;

/// A compute kernel's pipeline on one device: what the backend keeps of
/// each unit (by Unit::backend_index).
struct Item {
  std::vector<std::uint8_t> module;  ///< the stored SPIR-V module, for the worker
  device::PipelineRecipe recipe;
};

class PipelineBackend final : public Backend {
 public:
  PipelineBackend(const device::DeviceInfo& device, const DeviceBuildOptions& options, std::vector<Item> items)
      : m_device(device), m_options(options), m_items(std::move(items)) {}

  /// Units' keys are known up front (the recipe), so no toolchain is compared.
  std::vector<Field> toolchain(const Unit&, const Recorded&) const override { return {}; }
  bool checks_payload() const override { return true; }

  /// A blob serves only this device's compatibility class, and only the
  /// recipe it names: this build's module, entry point and specialization.
  Result<void> accept(const Unit& unit, const Entry& e) const override {
    KCACHE_CHECK(device::check_blob_against_record(e.payload, m_device.record()));
    auto got = KCACHE_TRY(device::read_pipeline_recipe(e));
    if (!(got == m_items[unit.backend_index].recipe))
      return fail(Category::corruption, "a pipeline built from another module, entry point or specialization");
    return {};
  }

  tl::expected<Prepared, Failed> prepare(const Unit& unit, PhaseTimes&) const override {
    return Prepared{*unit.ir, unit.inputs, nullptr};
  }

  /// Pipelines are created in worker processes (pipeline_worker.hpp), so a
  /// driver crash fails one kernel, not the build.
  Result<void> compile(std::span<const Pending> pending, unsigned threads,
                       const std::function<void(std::size_t, Compiled)>& done) const override {
    std::vector<worker::PipelineJob> jobs;
    jobs.reserve(pending.size());
    for (const Pending& p : pending) {
      const Item& item = m_items[p.unit->backend_index];
      jobs.push_back({p.unit->spec->name, p.unit->spec->target, item.recipe.entry, item.recipe.spec, item.module, {}});
    }
    worker::WorkerOptions worker = m_options.worker;
    worker.threads = threads;
    return worker::run_pipeline_jobs(
        m_device, worker::JobMode::build, jobs, worker, [&](std::size_t k, worker::PipelineOutcome&& o) {
          PhaseTime& t = (*pending[k].times)[Phase::pipeline];
          t.wall_ms += o.create_ms;
          t.cpu_ms += o.cpu_ms;
          if (o.error) {
            // What the driver refused is remembered. A device that went away
            // (no worker, a lost device) says nothing about this kernel, nor
            // does a worker that crashed or stalled (an OOM kill or a loaded
            // machine can do that too).
            const bool remember = !o.crashed && o.error->category != Category::device_unavailable &&
                                  o.error->category != Category::io_error;
            done(k, tl::unexpected(Failed{std::move(*o.error), FailurePhase::pipeline, remember}));
            return;
          }
          // The interface the pipeline was created with, recorded so that a
          // runtime need not reflect the module again (pipeline_entry.hpp).
          // The worker reflected these same bytes before creating the
          // pipeline, so SPIRV-Cross has already survived them.
          const Item& item = m_items[pending[k].unit->backend_index];
          std::vector<std::uint32_t> words(item.module.size() / 4);
          std::memcpy(words.data(), item.module.data(), words.size() * 4);
          auto interface = device::reflect_pipeline_interface(words, item.recipe.entry, item.recipe.spec);
          if (!interface) {
            done(k, tl::unexpected(Failed{std::move(interface.error()), FailurePhase::pipeline, false}));
            return;
          }
          Product p;
          p.kind = PayloadKind::pipeline_cache;
          p.payload = device::wrap_blob(m_device, o.blob);
          p.product_fields = interface->fields();
          done(k, std::move(p));
        });
  }

 private:
  const device::DeviceInfo& m_device;
  const DeviceBuildOptions& m_options;
  std::vector<Item> m_items;
};

/// What the pipeline stage's records are worth here (record_rules.hpp): a
/// pipeline recipe, not a toolchain; the manifest names no device, so it
/// says nothing of them; a namespace of fingerprint schema 1 (its id named
/// one card) is reached by no lookup any more.
class PipelineRecordRules final : public RecordRules {
 public:
  std::string_view backend() const override { return "vulkan"; }

  std::optional<Change> stale_namespace(const Namespace& ns) const override {
    if (!has_per_card_fields(ns.record)) return std::nullopt;
    return Change{"fingerprint", "schema 1 (one card: deviceUUID in the id)",
                  "schema 2 (GPU model and driver): " + vulkan_namespace(ns.record).name()};
  }

  std::vector<std::string> namespaces_of(const KernelSpec&) const override { return {}; }

  Assessment assess(const KernelSpec&, const Namespace&, const Recorded&, definition::FileCache&,
                    const compile::Toolchain&) const override {
    return {};  // never asked: namespaces_of names none
  }
};

}  // namespace

const RecordRules& pipeline_record_rules() {
  static const PipelineRecordRules rules;
  return rules;
}

std::vector<device::SpecValue> spec_values(const KernelSpec& spec) {
  std::vector<device::SpecValue> out;
  for (const auto& c : spec.spec_constants) {
    std::uint64_t bits = c.bits;
    if (c.type == "int" && (c.bits & 0x80000000u))
      bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(c.bits)));
    out.push_back({c.id, bits});
  }
  return out;
}

Result<void> build_device_stage(const manifest::Manifest& manifest, store::Store& store,
                                const device::DeviceInfo& device, const BuildOptions& options,
                                const DeviceBuildOptions& device_options, BuildResult& result) {
  std::map<std::string_view, const KernelSpec*> specs;
  for (const auto& k : manifest.kernels) specs.emplace(k.name, &k);

  // A unit per compute kernel of the SPIR-V stage, keyed by its stored
  // module's identity and the recipe made from it.
  std::vector<Unit> units;
  std::vector<Item> items;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const Receipt& s : result.receipts) {
      auto it = specs.find(s.kernel);
      if (it == specs.end() || it->second->stage != definition::Stage::compute || s.ns.rfind("spirv/", 0) != 0)
        continue;
      const KernelSpec& spec = *it->second;
      Unit& unit = units.emplace_back(Unit{&spec, device.ns, {}});
      if (s.outcome == Outcome::failed || s.outcome == Outcome::refused_write) {
        unit.blocked =
            Error{Category::compile_failed, "no SPIR-V module to create the pipeline from (see its SPIR-V stage)"};
        continue;
      }
      auto spirv = reader.get(s.ns, s.kernel);
      if (!spirv || !*spirv) {
        unit.blocked = spirv ? Error{Category::not_found, fmt::format("no SPIR-V entry in {}", s.ns)} : spirv.error();
        continue;
      }
      device::PipelineRecipe recipe{s.ns, (*spirv)->payload_digest, spec.entry, spec_values(spec)};
      unit.id = {(*spirv)->key.id, (*spirv)->id_fields};
      unit.ir = definition::HashedFields{device::recipe_hash(recipe), recipe.fields()};
      unit.inputs = (*spirv)->inputs;
      unit.backend_index = items.size();
      items.push_back({std::move((*spirv)->payload), std::move(recipe)});
    }
    return {};
  }));

  definition::FileCache files(manifest.root);
  StageOptions stage = stage_options(options, files);
  stage.origin = device_options.origin;
  PipelineBackend backend(device, device_options, std::move(items));
  return run_stage(backend, std::move(units), store, stage, result);
}

}  // namespace kcache::engine
