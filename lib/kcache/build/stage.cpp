// The build engine (contract in stage.hpp).
#include "kcache/build/stage.hpp"

#include "kcache/build/batch_writer.hpp"
#include "kcache/build/explain.hpp"
#include "kcache/core/key_binding.hpp"
#include "kcache/util/text.hpp"
#include "kcache/util/worker_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <mutex>
#include <thread>

namespace kcache::build {
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

Result<void> run_stage(const Backend& backend, std::vector<Unit> units, store::Store& store,
                       const StageOptions& options, BuildResult& result) {
  Stopwatch total;
  PhaseTime wall;
  const std::size_t base = result.receipts.size();
  result.receipts.resize(base + units.size());
  auto receipt = [&](std::size_t i) -> Receipt& { return result.receipts[base + i]; };
  definition::FileCache& files = *options.files;
  std::vector<Job> jobs;

  // 1. The warm path: one read transaction, no compiler.
  Stopwatch loop_watch;
  PhaseTime loop;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (std::size_t i = 0; i < units.size(); ++i) {
      const Unit& unit = units[i];
      Receipt& r = receipt(i);
      r.kernel = unit.spec->name;
      r.ns = unit.ns.name();
      if (unit.blocked) {
        fail_receipt(r, {*unit.blocked, FailurePhase::expand, false}, false);
        r.failed_phase.clear();
        continue;
      }
      WallLaps watch;
      Job job{i, base + i, std::nullopt, std::nullopt, {}};
      std::string reason = "not in " + r.ns;
      auto head = reader.get_head(r.ns, r.kernel);  // a fresh entry needs no more, and most are
      watch.lap(r.times[Phase::lookup]);
      if (!head) {
        // A corrupt record is rebuilt over; verify reports it separately.
        reason = "stored entry unreadable: " + head.error().message;
      } else if (*head) {
        const EntryHead& h = **head;
        if (auto bound = check_key_binding(h); !bound) {
          reason = "stored entry refused: " + bound.error().message;
        } else {
          Assessment a = judge(backend, unit, recorded(h), files);
          watch.lap(r.times[Phase::hash]);
          // An imported record's inputs are its own claim: its ir is believed
          // once an expansion here has given it (stage.hpp, step 1).
          const bool unconfirmed = !unit.ir && !inputs_believed(h.origin_kind);
          job.inputs_current = unconfirmed && a.state == Freshness::fresh;
          if (a.state == Freshness::fresh && !unconfirmed && !backend.checks_payload()) {
            r.outcome = Outcome::hit;
            r.key = h.key;
            r.bytes = h.payload_bytes;
            continue;
          }
          auto full = reader.get(r.ns, r.kernel);
          watch.lap(r.times[Phase::lookup]);
          if (!full || !*full) {
            reason = "stored entry unreadable: " + (full ? std::string("it vanished") : full.error().message);
          } else {
            if (a.state == Freshness::fresh && !unconfirmed) {
              if (auto ok = backend.accept(unit, **full); ok) {
                r.outcome = Outcome::hit;
                r.key = h.key;
                r.bytes = h.payload_bytes;
                continue;
              } else {
                reason = "stored entry refused: " + ok.error().message;
              }
            } else {
              reason = unconfirmed && a.state == Freshness::fresh
                           ? "imported: its inputs are confirmed by one expansion here"
                           : "stale: " + describe_changes(essential_changes(std::move(a.changes)), 4);
            }
            job.stored = std::move(**full);
          }
        }
      } else if (options.explain) {
        if (auto why = backend.explain_missing(reader, unit); !why.empty()) reason = std::move(why);
      }
      // No fresh entry: a failure record that is still current is reported
      // as it is; one whose inputs changed goes with the job.
      if (!options.retry_failed) {
        auto failure = reader.failure(r.ns, r.kernel);
        watch.lap(r.times[Phase::lookup]);
        // An unreadable or unbound failure record is compiled over.
        if (failure && *failure && check_key_binding(**failure)) {
          Assessment a = judge(backend, unit, recorded(**failure), files);
          watch.lap(r.times[Phase::hash]);
          if (a.state == Freshness::fresh) {
            r.report_remembered(**failure);
            r.kept_stale = job.stored.has_value();
            continue;
          }
          if (!unit.ir && only_inputs(a.changes)) job.failure = std::move(**failure);
        }
      }
      r.reason = std::move(reason);
      jobs.push_back(std::move(job));
    }
    return {};
  }));
  loop_watch.lap(loop);
  share_loop_cpu(std::span(result.receipts).subspan(base), loop);
  const std::size_t all = units.size();
  std::size_t done_count = 0;
  for (std::size_t i = 0; i < all; ++i) {
    const Receipt& r = receipt(i);
    const bool settled = (r.outcome == Outcome::hit && r.reason.empty()) || r.outcome == Outcome::failed;
    if (settled && options.on_receipt) options.on_receipt(r, ++done_count, all);
  }
  if (!options.on_receipt) done_count = all - jobs.size();

  // 2 and 3: prepare, resolve and compile on worker threads; this thread writes.
  const unsigned threads = util::worker_threads(options.jobs);
  std::size_t stage_bytes = 0;
  Result<void> compiled_all;
  produce_and_write(
      store, result.receipts, stage_bytes, jobs.size(),
      [&](const std::function<void(Made)>& emit) {
        std::mutex mutex;
        std::vector<std::size_t> to_compile;  // into jobs
        util::parallel_for(jobs.size(), threads, [&](std::size_t j) {
          Job& job = jobs[j];
          const Unit& unit = units[job.unit];
          Receipt& r = result.receipts[job.receipt];
          const auto toolchain = unit.ir ? std::nullopt : backend.direct_toolchain(unit);
          if (options.secondary && toolchain && !job.inputs_current) {
            Stopwatch watch;
            auto fetched = fetch_direct(backend, unit, options, *toolchain);
            watch.lap(r.times[Phase::lookup]);
            if (fetched) {
              r.key = fetched->key;
              r.outcome = Outcome::remote_hit;
              r.bytes = fetched->payload.size();
              emit(Made{job.receipt, backend.write_namespace(unit), std::move(*fetched), std::nullopt});
              return;
            }
          }
          // Offers an entry whose key this process computed to the remotes
          // by its inputs, for the next runner with an empty store.
          auto publish_direct = [&](const Namespace& ns, const Entry& e) {
            if (options.secondary && toolchain)
              options.secondary->publish_direct(ns, e, direct_key(unit.id, *toolchain));
          };
          if (unit.ir) {
            job.prepared = {*unit.ir, unit.inputs, nullptr};
          } else if (auto p = backend.prepare(unit, r.times); p) {
            job.prepared = std::move(*p);
          } else {
            // Not remembered: cheap to find again, and often fixed by adding
            // a file no recorded input would notice.
            fail_receipt(r, p.error(), job.stored.has_value());
            emit(Made{job.receipt, unit.ns, std::nullopt, std::nullopt});
            return;
          }
          r.key = {unit.id.hash, job.prepared.ir.hash};
          if (job.stored && job.stored->key == r.key && backend.accept(unit, *job.stored)) {
            // An input changed in a way the preprocessor erases, or an
            // imported entry's key confirmed: a hit, and recording this
            // checkout's input hashes keeps the next run on the warm path.
            r.outcome = Outcome::hit;
            r.reason.clear();
            Entry refreshed = std::move(*job.stored);
            refreshed.inputs = job.prepared.inputs;
            if (refreshed.origin_kind == OriginKind::imported) refreshed.origin_kind = OriginKind::confirmed;
            r.bytes = refreshed.payload.size();
            emit(Made{job.receipt, backend.write_namespace(unit), std::move(refreshed), std::nullopt});
            return;
          }
          // A remote value is addressed by the whole key, so it is asked only
          // now, after the preparation that gives the ir half.
          if (options.secondary) {
            Stopwatch watch;
            auto fetched = options.secondary->fetch(unit.ns, r.kernel, r.key, [&](const Entry& e) -> Result<void> {
              return check_remote_entry(backend, unit, e, *options.clock);
            });
            watch.lap(r.times[Phase::lookup]);
            if (fetched) {
              fetched->inputs = job.prepared.inputs;  // this checkout's files, which gave its key
              fetched->origin_kind = OriginKind::confirmed;
              r.outcome = Outcome::remote_hit;
              r.bytes = fetched->payload.size();
              // A remote filled before direct values (or by an unsigned
              // writer) learns them from the runners that read it.
              publish_direct(backend.write_namespace(unit), *fetched);
              emit(Made{job.receipt, backend.write_namespace(unit), std::move(*fetched), std::nullopt});
              return;
            }
          }
          if (job.failure && job.failure->ir_known && job.failure->key == r.key) {
            // As the hit above: the same failure, learning the new input hashes.
            r.report_remembered(*job.failure);
            r.kept_stale = job.stored.has_value();
            Failure refreshed = std::move(*job.failure);
            refreshed.inputs = job.prepared.inputs;
            emit(Made{job.receipt, unit.ns, std::nullopt, std::move(refreshed)});
            return;
          }
          std::lock_guard lock(mutex);
          to_compile.push_back(j);
        });
        // Manifest order, so that which of two identical kernels compiles
        // (and which reuses it) does not depend on thread timing.
        std::sort(to_compile.begin(), to_compile.end());
        std::vector<Pending> pending;
        for (std::size_t j : to_compile) {
          const Job& job = jobs[j];
          Receipt& r = result.receipts[job.receipt];
          pending.push_back({&units[job.unit], r.key, &job.prepared, &r.times});
        }
        compiled_all = backend.compile(pending, threads, [&](std::size_t k, Compiled compiled) {
          const Job& job = jobs[to_compile[k]];
          const Unit& unit = units[job.unit];
          Receipt& r = result.receipts[job.receipt];
          if (!compiled) {
            fail_receipt(r, compiled.error(), job.stored.has_value());
            std::optional<Failure> failure;
            if (compiled.error().remember) failure = make_failure(unit, r.key, job.prepared, compiled.error(), options);
            emit(Made{job.receipt, unit.ns, std::nullopt, std::move(failure)});
            return;
          }
          r.warnings = std::move(compiled->warnings);
          r.shared_compile = compiled->shared_compile;
          r.outcome = job.stored ? Outcome::stale_replaced : Outcome::compiled;
          const Namespace ns = backend.write_namespace(unit);
          Entry e = make_entry(unit, r.key, job.prepared, std::move(*compiled), options);
          r.bytes = e.payload.size();
          if (options.secondary) {
            options.secondary->publish(ns, e);
            if (auto toolchain = unit.ir ? std::nullopt : backend.direct_toolchain(unit))
              options.secondary->publish_direct(ns, e, direct_key(unit.id, *toolchain));
          }
          emit(Made{job.receipt, ns, std::move(e), std::nullopt});
        });
      },
      [&](std::size_t i) {
        if (options.on_receipt) options.on_receipt(result.receipts[i], ++done_count, all);
      });
  KCACHE_CHECK(compiled_all);
  for (std::size_t i = 0; i < all; ++i) result.totals += receipt(i).times;
  result.bytes_written += stage_bytes;
  if (options.secondary) result.secondary = options.secondary->stats();
  total.lap(wall);
  result.wall_ms += wall.wall_ms;
  return {};
}

}  // namespace kcache::build
