#include "kcache/build/build.hpp"

#include "kcache/build/batch_writer.hpp"

#include "kcache/build/explain.hpp"
#include "kcache/build/freshness.hpp"
#include "kcache/compile/compiler.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/hash.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <mutex>

namespace kcache::build {
namespace {

using definition::KernelSpec;

/// A kernel the fast path could not settle.
struct Job {
  std::size_t index;  ///< into the receipts
  definition::HashedFields id;
  std::optional<Entry> stored;
  std::string reason;
  /// A failure record whose inputs changed: still current when the
  /// expansion gives its ir again (an edit the preprocessor erases).
  std::optional<Failure> failure;
};

/// What a worker hands back to the writer thread.
struct Done {
  std::size_t index;
  std::optional<Entry> entry;  ///< to write (compiled, or a hit whose inputs were refreshed)
  std::optional<Failure> failure;  ///< to remember (a compile failure, or one whose inputs were refreshed)
};

/// A compile's result and, when it failed, where.
struct Attempt {
  Result<compile::Compiled> compiled;
  FailurePhase phase = FailurePhase::glslang;
};

/// Where compile() failed. Its glslang lap is taken only once glslang
/// (parse, link, SPIR-V generation) succeeded, and spirv-val's errors have
/// their own categories; so a failure after glslang's lap is spirv-opt's.
FailurePhase failed_phase(const Error& error, const PhaseTimes& times) {
  if (error.category == Category::validation_failed || error.category == Category::validator_unsupported)
    return FailurePhase::spirv_val;
  return times[Phase::glslang].wall_ms > 0 ? FailurePhase::spirv_opt : FailurePhase::glslang;
}

Attempt attempt_compile(const KernelSpec& spec, const definition::Definition& def, PhaseTimes& times) {
  PhaseTimes mine;
  Attempt a{compile::compile(spec, def, mine)};
  if (!a.compiled) a.phase = failed_phase(a.compiled.error(), mine);
  times += mine;
  return a;
}

/// The fast path's per-kernel clock: wall time only. Reading a thread's CPU
/// clock is a system call (no vDSO), and three reads per kernel were 16% of
/// a 1,500-kernel warm build's CPU (perf, issue 17). So the fast path reads
/// the monotonic clock (vDSO) per phase and the CPU clock once around the
/// whole loop, and share_loop_cpu() gives each phase lap the loop's CPU/wall
/// ratio: the loop runs on one thread and never waits, so CPU and wall differ
/// only by preemption. The loop's CPU stays measured; only its split between
/// phases and kernels follows their wall time.
class WallLaps {
 public:
  WallLaps() { clock_gettime(CLOCK_MONOTONIC, &m_last); }
  /// Adds the wall time since the last lap to `into.wall_ms`.
  void lap(PhaseTime& into) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    into.wall_ms += (now.tv_sec - m_last.tv_sec) * 1e3 + (now.tv_nsec - m_last.tv_nsec) / 1e6;
    m_last = now;
  }

 private:
  timespec m_last{};
};

/// Sets the fast path's per-kernel CPU (hash and lookup phases, which only
/// the fast path has filled so far) from their wall time and the loop's
/// measured CPU/wall ratio.
void share_loop_cpu(std::vector<Receipt>& receipts, const PhaseTime& loop) {
  const double ratio = loop.wall_ms > 0 ? std::min(1.0, loop.cpu_ms / loop.wall_ms) : 1.0;
  for (auto& r : receipts)
    for (Phase p : {Phase::hash, Phase::lookup}) r.times[p].cpu_ms = r.times[p].wall_ms * ratio;
}

/// Compiles each distinct (options, expanded source) once; later kernels with
/// the same compile key wait for the first one's result.
class CompileOnce {
 public:
  using Shared = std::shared_future<Attempt>;
  /// Returns (future, true) if the caller must fulfil the promise.
  std::pair<Shared, std::shared_ptr<std::promise<Attempt>>> claim(const Hash128& key) {
    std::lock_guard lock(m_mutex);
    if (auto it = m_futures.find(key); it != m_futures.end()) return {it->second, nullptr};
    auto promise = std::make_shared<std::promise<Attempt>>();
    Shared future = promise->get_future().share();
    m_futures.emplace(key, future);
    return {future, promise};
  }

 private:
  std::mutex m_mutex;
  std::map<Hash128, Shared> m_futures;
};

/// Everything that changes the compiled bytes except the kernel's name.
Hash128 compile_key(const definition::HashedFields& id, const Hash128& ir) {
  util::Hasher h;
  for (const auto& [k, v] : id.fields)
    if (k != "name" && !k.starts_with("variant:")) h.field(k, v);
  h.field("ir", ir);
  return h.finish();
}

Entry make_entry(const KernelSpec& spec, const definition::HashedFields& id, definition::HashedFields ir,
                 const definition::Definition& def, std::vector<std::uint32_t> spirv, const BuildOptions& options) {
  Entry e;
  e.kernel = spec.name;
  e.key = {id.hash, ir.hash};
  e.id_fields = id.fields;
  e.ir_fields = std::move(ir.fields);
  e.inputs = def.inputs;
  e.payload_kind = PayloadKind::spirv;
  e.payload.resize(spirv.size() * 4);
  std::memcpy(e.payload.data(), spirv.data(), e.payload.size());
  seal_payload(e);
  e.created = options.clock->now();
  e.origin_kind = OriginKind::built;
  e.origin_detail = options.origin;
  return e;
}

/// The failure record of a kernel whose compile failed.
Failure make_failure(const KernelSpec& spec, const definition::HashedFields& id, const definition::HashedFields& ir,
                     const definition::Definition& def, FailurePhase phase, const Error& error,
                     const BuildOptions& options) {
  Failure f;
  f.kernel = spec.name;
  f.phase = phase;
  f.key = {id.hash, ir.hash};
  f.ir_known = true;
  f.id_fields = id.fields;
  f.ir_fields = ir.fields;
  f.inputs = def.inputs;
  f.category = error.category;
  f.message = bound_failure_message(error.message);
  f.created = options.clock->now();
  f.origin_detail = options.origin;
  return f;
}

/// Expands and, unless the expansion proves the stored entry fresh, compiles.
Done run_job(const Job& job, const KernelSpec& spec, definition::FileCache& files, CompileOnce& once,
             const BuildOptions& options, Receipt& r) {
  auto def = compile::expand(spec, files, r.times);
  if (!def) {
    // Not remembered: cheap to find again, and often fixed by adding a file
    // no recorded input would notice (docs/design.md "Remembered failures").
    r.outcome = Outcome::failed;
    r.failed_phase = std::string(failure_phase_name(FailurePhase::expand));
    r.error = def.error();
    r.kept_stale = job.stored.has_value();
    return {job.index, std::nullopt};
  }
  Stopwatch watch;
  auto ir = definition::compute_ir(*def, options.toolchain->fields(spec.optimize));
  watch.lap(r.times[Phase::hash]);
  r.key = {job.id.hash, ir.hash};
  if (job.stored && job.stored->key == r.key) {
    // An input changed in a way the preprocessor erases (a comment, say):
    // still a hit, and recording the new input hashes keeps the next run on
    // the fast path.
    r.outcome = Outcome::hit;
    r.reason.clear();
    Entry refreshed = *job.stored;
    refreshed.inputs = def->inputs;
    r.bytes = refreshed.payload.size();
    return {job.index, std::move(refreshed)};
  }
  // A remote value is addressed by the whole key, so it is asked only now,
  // after the expansion that gives the ir half (docs/design.md "Remote caches").
  if (options.secondary)
    if (auto fetched = options.secondary->fetch(spirv_namespace(spec.target), spec.name, r.key, {})) {
      fetched->inputs = def->inputs;  // this checkout's files, as the fresh-hit path records them
      r.outcome = Outcome::remote_hit;
      r.bytes = fetched->payload.size();
      return {job.index, std::move(*fetched)};
    }
  if (job.failure && job.failure->ir_known && job.failure->key == r.key) {
    // As the hit above: the same failure; its record learns the new input
    // hashes so that the next run decides without expanding.
    r.report_remembered(*job.failure);
    r.kept_stale = job.stored.has_value();
    Failure refreshed = *job.failure;
    refreshed.inputs = def->inputs;
    return {job.index, std::nullopt, std::move(refreshed)};
  }
  auto [future, promise] = once.claim(compile_key(job.id, ir.hash));
  if (promise) promise->set_value(attempt_compile(spec, *def, r.times));
  else r.shared_compile = true;
  const Attempt& attempt = future.get();
  const auto& compiled = attempt.compiled;
  if (!compiled) {
    r.outcome = Outcome::failed;
    r.error = compiled.error();
    r.failed_phase = std::string(failure_phase_name(attempt.phase));
    r.kept_stale = job.stored.has_value();
    return {job.index, std::nullopt, make_failure(spec, job.id, ir, *def, attempt.phase, compiled.error(), options)};
  }
  r.warnings = compiled->warnings;
  r.outcome = job.stored ? Outcome::stale_replaced : Outcome::compiled;
  Entry e = make_entry(spec, job.id, std::move(ir), *def, compiled->spirv, options);
  e.validation = compiled->validation;  // the kernel's validate policy: flagged when not (fully) validated
  e.validation_note = compiled->validation_note;
  r.bytes = e.payload.size();
  if (options.secondary) options.secondary->publish(spirv_namespace(spec.target), e);
  return {job.index, std::move(e)};
}

}  // namespace

void Receipt::report_remembered(const Failure& f) {
  outcome = Outcome::failed;
  remembered = true;
  key = f.key;
  failed_phase = std::string(failure_phase_name(f.phase));
  failed_at = f.created;
  error = Error{f.category, f.message};
}

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::hit: return "hit";
    case Outcome::compiled: return "compiled";
    case Outcome::stale_replaced: return "stale_replaced";
    case Outcome::failed: return "failed";
    case Outcome::refused_write: return "refused_write";
    case Outcome::remote_hit: return "remote_hit";
  }
  return "?";
}

Result<Shard> parse_shard(std::string_view text) {
  unsigned k = 0, n = 0;
  char slash = 0;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%u%c%u", &k, &slash, &n) != 3 || slash != '/' || k < 1 || n < 1 || k > n ||
      s != fmt::format("{}/{}", k, n))
    return fail(Category::invalid_argument, "--shard '{}' must be K/N with 1 ≤ K ≤ N, e.g. --shard 2/4", text);
  return Shard{k, n};
}

bool in_shard(std::string_view kernel, const Shard& shard) {
  auto h = util::hash_string(kernel);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | h.bytes[i];
  return v % shard.count == shard.index - 1;
}

std::size_t BuildResult::remembered() const {
  return static_cast<std::size_t>(
      std::count_if(receipts.begin(), receipts.end(), [](const Receipt& r) { return r.remembered; }));
}

std::size_t BuildResult::count(Outcome o) const {
  return static_cast<std::size_t>(
      std::count_if(receipts.begin(), receipts.end(), [o](const Receipt& r) { return r.outcome == o; }));
}

std::optional<Error> unstored_error(const BuildResult& result) {
  // A handful of names is enough to find them in the per-kernel report;
  // a full map refuses dozens at once.
  constexpr std::size_t k_named = 5;
  std::vector<const Receipt*> refused;
  for (const auto& r : result.receipts)
    if (r.outcome == Outcome::refused_write) refused.push_back(&r);
  if (refused.empty()) return std::nullopt;
  std::string names;
  for (std::size_t i = 0; i < refused.size() && i < k_named; ++i)
    names += fmt::format("{}{}", i ? ", " : "", refused[i]->kernel);
  if (refused.size() > k_named) names += fmt::format(" and {} more", refused.size() - k_named);
  const Error* first = nullptr;
  for (const Receipt* r : refused)
    if (r->error) {
      first = &*r->error;
      break;
    }
  std::size_t kept =
      result.count(Outcome::hit) + result.count(Outcome::compiled) + result.count(Outcome::stale_replaced) +
      result.count(Outcome::remote_hit);
  return Error{first ? first->category : Category::store_full,
               fmt::format("{} of {} kernels compiled but could not be stored: {} ({}); the other {} kernels are "
                           "in the store (stored or found fresh); make room (a larger KCACHE_MAP_SIZE, free disk, "
                           "`kcache gc`) and build again",
                           refused.size(), result.receipts.size(), names,
                           first ? first->message : std::string("the store refused the write"), kept)};
}

Result<void> record_run(store::Store& store, const BuildResult& result, const util::Clock& clock) {
  store::UsageBatch batch;
  batch.time = clock.now();
  for (const auto& r : result.receipts)
    if (r.outcome == Outcome::hit) batch.used.emplace_back(r.ns, r.kernel);
  store::RunRecord run;
  run.time = batch.time;
  run.command = "build";
  run.kernels = static_cast<std::uint32_t>(result.receipts.size());
  run.hits = static_cast<std::uint32_t>(result.count(Outcome::hit));
  run.compiled = static_cast<std::uint32_t>(result.count(Outcome::compiled));
  run.stale_replaced = static_cast<std::uint32_t>(result.count(Outcome::stale_replaced));
  run.failed = static_cast<std::uint32_t>(result.count(Outcome::failed));
  run.refused_write = static_cast<std::uint32_t>(result.count(Outcome::refused_write));
  run.wall_us = static_cast<std::uint64_t>(result.wall_ms * 1000);
  run.bytes_written = result.bytes_written;
  for (std::size_t i = 0; i < k_phase_count; ++i) {
    const auto& t = result.totals.times[i];
    run.phases.push_back({std::string(phase_name(static_cast<Phase>(i))), static_cast<std::uint64_t>(t.wall_ms * 1000),
                          static_cast<std::uint64_t>(t.cpu_ms * 1000)});
  }
  run.remote_hit = static_cast<std::uint32_t>(result.count(Outcome::remote_hit));
  for (const auto& s : result.secondary) {
    run.remote_misses += static_cast<std::uint32_t>(s.misses);
    run.remote_refused += static_cast<std::uint32_t>(s.refused);
    run.remote_errors += static_cast<std::uint32_t>(s.errors);
    run.remote_bytes_read += s.bytes_read;
    run.remote_bytes_written += s.bytes_written;
  }
  batch.run = std::move(run);
  return store.record_usage(batch);
}

Result<BuildResult> build(const manifest::Manifest& manifest, store::Store& store, const BuildOptions& options) {
  Stopwatch total;
  PhaseTime wall;
  BuildResult result;
  std::vector<const KernelSpec*> specs;
  for (const auto& k : manifest.kernels)
    // CUDA kernels are the CUDA stage's (cuda_stage.hpp), run by build::run.
    if (k.language != definition::Language::cuda && (!options.shard || in_shard(k.name, *options.shard)))
      specs.push_back(&k);
  result.receipts.resize(specs.size());

  definition::FileCache files(manifest.root);
  std::vector<Job> jobs;

  // Fast path: one read transaction, no preprocessing.
  Stopwatch loop_watch;
  PhaseTime loop;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    std::optional<Explainer> explainer;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const KernelSpec& spec = *specs[i];
      Receipt& r = result.receipts[i];
      r.kernel = spec.name;
      r.ns = spirv_namespace(spec.target).name();
      WallLaps watch;
      auto id = definition::compute_id(spec);
      watch.lap(r.times[Phase::hash]);
      // The head only: a fresh entry needs nothing more, and most are.
      auto stored = reader.get_head(r.ns, spec.name);
      watch.lap(r.times[Phase::lookup]);
      Job job{i, std::move(id), std::nullopt, "not in " + r.ns};
      if (stored && !*stored && options.explain) {
        if (!explainer) explainer.emplace(reader, files, *options.toolchain);
        job.reason = describe(KCACHE_TRY(explainer->explain(spec)));
      }
      if (!stored) {
        // A corrupt record is rebuilt over; verify reports it separately.
        job.reason = "stored entry unreadable: " + stored.error().message;
      } else if (*stored) {
        auto a = check_direct(job.id, options.toolchain->fields(spec.optimize), recorded(**stored), files);
        watch.lap(r.times[Phase::hash]);
        if (a.state == Freshness::fresh) {
          r.outcome = Outcome::hit;
          r.key = (*stored)->key;
          r.bytes = (*stored)->payload_bytes;
          continue;
        }
        job.reason = "stale: " + describe_changes(essential_changes(std::move(a.changes)), 4);
        // The job needs the whole entry (its expansion may prove it fresh,
        // and then it is written back with new input hashes).
        if (auto full = reader.get(r.ns, spec.name); !full)
          job.reason = "stored entry unreadable: " + full.error().message;
        else job.stored = std::move(*full);
      }
      // No fresh entry: a failure record that is still current is reported
      // as it is; one whose inputs changed goes with the job.
      if (!options.retry_failed) {
        auto failure = reader.failure(r.ns, spec.name);
        watch.lap(r.times[Phase::lookup]);
        if (failure && *failure) {
          auto a = check_direct(job.id, options.toolchain->fields(spec.optimize), recorded(**failure), files);
          watch.lap(r.times[Phase::hash]);
          if (a.state == Freshness::fresh) {
            r.report_remembered(**failure);
            r.kept_stale = job.stored.has_value();
            continue;
          }
          const bool only_inputs = std::all_of(a.changes.begin(), a.changes.end(),
                                               [](const Change& c) { return c.name.starts_with("input:"); });
          if (only_inputs) job.failure = std::move(**failure);
        }
        // An unreadable failure record is compiled over (verify reports it).
      }
      r.reason = job.reason;
      jobs.push_back(std::move(job));
    }
    return {};
  }));
  loop_watch.lap(loop);
  share_loop_cpu(result.receipts, loop);
  std::size_t done_count = 0;
  for (const auto& r : result.receipts)
    if (((r.outcome == Outcome::hit && r.reason.empty()) || r.remembered) && options.on_receipt)
      options.on_receipt(r, ++done_count, specs.size());
  if (!options.on_receipt) done_count = specs.size() - jobs.size();

  // Workers expand and compile; this thread writes what they make.
  CompileOnce once;
  compile_and_write(
      store, result.receipts, result.bytes_written, jobs.size(), options.jobs,
      [&](std::size_t j) {
        const Job& job = jobs[j];
        const KernelSpec& spec = *specs[job.index];
        Done d = run_job(job, spec, files, once, options, result.receipts[job.index]);
        return Made{d.index, spirv_namespace(spec.target), std::move(d.entry), std::move(d.failure)};
      },
      [&](std::size_t i) {
        if (options.on_receipt) options.on_receipt(result.receipts[i], ++done_count, specs.size());
      });
  for (const auto& r : result.receipts) result.totals += r.times;
  if (options.secondary) result.secondary = options.secondary->stats();
  total.lap(wall);
  result.wall_ms = wall.wall_ms;
  return result;
}

}  // namespace kcache::build
