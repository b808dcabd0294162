// The CUDA stage (contract in cuda_stage.hpp).
#include "kcache/engine/cuda_stage.hpp"

#include "kcache/core/cuda.hpp"
#include "kcache/engine/freshness.hpp"
#include "kcache/engine/record_rules.hpp"
#include "kcache/engine/stage.hpp"
#include "kcache/nvrtc/nvrtc.hpp"

#include <algorithm>
#include <filesystem>
#include <mutex>

namespace kcache::engine {
namespace {

using definition::KernelSpec;

/// The toolchain fields a stored record names (its ir fields less the key
/// schema and content): what the warm path compares when NVRTC is not loaded.
std::vector<Field> recorded_toolchain(const std::vector<Field>& ir_fields) {
  auto out = toolchain_part(ir_fields);
  std::erase_if(out, [](const Field& f) { return f.first == "key_schema"; });
  return out;
}

class CudaBackend final : public PerUnitBackend {
 public:
  CudaBackend(const BuildOptions& options, definition::FileCache& files, std::vector<std::string> archs)
      : m_options(options), m_files(files), m_archs(std::move(archs)) {}

  /// NVRTC is not loaded on the warm path (not even dlopen), so it does not
  /// see a toolkit upgrade there: the toolchain a record names is believed
  /// until a unit is prepared, whose ir names the loaded NVRTC.
  std::vector<Field> toolchain(const Unit&, const Recorded& stored) const override {
    return recorded_toolchain(stored.ir_fields);
  }

  tl::expected<Prepared, Failed> prepare(const Unit& unit, PhaseTimes& times) const override {
    Stopwatch watch;
    const nvrtc::Library* lib = library();
    watch.lap(times[Phase::nvrtc]);
    // Not the kernel's fault: not remembered.
    if (!lib) return tl::unexpected(Failed{m_load_error, FailurePhase::nvrtc, false});
    auto scan = nvrtc::scan_inputs(*unit.spec, m_files);
    watch.lap(times[Phase::expand]);
    if (!scan) return tl::unexpected(Failed{scan.error(), FailurePhase::expand, false});
    Prepared p;
    p.inputs = nvrtc::recorded_inputs(*scan);
    p.ir = definition::compute_cuda_ir(p.inputs, lib->toolchain_fields());
    p.state = std::make_shared<const Sources>(std::move(scan->inputs));
    watch.lap(times[Phase::hash]);
    return p;
  }

  /// The namespace record names the CUDA and NVRTC versions that built it.
  Namespace write_namespace(const Unit& unit) const override {
    const nvrtc::Library* lib = library();
    return lib ? cuda_namespace(arch(unit), lib->cuda_version(), lib->version()) : unit.ns;
  }

  Compiled compile_one(const Pending& pending) const override {
    const KernelSpec& spec = *pending.unit->spec;
    const auto& sources = *static_cast<const Sources*>(pending.prepared->state.get());
    const std::filesystem::path root = std::filesystem::absolute(m_files.root()).lexically_normal();
    nvrtc::Request req;
    req.source = sources.front()->content;
    req.inputs = sources;  // NVRTC compiles exactly the bytes the key hashed
    req.source_path = root / spec.source;
    req.root = root;
    req.arch = arch(*pending.unit);
    for (const auto& d : spec.include_dirs) req.include_dirs.push_back((root / d).lexically_normal());
    req.defines = spec.defines;
    req.options = spec.nvrtc_options;
    req.name_expression = spec.entry;
    Stopwatch watch;
    auto out = library()->compile(req);
    watch.lap((*pending.times)[Phase::nvrtc]);
    if (!out) return tl::unexpected(Failed{out.error(), FailurePhase::nvrtc, true});
    // NVRTC's own output, checked as an import checks a cubin or PTX: a
    // payload that fails is not stored (the previous entry is kept).
    auto checked = check_cuda_payload(out->kind, req.arch, out->payload).and_then([&] {
      return check_cuda_symbol(out->kind, out->payload, out->lowered_name);
    });
    if (!checked) return tl::unexpected(Failed{checked.error(), FailurePhase::nvrtc, false});
    Product p;
    p.kind = out->kind;
    p.payload = std::move(out->payload);
    // The symbol cuda_function_symbol() gives the runtime: a product field.
    p.product_fields.emplace_back(std::string(k_cuda_lowered_name_field), out->lowered_name);
    p.warnings = std::move(out->log);
    return p;
  }

 private:
  using Sources = std::vector<std::shared_ptr<const definition::SourceFile>>;

  const std::string& arch(const Unit& unit) const { return m_archs[unit.backend_index]; }

  /// NVRTC, loaded by the first unit that needs it; null when it cannot be
  /// (m_load_error says why).
  const nvrtc::Library* library() const {
    std::call_once(m_loaded, [&] {
      auto lib = nvrtc::Library::load(m_options.nvrtc_path);
      if (lib) m_library = std::move(*lib);
      else m_load_error = lib.error();
    });
    return m_library.get();
  }

  const BuildOptions& m_options;
  definition::FileCache& m_files;
  std::vector<std::string> m_archs;  ///< by Unit::backend_index
  mutable std::once_flag m_loaded;
  mutable std::shared_ptr<const nvrtc::Library> m_library;
  mutable Error m_load_error{Category::device_unavailable, ""};
};

}  // namespace

Assessment assess_cuda(const KernelSpec& spec, std::string_view arch, const Recorded& stored,
                       definition::FileCache& files) {
  return check_direct(definition::compute_cuda_id(spec, arch), recorded_toolchain(stored.ir_fields), stored, files);
}

namespace {

/// What the CUDA stage's records are worth here (record_rules.hpp). No
/// toolchain verdict without a manifest: NVRTC is loaded only to compile,
/// so the toolchain a record names is believed, as on the warm path.
class CudaRecordRules final : public RecordRules {
 public:
  std::string_view backend() const override { return k_cuda_backend; }

  std::vector<std::string> namespaces_of(const KernelSpec& spec) const override {
    std::vector<std::string> out;
    if (spec.language == definition::Language::cuda)
      for (const auto& arch : spec.arch) out.push_back(cuda_namespace(arch).name());
    return out;
  }

  Assessment assess(const KernelSpec& spec, const Namespace& ns, const Recorded& stored, definition::FileCache& files,
                    const compile::Toolchain&) const override {
    return assess_cuda(spec, ns.fingerprint, stored, files);
  }
};

}  // namespace

const RecordRules& cuda_record_rules() {
  static const CudaRecordRules rules;
  return rules;
}

bool has_cuda_kernels(const manifest::Manifest& manifest) {
  return std::any_of(manifest.kernels.begin(), manifest.kernels.end(),
                     [](const KernelSpec& k) { return k.language == definition::Language::cuda; });
}

Result<std::string> nvrtc_description(const std::optional<std::string>& path) {
  auto lib = KCACHE_TRY(nvrtc::Library::load(path));
  return fmt::format("{} ({})", lib->version(), lib->loaded_from());
}

Result<void> build_cuda_stage(const manifest::Manifest& manifest, store::Store& store, const BuildOptions& options,
                              BuildResult& result) {
  std::vector<Unit> units;
  std::vector<std::string> archs;
  for (const auto& k : manifest.kernels)
    if (k.language == definition::Language::cuda && (!options.shard || in_shard(k.name, *options.shard)))
      for (const auto& arch : k.arch) {
        units.push_back({&k, cuda_namespace(arch), definition::compute_cuda_id(k, arch)});
        units.back().backend_index = archs.size();
        archs.push_back(arch);
      }
  if (units.empty()) return {};
  definition::FileCache files(manifest.root);
  CudaBackend backend(options, files, std::move(archs));
  return run_stage(backend, std::move(units), store, stage_options(options, files), result);
}

}  // namespace kcache::engine
