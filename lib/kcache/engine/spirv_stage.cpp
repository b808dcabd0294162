// The SPIR-V stage (build() in build.hpp): GLSL/HLSL kernels through
// glslang, spirv-opt and spirv-val into spirv/<target>. Only what is
// SPIR-V's own is here; the cache rules are the engine's (stage.hpp).
#include "kcache/engine/build.hpp"

#include "kcache/compile/compiler.hpp"
#include "kcache/engine/explain.hpp"
#include "kcache/engine/record_rules.hpp"
#include "kcache/engine/stage.hpp"
#include "kcache/util/hash.hpp"

#include <cstring>
#include <future>
#include <map>
#include <mutex>

namespace kcache::engine {
namespace {

using definition::KernelSpec;

/// Where compile() failed. Its glslang lap is taken only once glslang
/// (parse, link, SPIR-V generation) succeeded, and spirv-val's errors have
/// their own categories; so a failure after glslang's lap is spirv-opt's.
FailurePhase failed_phase(const Error& error, const PhaseTimes& times) {
  if (error.category == Category::validation_failed || error.category == Category::validator_unsupported)
    return FailurePhase::spirv_val;
  return times[Phase::glslang].wall_ms > 0 ? FailurePhase::spirv_opt : FailurePhase::glslang;
}

/// Everything that changes the compiled bytes except the kernel's name: two
/// variants that expand alike compile once.
Hash128 compile_key(const definition::HashedFields& id, const Hash128& ir) {
  util::Hasher h;
  for (const auto& [k, v] : id.fields)
    if (k != "name" && !k.starts_with("variant:")) h.field(k, v);
  h.field("ir", ir);
  return h.finish();
}

class SpirvBackend final : public PerUnitBackend {
 public:
  SpirvBackend(const BuildOptions& options, definition::FileCache& files) : m_options(options), m_files(files) {}

  std::vector<Field> toolchain(const Unit& unit, const Recorded&) const override {
    return m_options.toolchain->fields(unit.spec->optimize);
  }

  /// Known up front: glslang and SPIRV-Tools are linked in.
  std::optional<std::vector<Field>> direct_toolchain(const Unit& unit) const override {
    return m_options.toolchain->fields(unit.spec->optimize);
  }

  tl::expected<Prepared, Failed> prepare(const Unit& unit, PhaseTimes& times) const override {
    auto def = compile::expand(*unit.spec, m_files, times);
    if (!def) return tl::unexpected(Failed{def.error(), FailurePhase::expand, false});
    Stopwatch watch;
    Prepared p;
    p.ir = definition::compute_ir(*def, m_options.toolchain->fields(unit.spec->optimize));
    p.inputs = def->inputs;
    p.state = std::make_shared<const definition::Definition>(std::move(*def));
    watch.lap(times[Phase::hash]);
    return p;
  }

  std::string explain_missing(store::Reader& reader, const Unit& unit) const override {
    if (!m_explainer) m_explainer.emplace(reader, m_files, *m_options.toolchain);
    auto e = m_explainer->explain(*unit.spec);
    return e ? describe(*e) : "not in " + unit.ns.name() + " (" + e.error().message + ")";
  }

  void before_compiles(std::span<const Pending> pending) const override {
    std::lock_guard lock(m_mutex);
    for (const auto& p : pending) ++m_sharers[compile_key(p.unit->id, p.key.ir)];
  }

  Compiled compile_one(const Pending& pending) const override {
    const auto& def = *static_cast<const definition::Definition*>(pending.prepared->state.get());
    const Hash128 key = compile_key(pending.unit->id, pending.key.ir);
    auto [future, promise] = claim(key);
    if (promise) {
      PhaseTimes mine;
      auto compiled = compile::compile(*pending.unit->spec, def, mine);
      *pending.times += mine;
      if (!compiled)
        promise->set_value(tl::unexpected(Failed{compiled.error(), failed_phase(compiled.error(), mine), true}));
      else {
        Product p;
        p.payload.resize(compiled->spirv.size() * 4);
        std::memcpy(p.payload.data(), compiled->spirv.data(), p.payload.size());
        // The kernel's validate policy: flagged when not (fully) validated.
        p.validation = compiled->validation;
        p.validation_note = compiled->validation_note;
        p.warnings = compiled->warnings;
        p.diagnostics = cut_diagnostics(compiled->warnings);
        promise->set_value(std::move(p));
      }
    }
    Compiled c = future.get();
    if (!promise && c) c->shared_compile = true;
    release(key);
    return c;
  }

 private:
  using Shared = std::shared_future<Compiled>;
  /// Returns the compile of `key` and, when the caller is the first to ask,
  /// the promise it must fulfil; later callers wait for the first's result.
  std::pair<Shared, std::shared_ptr<std::promise<Compiled>>> claim(const Hash128& key) const {
    std::lock_guard lock(m_mutex);
    if (auto it = m_compiles.find(key); it != m_compiles.end()) return {it->second, nullptr};
    auto promise = std::make_shared<std::promise<Compiled>>();
    Shared future = promise->get_future().share();
    m_compiles.emplace(key, future);
    return {future, promise};
  }

  /// One sharer of `key`'s compile took its copy: the last one frees it, so
  /// a module is held once, and only until every unit that shares it has it.
  void release(const Hash128& key) const {
    std::lock_guard lock(m_mutex);
    auto it = m_sharers.find(key);
    if (it != m_sharers.end() && --it->second == 0) {
      m_sharers.erase(it);
      m_compiles.erase(key);
    }
  }

  const BuildOptions& m_options;
  definition::FileCache& m_files;
  mutable std::optional<Explainer> m_explainer;  ///< used only inside the warm path's read transaction
  mutable std::mutex m_mutex;
  mutable std::map<Hash128, Shared> m_compiles;
  mutable std::map<Hash128, std::size_t> m_sharers;  ///< units yet to take each compile (before_compiles)
};

/// What the SPIR-V stage's records are worth here (record_rules.hpp).
class SpirvRecordRules final : public RecordRules {
 public:
  std::string_view backend() const override { return "spirv"; }

  /// Key schema, glslang, SPIRV-Tools and the optimiser recipe of the
  /// level the record names (its "optimize" id field).
  std::vector<Change> toolchain_changes(const Recorded& stored, const compile::Toolchain& toolchain) const override {
    auto level = definition::Optimize::performance;
    for (const auto& [name, value] : stored.id_fields)
      if (name == "optimize")
        if (auto parsed = definition::parse_optimize(value)) level = *parsed;
    std::vector<Field> current{{"key_schema", std::string(definition::k_key_schema)}};
    const auto& fields = toolchain.fields(level);
    current.insert(current.end(), fields.begin(), fields.end());
    return definition::diff_fields(toolchain_part(stored.ir_fields), current);
  }

  std::vector<std::string> namespaces_of(const definition::KernelSpec& spec) const override {
    if (spec.language == definition::Language::cuda) return {};
    return {spirv_namespace(spec.target).name()};
  }

  Assessment assess(const definition::KernelSpec& spec, const Namespace&, const Recorded& stored,
                    definition::FileCache& files, const compile::Toolchain& toolchain) const override {
    return engine::assess(spec, stored, files, toolchain);
  }
};

}  // namespace

const RecordRules& spirv_record_rules() {
  static const SpirvRecordRules rules;
  return rules;
}

Result<BuildResult> build(const manifest::Manifest& manifest, store::Store& store, const BuildOptions& options) {
  BuildResult result;
  std::vector<Unit> units;
  for (const auto& k : manifest.kernels)
    // CUDA kernels are the CUDA stage's (cuda_stage.hpp), run by engine::run.
    if (k.language != definition::Language::cuda && (!options.shard || in_shard(k.name, *options.shard)))
      units.push_back({&k, spirv_namespace(k.target), definition::compute_id(k)});
  definition::FileCache files(manifest.root);
  SpirvBackend backend(options, files);
  KCACHE_CHECK(run_stage(backend, std::move(units), store, stage_options(options, files), result));
  return result;
}

}  // namespace kcache::engine
