// The CUDA stage (contract in cuda_stage.hpp).
#include "kcache/build/cuda_stage.hpp"

#include "kcache/build/batch_writer.hpp"
#include "kcache/build/freshness.hpp"
#include "kcache/core/cuda.hpp"
#include "kcache/nvrtc/nvrtc.hpp"

#include <algorithm>

namespace kcache::build {
namespace {

using definition::KernelSpec;

/// One (kernel, arch) the fast path could not settle.
struct Job {
  std::size_t receipt;  ///< into result.receipts
  const KernelSpec* spec;
  std::string arch;
  definition::HashedFields id;
  std::optional<Entry> stored;
  std::optional<Failure> failure;  ///< a failure record whose inputs changed
};

struct Done {
  std::size_t receipt;
  std::string arch;
  std::optional<Entry> entry;
  std::optional<Failure> failure;
};

/// The toolchain fields a stored record names (its ir fields less the key
/// schema and content): what the warm path compares when NVRTC is not loaded.
std::vector<Field> recorded_toolchain(const std::vector<Field>& ir_fields) {
  auto out = toolchain_part(ir_fields);
  std::erase_if(out, [](const Field& f) { return f.first == "key_schema"; });
  return out;
}

Done run_job(const Job& job, const nvrtc::Library& lib, definition::FileCache& files, const BuildOptions& options,
             Receipt& r) {
  const KernelSpec& spec = *job.spec;
  Stopwatch watch;
  auto sources = nvrtc::scan_inputs(spec, files);
  watch.lap(r.times[Phase::expand]);
  if (!sources) {
    r.outcome = Outcome::failed;
    r.failed_phase = std::string(failure_phase_name(FailurePhase::expand));
    r.error = sources.error();
    r.kept_stale = job.stored.has_value();
    return {job.receipt, job.arch, std::nullopt, std::nullopt};
  }
  std::vector<InputFile> inputs;
  for (const auto& f : *sources) inputs.push_back({f->path, f->hash});
  auto ir = definition::compute_cuda_ir(inputs, lib.toolchain_fields());
  watch.lap(r.times[Phase::hash]);
  r.key = {job.id.hash, ir.hash};
  if (job.stored && job.stored->key == r.key) {
    r.outcome = Outcome::hit;
    r.reason.clear();
    Entry refreshed = *job.stored;
    refreshed.inputs = inputs;
    r.bytes = refreshed.payload.size();
    return {job.receipt, job.arch, std::move(refreshed), std::nullopt};
  }
  if (job.failure && job.failure->ir_known && job.failure->key == r.key) {
    r.report_remembered(*job.failure);
    r.kept_stale = job.stored.has_value();
    Failure refreshed = *job.failure;
    refreshed.inputs = inputs;
    return {job.receipt, job.arch, std::nullopt, std::move(refreshed)};
  }
  const std::filesystem::path root = std::filesystem::absolute(files.root()).lexically_normal();
  nvrtc::Request req;
  req.source = sources->front()->content;
  req.source_path = root / spec.source;
  req.root = root;
  req.arch = job.arch;
  for (const auto& d : spec.include_dirs) req.include_dirs.push_back((root / d).lexically_normal());
  req.defines = spec.defines;
  req.options = spec.nvrtc_options;
  req.name_expression = spec.entry;
  auto out = lib.compile(req);
  watch.lap(r.times[Phase::nvrtc]);
  if (!out) {
    r.outcome = Outcome::failed;
    r.error = out.error();
    r.failed_phase = std::string(failure_phase_name(FailurePhase::nvrtc));
    r.kept_stale = job.stored.has_value();
    Failure f;
    f.kernel = spec.name;
    f.phase = FailurePhase::nvrtc;
    f.key = r.key;
    f.ir_known = true;
    f.id_fields = job.id.fields;
    f.ir_fields = ir.fields;
    f.inputs = inputs;
    f.category = out.error().category;
    f.message = bound_failure_message(out.error().message);
    f.created = options.clock->now();
    f.origin_detail = options.origin;
    return {job.receipt, job.arch, std::nullopt, std::move(f)};
  }
  Entry e;
  e.kernel = spec.name;
  e.key = r.key;
  e.id_fields = job.id.fields;
  e.ir_fields = std::move(ir.fields);
  // Recorded beside what ir hashed (freshness.cpp's toolchain_part skips it):
  // the symbol cuda_function_symbol() gives the runtime.
  e.ir_fields.emplace_back(std::string(k_cuda_lowered_name_field), out->lowered_name);
  e.inputs = std::move(inputs);
  e.payload_kind = out->kind;
  e.payload = std::move(out->payload);
  seal_payload(e);
  e.created = options.clock->now();
  e.origin_kind = OriginKind::built;
  e.origin_detail = options.origin;
  e.validation = Validation::validated;  // NVRTC's own output, checked by check_cuda_payload below
  if (auto checked = check_cuda_payload(e.payload_kind, job.arch, e.payload); !checked) {
    r.outcome = Outcome::failed;
    r.error = checked.error();
    r.failed_phase = std::string(failure_phase_name(FailurePhase::nvrtc));
    return {job.receipt, job.arch, std::nullopt, std::nullopt};
  }
  r.warnings = out->log;
  r.outcome = job.stored ? Outcome::stale_replaced : Outcome::compiled;
  r.bytes = e.payload.size();
  return {job.receipt, job.arch, std::move(e), std::nullopt};
}

}  // namespace

Assessment assess_cuda(const KernelSpec& spec, std::string_view arch, const Recorded& stored,
                       definition::FileCache& files) {
  return check_direct(definition::compute_cuda_id(spec, arch), recorded_toolchain(stored.ir_fields), stored, files);
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
  Stopwatch total;
  PhaseTime wall;
  struct Unit {
    const KernelSpec* spec;
    std::string arch;
  };
  std::vector<Unit> units;
  for (const auto& k : manifest.kernels)
    if (k.language == definition::Language::cuda && (!options.shard || in_shard(k.name, *options.shard)))
      for (const auto& arch : k.arch) units.push_back({&k, arch});
  if (units.empty()) return {};
  const std::size_t base = result.receipts.size();
  result.receipts.resize(base + units.size());
  definition::FileCache files(manifest.root);
  std::vector<Job> jobs;

  // Fast path: one read transaction, no NVRTC.
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (std::size_t i = 0; i < units.size(); ++i) {
      const KernelSpec& spec = *units[i].spec;
      Receipt& r = result.receipts[base + i];
      r.kernel = spec.name;
      r.ns = cuda_namespace(units[i].arch).name();
      Stopwatch watch;
      Job job{base + i, &spec, units[i].arch, definition::compute_cuda_id(spec, units[i].arch), std::nullopt,
              std::nullopt};
      watch.lap(r.times[Phase::hash]);
      auto stored = reader.get_head(r.ns, spec.name);  // a fresh entry needs no more
      watch.lap(r.times[Phase::lookup]);
      r.reason = "not in " + r.ns;
      if (!stored) {
        r.reason = "stored entry unreadable: " + stored.error().message;
      } else if (*stored) {
        auto a = check_direct(job.id, recorded_toolchain((*stored)->ir_fields), recorded(**stored), files);
        watch.lap(r.times[Phase::hash]);
        if (a.state == Freshness::fresh) {
          r.outcome = Outcome::hit;
          r.key = (*stored)->key;
          r.bytes = (*stored)->payload_bytes;
          r.reason.clear();
          continue;
        }
        r.reason = "stale: " + describe_changes(a.changes, 4);
        if (auto full = reader.get(r.ns, spec.name); !full)
          r.reason = "stored entry unreadable: " + full.error().message;
        else job.stored = std::move(*full);
      }
      if (!options.retry_failed) {
        auto failure = reader.failure(r.ns, spec.name);
        watch.lap(r.times[Phase::lookup]);
        if (failure && *failure) {
          auto a = check_direct(job.id, recorded_toolchain((*failure)->ir_fields), recorded(**failure), files);
          if (a.state == Freshness::fresh) {
            r.report_remembered(**failure);
            r.kept_stale = job.stored.has_value();
            continue;
          }
          if (std::all_of(a.changes.begin(), a.changes.end(),
                          [](const Change& c) { return c.name.starts_with("input:"); }))
            job.failure = std::move(**failure);
        }
      }
      jobs.push_back(std::move(job));
    }
    return {};
  }));
  std::size_t done_count = base;
  const std::size_t all = result.receipts.size();
  for (std::size_t i = base; i < all; ++i) {
    const Receipt& r = result.receipts[i];
    if ((r.outcome == Outcome::hit && r.reason.empty()) || r.remembered)
      if (options.on_receipt) options.on_receipt(r, ++done_count, all);
  }

  std::size_t stage_bytes = 0;
  if (!jobs.empty()) {
    Stopwatch load_watch;
    auto lib = nvrtc::Library::load(options.nvrtc_path);
    load_watch.lap(result.receipts[jobs.front().receipt].times[Phase::nvrtc]);
    if (!lib) {
      for (const Job& job : jobs) {
        Receipt& r = result.receipts[job.receipt];
        r.outcome = Outcome::failed;
        r.failed_phase = std::string(failure_phase_name(FailurePhase::nvrtc));
        r.error = lib.error();
        r.kept_stale = job.stored.has_value();
        if (options.on_receipt) options.on_receipt(r, ++done_count, all);
      }
    } else {
      const nvrtc::Library& nv = **lib;
      compile_and_write(
          store, result.receipts, stage_bytes, jobs.size(), options.jobs,
          [&](std::size_t j) {
            Done d = run_job(jobs[j], nv, files, options, result.receipts[jobs[j].receipt]);
            return Made{d.receipt, cuda_namespace(d.arch, nv.cuda_version(), nv.version()), std::move(d.entry),
                        std::move(d.failure)};
          },
          [&](std::size_t i) {
            if (options.on_receipt) options.on_receipt(result.receipts[i], ++done_count, all);
          });
    }
  }
  for (std::size_t i = base; i < all; ++i) result.totals += result.receipts[i].times;
  result.bytes_written += stage_bytes;
  total.lap(wall);
  result.wall_ms += wall.wall_ms;
  return {};
}

}  // namespace kcache::build
