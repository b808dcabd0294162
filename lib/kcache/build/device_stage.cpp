// The device stage of a vulkan build (contract in device_build.hpp).
#include "kcache/build/device_stage.hpp"

#include "kcache/build/batch_writer.hpp"
#include "kcache/device/pipeline_entry.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

namespace kcache::build {
namespace {

using definition::KernelSpec;

/// A kernel whose pipeline must be created.
struct Item {
  std::size_t receipt;  ///< into the stage's receipts
  const KernelSpec* spec;
  Entry spirv;  ///< the stored SPIR-V entry (its payload goes to the worker)
  device::PipelineRecipe recipe;
  bool had_entry;  ///< a previous (stale or refused) entry exists
};

/// Asks `tier` for each item's pipeline entry on up to `threads` threads;
/// fetched[i] is items[i]'s checked entry or nullopt. The time asking goes to
/// the receipt's lookup phase.
std::vector<std::optional<Entry>> fetch_remote(SecondaryTier& tier, const device::DeviceInfo& device,
                                               const std::vector<Item>& items, std::vector<Receipt>& receipts,
                                               unsigned threads) {
  std::vector<std::optional<Entry>> fetched(items.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < items.size();) {
      const Item& item = items[i];
      Receipt& r = receipts[item.receipt];
      Stopwatch watch;
      // Beyond the import's check (the blob against this device's record):
      // the value was built from this build's module, entry point and
      // specialization, as import checks a pipeline's module is the store's.
      auto same_recipe = [&item](const Entry& e) -> Result<void> {
        auto got = KCACHE_TRY(device::read_pipeline_recipe(e));
        if (!(got == item.recipe))
          return fail(Category::corruption,
                      "remote value: a pipeline built from another module, entry point or specialization");
        return {};
      };
      fetched[i] = tier.fetch(device.ns, item.spec->name, r.key, same_recipe);
      watch.lap(r.times[Phase::lookup]);
    }
  };
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < std::min<std::size_t>(threads, items.size()); ++t) pool.emplace_back(work);
  work();
  return fetched;
}

/// Why a stored vulkan entry with another key is stale, for --explain.
std::string recipe_change(const Entry& old, const Key& key, const device::PipelineRecipe& now) {
  if (old.key.id != key.id) return "stale: the kernel's identity changed";
  auto before = device::read_pipeline_recipe(old);
  if (!before) return "stale: " + before.error().message;
  std::vector<std::string> what;
  if (before->spirv_namespace != now.spirv_namespace || before->spirv_digest != now.spirv_digest)
    what.emplace_back("SPIR-V module");
  if (before->entry != now.entry) what.emplace_back("entry point");
  if (!(before->spec == now.spec)) what.emplace_back("specialization constants");
  if (what.empty()) what.emplace_back("pipeline recipe");
  return fmt::format("stale: {} changed", fmt::join(what, ", "));
}

}  // namespace

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
                                const device::DeviceInfo& device, const DeviceBuildOptions& options,
                                BuildResult& result) {
  Stopwatch total;
  PhaseTime wall;
  std::map<std::string_view, const KernelSpec*> specs;
  for (const auto& k : manifest.kernels) specs.emplace(k.name, &k);
  const std::string dev_ns = device.ns.name();

  std::vector<Receipt> receipts;
  std::vector<Item> items;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const Receipt& s : result.receipts) {
      auto it = specs.find(s.kernel);
      if (it == specs.end() || it->second->stage != definition::Stage::compute) continue;
      const KernelSpec& spec = *it->second;
      Receipt& r = receipts.emplace_back();
      r.kernel = s.kernel;
      r.ns = dev_ns;
      if (s.outcome == Outcome::failed || s.outcome == Outcome::refused_write) {
        r.outcome = Outcome::failed;
        r.error =
            Error{Category::compile_failed, "no SPIR-V module to create the pipeline from (see its SPIR-V stage)"};
        continue;
      }
      Stopwatch watch;
      auto spirv = reader.get(s.ns, s.kernel);
      watch.lap(r.times[Phase::lookup]);
      if (!spirv || !*spirv) {
        r.outcome = Outcome::failed;
        r.error = spirv ? Error{Category::not_found, fmt::format("no SPIR-V entry in {}", s.ns)} : spirv.error();
        continue;
      }
      device::PipelineRecipe recipe{s.ns, (*spirv)->payload_digest, spec.entry, spec_values(spec)};
      r.key = {(*spirv)->key.id, device::recipe_hash(recipe)};
      watch.lap(r.times[Phase::hash]);
      auto stored = reader.get(dev_ns, s.kernel);
      watch.lap(r.times[Phase::lookup]);
      const bool stored_fresh = stored && *stored && (*stored)->key == r.key &&
                                device::check_blob_against_record((*stored)->payload, device.record());
      // The device stage's rule for its entries, key equality, decides
      // whether a refused pipeline's failure record still applies.
      if (!stored_fresh && !options.retry_failed) {
        auto failure = reader.failure(dev_ns, s.kernel);
        watch.lap(r.times[Phase::lookup]);
        if (failure && *failure && (*failure)->key == r.key) {
          const Failure& f = **failure;
          r.outcome = Outcome::failed;
          r.remembered = true;
          r.failed_phase = std::string(failure_phase_name(f.phase));
          r.failed_at = f.created;
          r.error = Error{f.category, f.message};
          r.kept_stale = stored && *stored;
          continue;
        }
      }
      bool had_entry = false;
      r.reason = "new";
      if (!stored) {
        r.reason = "stored entry unreadable: " + stored.error().message;
      } else if (*stored) {
        had_entry = true;
        if ((*stored)->key != r.key) {
          r.reason = recipe_change(**stored, r.key, recipe);
        } else if (auto ok = device::check_blob_against_record((*stored)->payload, device.record()); !ok) {
          r.reason = "stored blob refused: " + ok.error().message;
        } else {
          r.outcome = Outcome::hit;
          r.reason.clear();
          r.bytes = (*stored)->payload.size();
          continue;
        }
      }
      items.push_back({receipts.size() - 1, &spec, std::move(**spirv), std::move(recipe), had_entry});
    }
    return {};
  }));

  const std::size_t total_count = receipts.size();
  std::size_t done_count = 0;
  if (options.on_receipt)
    for (const auto& r : receipts)
      if ((r.outcome == Outcome::hit && r.reason.empty()) || r.outcome == Outcome::failed)  // remembered too
        options.on_receipt(r, ++done_count, total_count);

  const unsigned threads = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::size_t stage_bytes = 0;  // added to the build's total at the end
  BatchWriter writer(store, receipts, stage_bytes);
  auto written = [&](std::size_t i) {
    if (options.on_receipt) options.on_receipt(receipts[i], ++done_count, total_count);
  };

  // Remote hits are stored as they are; only the rest go to a worker.
  if (options.secondary && !items.empty()) {
    auto fetched = fetch_remote(*options.secondary, device, items, receipts, threads);
    std::vector<Item> rest;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!fetched[i]) {
        rest.push_back(std::move(items[i]));
        continue;
      }
      Receipt& r = receipts[items[i].receipt];
      fetched[i]->inputs = items[i].spirv.inputs;  // this checkout's files, as the SPIR-V stage records them
      r.outcome = Outcome::remote_hit;
      r.bytes = fetched[i]->payload.size();
      writer.add(device.ns, items[i].receipt, std::move(*fetched[i]));
    }
    items = std::move(rest);
    writer.flush(written);
  }

  std::vector<worker::PipelineJob> jobs;
  jobs.reserve(items.size());
  for (const Item& item : items)
    jobs.push_back({item.spec->name, item.spec->target, item.recipe.entry, item.recipe.spec, item.spirv.payload, {}});

  worker::WorkerOptions worker = options.worker;
  worker.threads = threads;
  KCACHE_CHECK(worker::run_pipeline_jobs(
      device, worker::JobMode::build, jobs, worker, [&](std::size_t j, worker::PipelineOutcome&& o) {
        Item& item = items[j];
        Receipt& r = receipts[item.receipt];
        r.times[Phase::pipeline].wall_ms += o.create_ms;
        r.times[Phase::pipeline].cpu_ms += o.cpu_ms;
        if (o.error) {
          r.outcome = Outcome::failed;
          r.failed_phase = std::string(failure_phase_name(FailurePhase::pipeline));
          r.kept_stale = item.had_entry;
          // What the driver refused is remembered. A device that went away
          // (no worker, a lost device) says nothing about this kernel, nor
          // does a worker that crashed or stalled (an OOM kill or a loaded
          // machine can do that too).
          if (!o.crashed && o.error->category != Category::device_unavailable &&
              o.error->category != Category::io_error) {
            Failure f;
            f.kernel = item.spec->name;
            f.phase = FailurePhase::pipeline;
            f.key = r.key;
            f.id_fields = item.spirv.id_fields;
            f.ir_fields = item.recipe.fields();
            f.inputs = item.spirv.inputs;
            f.category = o.error->category;
            f.message = bound_failure_message(o.error->message);
            f.created = options.clock->now();
            f.origin_detail = options.origin;
            writer.add_failure(device.ns, std::move(f));
          }
          r.error = std::move(o.error);
          if (options.on_receipt) options.on_receipt(r, ++done_count, total_count);
          return;
        }
        r.outcome = item.had_entry ? Outcome::stale_replaced : Outcome::compiled;
        Entry e = device::make_pipeline_entry(item.spirv, item.recipe, device::wrap_blob(device, o.blob),
                                              options.clock->now(), options.origin);
        r.bytes = e.payload.size();
        if (options.secondary) options.secondary->publish(device.ns, e);
        writer.add(device.ns, item.receipt, std::move(e));
        if (writer.due()) writer.flush(written);
      }));
  writer.flush(written);
  result.bytes_written += stage_bytes;

  for (auto& r : receipts) {
    result.totals += r.times;
    result.receipts.push_back(std::move(r));
  }
  if (options.secondary) result.secondary = options.secondary->stats();  // both stages' requests
  total.lap(wall);
  result.wall_ms += wall.wall_ms;
  return {};
}

}  // namespace kcache::build
