// The build engine (contract in stage.hpp).
#include "kcache/engine/stage.hpp"

#include "kcache/core/key_binding.hpp"
#include "kcache/engine/batch_writer.hpp"
#include "kcache/engine/explain.hpp"
#include "kcache/util/text.hpp"
#include "kcache/util/worker_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <mutex>
#include <thread>

namespace kcache::engine {
namespace {

/// A unit the warm path could not settle.
struct Job {
  std::size_t unit = 0;            ///< into the units
  std::size_t receipt = 0;         ///< into result.receipts
  std::optional<Entry> stored;     ///< its previous entry: stale, or not yet confirmed here
  std::optional<Failure> failure;  ///< a failure record whose inputs changed
  /// The stored entry's recorded inputs are this checkout's (an imported
  /// entry one expansion here will confirm): no remote is asked first.
  bool inputs_current = false;
  Prepared prepared;
};

/// What the engine checks of every value a remote hands it, beyond the
/// remote's own import check: the key bound to its fields, a build time not
/// in the future (import's rollback rule: it would outrank every later good
/// build) and the backend's accept().
Result<void> check_remote_entry(const Backend& backend, const Unit& unit, const Entry& e, const util::Clock& clock) {
  KCACHE_CHECK(check_key_binding(e));
  if (e.created > clock.now() + k_remote_clock_skew_seconds)
    return fail(Category::corruption, "remote value: built {}, in the future (this machine's clock says {})",
                util::iso_time(e.created), util::iso_time(clock.now()));
  return backend.accept(unit, e);
}

/// Direct mode through the remotes (stage.hpp, step 2): the entry a remote
/// filed under the unit's direct key whose recorded inputs are this
/// checkout's files, marked confirmed (a trusted signer vouched that those
/// inputs gave its key), or nullopt.
std::optional<Entry> fetch_direct(const Backend& backend, const Unit& unit, const StageOptions& options,
                                  const std::vector<Field>& toolchain) {
  auto fetched = options.secondary->fetch_direct(
      unit.ns, unit.spec->name, unit.id.hash, direct_key(unit.id, toolchain), [&](const Entry& e) -> Result<void> {
        KCACHE_CHECK(check_remote_entry(backend, unit, e, *options.clock));
        Assessment a = check_direct(unit.id, toolchain, recorded(e), *options.files);
        if (a.state != Freshness::fresh)
          return fail(Category::corruption, "remote value: recorded for other inputs ({})",
                      describe_changes(a.changes, 2));
        return {};
      });
  if (fetched) fetched->origin_kind = OriginKind::confirmed;
  return fetched;
}

/// The warm path's per-unit clock: wall time only. Reading a thread's CPU
/// clock is a system call (no vDSO), and three reads per kernel were 16% of
/// a 1,500-kernel warm build's CPU. So the warm path reads the monotonic
/// clock (vDSO) per phase and the CPU clock once around the whole loop, and
/// share_loop_cpu() gives each lap the loop's CPU/wall ratio: the loop runs
/// on one thread and never waits, so CPU and wall differ only by preemption.
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

void share_loop_cpu(std::span<Receipt> receipts, const PhaseTime& loop) {
  const double ratio = loop.wall_ms > 0 ? std::min(1.0, loop.cpu_ms / loop.wall_ms) : 1.0;
  for (auto& r : receipts)
    for (Phase p : {Phase::hash, Phase::lookup}) r.times[p].cpu_ms = r.times[p].wall_ms * ratio;
}

bool only_inputs(const std::vector<Change>& changes) {
  return std::all_of(changes.begin(), changes.end(), [](const Change& c) { return c.name.starts_with("input:"); });
}

/// One rule for "is this record current for this unit": the key itself when
/// the unit's key is known up front, else the direct comparison of id,
/// toolchain and input contents (freshness.hpp).
Assessment judge(const Backend& backend, const Unit& unit, const Recorded& stored, definition::FileCache& files) {
  if (!unit.ir) return check_direct(unit.id, backend.toolchain(unit, stored), stored, files);
  Assessment a;
  const Key key{unit.id.hash, unit.ir->hash};
  if (stored.key == key) {
    a.state = Freshness::fresh;
    return a;
  }
  a.state = Freshness::stale;
  a.changes = definition::diff_fields(stored.id_fields, unit.id.fields);
  // A record's product fields come from its compile, never from a unit's
  // key: they are no change.
  std::vector<Field> stored_ir;
  for (const auto& f : stored.ir_fields)
    if (!is_product_field(IrRule::fields, f.first) && !is_product_field(IrRule::pipeline, f.first))
      stored_ir.push_back(f);
  for (auto& c : definition::diff_fields(stored_ir, unit.ir->fields)) a.changes.push_back(std::move(c));
  if (a.changes.empty()) a.changes.push_back({"key", stored.key.ir.hex(), key.ir.hex()});
  return a;
}

void fail_receipt(Receipt& r, const Failed& f, bool kept_stale) {
  r.outcome = Outcome::failed;
  r.error = f.error;
  r.failed_phase = std::string(failure_phase_name(f.phase));
  r.kept_stale = kept_stale;
}

Entry make_entry(const Unit& unit, const Key& key, const Prepared& prepared, Product product,
                 const StageOptions& options) {
  Entry e;
  e.kernel = unit.spec->name;
  e.key = key;
  e.id_fields = unit.id.fields;
  e.ir_fields = prepared.ir.fields;
  for (auto& f : product.product_fields) e.ir_fields.push_back(std::move(f));
  e.inputs = prepared.inputs;
  e.payload_kind = product.kind;
  e.payload = std::move(product.payload);
  seal_payload(e);
  e.created = options.clock->now();
  e.origin_kind = OriginKind::built;
  e.origin_detail = options.origin;
  e.validation = product.validation;
  e.validation_note = std::move(product.validation_note);
  e.diagnostics = std::move(product.diagnostics);
  return e;
}

Failure make_failure(const Unit& unit, const Key& key, const Prepared& prepared, const Failed& failed,
                     const StageOptions& options) {
  Failure f;
  f.kernel = unit.spec->name;
  f.phase = failed.phase;
  f.key = key;
  f.ir_known = true;
  f.id_fields = unit.id.fields;
  f.ir_fields = prepared.ir.fields;
  f.inputs = prepared.inputs;
  f.category = failed.error.category;
  f.message = bound_failure_message(failed.error.message);
  f.created = options.clock->now();
  f.origin_detail = options.origin;
  return f;
}

/// Runs `produce(emit)` on a thread of its own while the calling thread
/// writes what it emits through one BatchWriter, so compiling never waits
/// for a write transaction. `done(receipt)` is called on the calling thread
/// once per emitted result, after its write committed or was refused (at
/// once when there was nothing to write). With no `work` (every unit
/// settled on the warm path) produce() runs here: a warm launcher command
/// starts no thread.
void produce_and_write(store::Store& store, std::vector<Receipt>& receipts, std::size_t& bytes_written,
                       std::size_t work, const std::function<void(const std::function<void(Made)>&)>& produce,
                       const std::function<void(std::size_t)>& done) {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Made> queue;
  bool finished = false;
  auto emit = [&](Made made) {
    std::lock_guard lock(mutex);
    queue.push_back(std::move(made));
    ready.notify_one();
  };
  auto run = [&] {
    produce(emit);
    std::lock_guard lock(mutex);
    finished = true;
    ready.notify_one();
  };
  std::optional<std::jthread> producer;
  if (work == 0) {
    run();
  } else {
    try {
      producer.emplace(run);
    } catch (const std::system_error&) {
      run();  // no thread to spare: produce first, then write (util/worker_pool.hpp's rule)
    }
  }
  BatchWriter writer(store, receipts, bytes_written);
  for (bool last = false; !last;) {
    std::unique_lock lock(mutex);
    ready.wait_for(lock, BatchWriter::k_batch_interval, [&] { return !queue.empty() || finished; });
    std::deque<Made> got;
    got.swap(queue);
    last = finished && got.empty();
    lock.unlock();
    for (auto& m : got) {
      if (m.failure) writer.add_failure(m.ns, std::move(*m.failure));
      if (m.entry) writer.add(m.ns, m.receipt, std::move(*m.entry));
      else done(m.receipt);
    }
    if (writer.due() || last) writer.flush(done);
  }
}

}  // namespace

Result<void> PerUnitBackend::compile(std::span<const Pending> pending, unsigned threads,
                                     const std::function<void(std::size_t, Compiled)>& done) const {
  before_compiles(pending);
  std::mutex mutex;
  util::parallel_for(pending.size(), threads, [&](std::size_t k) {
    Compiled c = compile_one(pending[k]);
    std::lock_guard lock(mutex);
    done(k, std::move(c));
  });
  return {};
}

StageOptions stage_options(const BuildOptions& options, definition::FileCache& files) {
  StageOptions s;
  s.jobs = options.jobs;
  s.retry_failed = options.retry_failed;
  s.explain = options.explain;
  s.origin = options.origin;
  s.clock = options.clock;
  s.secondary = options.secondary;
  s.on_receipt = options.on_receipt;
  s.files = &files;
  return s;
}

namespace {

/// One run of the engine over a stage's units (run_stage): the warm path
/// (step 1), then each unit it left resolved on the worker threads (step 2)
/// and what is left compiled (step 3), while this thread writes.
class StageRun {
 public:
  StageRun(const Backend& backend, std::vector<Unit> units, store::Store& store, const StageOptions& options,
           BuildResult& result)
      : m_backend(backend),
        m_units(std::move(units)),
        m_store(store),
        m_options(options),
        m_result(result),
        m_base(result.receipts.size()) {
    m_result.receipts.resize(m_base + m_units.size());
  }

  Result<void> run() {
    Stopwatch total;
    PhaseTime wall;
    KCACHE_CHECK(warm_path());
    const std::size_t all = m_units.size();
    for (std::size_t i = 0; i < all; ++i) {
      const Receipt& r = receipt(i);
      const bool settled = (r.outcome == Outcome::hit && r.reason.empty()) || r.outcome == Outcome::failed;
      if (settled && m_options.on_receipt) m_options.on_receipt(r, ++m_done, all);
    }
    if (!m_options.on_receipt) m_done = all - m_jobs.size();

    std::size_t stage_bytes = 0;
    Result<void> compiled_all;
    produce_and_write(
        m_store, m_result.receipts, stage_bytes, m_jobs.size(),
        [&](const Emit& emit) { compiled_all = resolve_and_compile(emit); },
        [&](std::size_t i) {
          if (m_options.on_receipt) m_options.on_receipt(m_result.receipts[i], ++m_done, all);
        });
    KCACHE_CHECK(compiled_all);
    for (std::size_t i = 0; i < all; ++i) m_result.totals += receipt(i).times;
    m_result.bytes_written += stage_bytes;
    if (m_options.secondary) m_result.secondary = m_options.secondary->stats();
    total.lap(wall);
    m_result.wall_ms += wall.wall_ms;
    return {};
  }

 private:
  using Emit = std::function<void(Made)>;

  Receipt& receipt(std::size_t unit) { return m_result.receipts[m_base + unit]; }

  /// Step 1: one read transaction, no compiler. Units it settles get their
  /// receipts; the rest become jobs.
  Result<void> warm_path() {
    Stopwatch loop_watch;
    PhaseTime loop;
    KCACHE_CHECK(m_store.read([&](store::Reader& reader) -> Result<void> {
      for (std::size_t i = 0; i < m_units.size(); ++i) settle_warm(reader, i);
      return {};
    }));
    loop_watch.lap(loop);
    share_loop_cpu(std::span(m_result.receipts).subspan(m_base), loop);
    return {};
  }

  /// Step 1 for unit `i`: a hit, a remembered failure, or a job (with the
  /// stale entry or changed failure record it found, and why).
  void settle_warm(store::Reader& reader, std::size_t i) {
    const Unit& unit = m_units[i];
    Receipt& r = receipt(i);
    r.kernel = unit.spec->name;
    r.ns = unit.ns.name();
    if (unit.blocked) {
      fail_receipt(r, {*unit.blocked, FailurePhase::expand, false}, false);
      r.failed_phase.clear();
      return;
    }
    WallLaps watch;
    Job job{i, m_base + i, std::nullopt, std::nullopt, false, {}};
    std::string reason = "not in " + r.ns;
    if (stored_entry_hits(reader, unit, r, job, reason, watch)) return;
    // No fresh entry: a failure record that is still current is reported
    // as it is; one whose inputs changed goes with the job.
    if (!m_options.retry_failed) {
      auto failure = reader.failure(r.ns, r.kernel);
      watch.lap(r.times[Phase::lookup]);
      // An unreadable or unbound failure record is compiled over.
      if (failure && *failure && check_key_binding(**failure)) {
        Assessment a = judge(m_backend, unit, recorded(**failure), *m_options.files);
        watch.lap(r.times[Phase::hash]);
        if (a.state == Freshness::fresh) {
          r.report_remembered(**failure);
          r.kept_stale = job.stored.has_value();
          return;
        }
        if (!unit.ir && only_inputs(a.changes)) job.failure = std::move(**failure);
      }
    }
    r.reason = std::move(reason);
    m_jobs.push_back(std::move(job));
  }

  /// Whether the stored entry of `unit` is a hit (its receipt filled); else
  /// `reason` says why not and `job` keeps the entry when it was readable.
  bool stored_entry_hits(store::Reader& reader, const Unit& unit, Receipt& r, Job& job, std::string& reason,
                         WallLaps& watch) {
    auto head = reader.get_head(r.ns, r.kernel);  // a fresh entry needs no more, and most are
    watch.lap(r.times[Phase::lookup]);
    if (!head) {
      // A corrupt record is rebuilt over; verify reports it separately.
      reason = "stored entry unreadable: " + head.error().message;
      return false;
    }
    if (!*head) {
      if (m_options.explain)
        if (auto why = m_backend.explain_missing(reader, unit); !why.empty()) reason = std::move(why);
      return false;
    }
    const EntryHead& h = **head;
    if (auto bound = check_key_binding(h); !bound) {
      reason = "stored entry refused: " + bound.error().message;
      return false;
    }
    Assessment a = judge(m_backend, unit, recorded(h), *m_options.files);
    watch.lap(r.times[Phase::hash]);
    // An imported record's inputs are its own claim: its ir is believed
    // once an expansion here has given it (stage.hpp, step 1).
    const bool unconfirmed = !unit.ir && !inputs_believed(h.origin_kind);
    const bool fresh = a.state == Freshness::fresh && !unconfirmed;
    job.inputs_current = unconfirmed && a.state == Freshness::fresh;
    auto hit = [&] {
      r.outcome = Outcome::hit;
      r.key = h.key;
      r.bytes = h.payload_bytes;
      return true;
    };
    if (fresh && !m_backend.checks_payload()) return hit();
    auto full = reader.get(r.ns, r.kernel);
    watch.lap(r.times[Phase::lookup]);
    if (!full || !*full) {
      reason = "stored entry unreadable: " + (full ? std::string("it vanished") : full.error().message);
      return false;
    }
    if (fresh) {
      if (auto ok = m_backend.accept(unit, **full); ok) return hit();
      else reason = "stored entry refused: " + ok.error().message;
    } else {
      reason = job.inputs_current ? "imported: its inputs are confirmed by one expansion here"
                                  : "stale: " + describe_changes(essential_changes(std::move(a.changes)), 4);
    }
    job.stored = std::move(**full);
    return false;
  }

  /// Steps 2 and 3 on the worker threads: each job resolved, then what is
  /// left compiled in manifest order.
  Result<void> resolve_and_compile(const Emit& emit) {
    const unsigned threads = util::worker_threads(m_options.jobs);
    std::mutex mutex;
    std::vector<std::size_t> to_compile;  // into m_jobs
    util::parallel_for(m_jobs.size(), threads, [&](std::size_t j) {
      if (resolve(m_jobs[j], emit)) return;
      std::lock_guard lock(mutex);
      to_compile.push_back(j);
    });
    // Manifest order, so that which of two identical kernels compiles (and
    // which reuses it) does not depend on thread timing.
    std::sort(to_compile.begin(), to_compile.end());
    std::vector<Pending> pending;
    for (std::size_t j : to_compile) {
      const Job& job = m_jobs[j];
      Receipt& r = m_result.receipts[job.receipt];
      pending.push_back({&m_units[job.unit], r.key, &job.prepared, &r.times});
    }
    return m_backend.compile(pending, threads, [&](std::size_t k, Compiled compiled) {
      compiled_one(m_jobs[to_compile[k]], std::move(compiled), emit);
    });
  }

  /// Step 2 for one job: served by its recorded inputs from a remote, or
  /// prepared and then a stored entry or failure record of that key, or a
  /// remote value of it. False: it must be compiled.
  bool resolve(Job& job, const Emit& emit) {
    const Unit& unit = m_units[job.unit];
    Receipt& r = m_result.receipts[job.receipt];
    const auto toolchain = unit.ir ? std::nullopt : m_backend.direct_toolchain(unit);
    if (m_options.secondary && toolchain && !job.inputs_current) {
      Stopwatch watch;
      auto fetched = fetch_direct(m_backend, unit, m_options, *toolchain);
      watch.lap(r.times[Phase::lookup]);
      if (fetched) {
        r.key = fetched->key;
        r.outcome = Outcome::remote_hit;
        r.bytes = fetched->payload.size();
        emit(Made{job.receipt, m_backend.write_namespace(unit), std::move(*fetched), std::nullopt});
        return true;
      }
    }
    if (unit.ir) {
      job.prepared = {*unit.ir, unit.inputs, nullptr};
    } else if (auto p = m_backend.prepare(unit, r.times); p) {
      job.prepared = std::move(*p);
    } else {
      // Not remembered: cheap to find again, and often fixed by adding a
      // file no recorded input would notice.
      fail_receipt(r, p.error(), job.stored.has_value());
      emit(Made{job.receipt, unit.ns, std::nullopt, std::nullopt});
      return true;
    }
    r.key = {unit.id.hash, job.prepared.ir.hash};
    if (job.stored && job.stored->key == r.key && m_backend.accept(unit, *job.stored)) {
      // An input changed in a way the preprocessor erases, or an imported
      // entry's key confirmed: a hit, and recording this checkout's input
      // hashes keeps the next run on the warm path.
      r.outcome = Outcome::hit;
      r.reason.clear();
      Entry refreshed = std::move(*job.stored);
      refreshed.inputs = job.prepared.inputs;
      if (refreshed.origin_kind == OriginKind::imported) refreshed.origin_kind = OriginKind::confirmed;
      r.bytes = refreshed.payload.size();
      emit(Made{job.receipt, m_backend.write_namespace(unit), std::move(refreshed), std::nullopt});
      return true;
    }
    if (fetch_by_key(job, toolchain, emit)) return true;
    if (job.failure && job.failure->ir_known && job.failure->key == r.key) {
      // As the hit above: the same failure, learning the new input hashes.
      r.report_remembered(*job.failure);
      r.kept_stale = job.stored.has_value();
      Failure refreshed = std::move(*job.failure);
      refreshed.inputs = job.prepared.inputs;
      emit(Made{job.receipt, unit.ns, std::nullopt, std::move(refreshed)});
      return true;
    }
    return false;
  }

  /// A remote value of exactly the prepared key (it is addressed by the
  /// whole key, so it is asked only after the preparation that gives the ir
  /// half); offered again under this checkout's recorded inputs.
  bool fetch_by_key(Job& job, const std::optional<std::vector<Field>>& toolchain, const Emit& emit) {
    if (!m_options.secondary) return false;
    const Unit& unit = m_units[job.unit];
    Receipt& r = m_result.receipts[job.receipt];
    Stopwatch watch;
    auto fetched = m_options.secondary->fetch(unit.ns, r.kernel, r.key, [&](const Entry& e) -> Result<void> {
      return check_remote_entry(m_backend, unit, e, *m_options.clock);
    });
    watch.lap(r.times[Phase::lookup]);
    if (!fetched) return false;
    fetched->inputs = job.prepared.inputs;  // this checkout's files, which gave its key
    fetched->origin_kind = OriginKind::confirmed;
    r.outcome = Outcome::remote_hit;
    r.bytes = fetched->payload.size();
    const Namespace ns = m_backend.write_namespace(unit);
    // A remote filled before direct values (or by an unsigned writer)
    // learns them from the runners that read it.
    if (toolchain) m_options.secondary->publish_direct(ns, *fetched, direct_key(unit.id, *toolchain));
    emit(Made{job.receipt, ns, std::move(*fetched), std::nullopt});
    return true;
  }

  /// Step 3 for one job: its entry, or its failure record when the failure
  /// is the kernel's own; offered to the remotes; written by this thread.
  void compiled_one(const Job& job, Compiled compiled, const Emit& emit) {
    const Unit& unit = m_units[job.unit];
    Receipt& r = m_result.receipts[job.receipt];
    if (!compiled) {
      fail_receipt(r, compiled.error(), job.stored.has_value());
      std::optional<Failure> failure;
      if (compiled.error().remember) failure = make_failure(unit, r.key, job.prepared, compiled.error(), m_options);
      emit(Made{job.receipt, unit.ns, std::nullopt, std::move(failure)});
      return;
    }
    r.warnings = std::move(compiled->warnings);
    r.shared_compile = compiled->shared_compile;
    r.outcome = job.stored ? Outcome::stale_replaced : Outcome::compiled;
    const Namespace ns = m_backend.write_namespace(unit);
    Entry e = make_entry(unit, r.key, job.prepared, std::move(*compiled), m_options);
    r.bytes = e.payload.size();
    if (m_options.secondary) {
      const auto toolchain = unit.ir ? std::nullopt : m_backend.direct_toolchain(unit);
      m_options.secondary->publish(ns, e, toolchain ? std::optional(direct_key(unit.id, *toolchain)) : std::nullopt);
    }
    emit(Made{job.receipt, ns, std::move(e), std::nullopt});
  }

  const Backend& m_backend;
  std::vector<Unit> m_units;
  store::Store& m_store;
  const StageOptions& m_options;
  BuildResult& m_result;
  const std::size_t m_base;  ///< the first receipt of this stage in m_result
  std::vector<Job> m_jobs;
  std::size_t m_done = 0;  ///< receipts reported to on_receipt
};

}  // namespace

Result<void> run_stage(const Backend& backend, std::vector<Unit> units, store::Store& store,
                       const StageOptions& options, BuildResult& result) {
  return StageRun(backend, std::move(units), store, options, result).run();
}

}  // namespace kcache::engine
