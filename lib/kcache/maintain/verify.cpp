// `kcache verify` (contracts in verify.hpp).
#include "kcache/maintain/verify.hpp"

#include "kcache/core/key_binding.hpp"

#include "kcache/compile/compiler.hpp"
#include "kcache/core/cuda.hpp"
#include "kcache/core/timing.hpp"
#include "kcache/definition/kernel_spec.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/util/ordered_parallel_map.hpp"
#include "kcache/util/text.hpp"
#include "kcache/util/worker_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace kcache::maintain {
namespace {

/// The SPIR-V module a vulkan entry was built from, checked against its
/// recipe: present, same digest, same kernel identity.
Result<Entry> recipe_module(store::Reader& reader, const Entry& e, const device::PipelineRecipe& recipe) {
  auto parsed = KCACHE_TRY(parse_namespace_name(recipe.spirv_namespace));
  if (parsed.first != "spirv")
    return fail(Category::corruption, "its recipe names {}, not a spirv namespace", recipe.spirv_namespace);
  auto module = KCACHE_TRY(reader.get(recipe.spirv_namespace, e.kernel));
  if (!module)
    return fail(Category::not_found, "its SPIR-V module is not in {}; rebuild it with `kcache build --backend vulkan`",
                recipe.spirv_namespace);
  if (module->payload_digest != recipe.spirv_digest)
    return fail(Category::corruption,
                "its SPIR-V module in {} has changed since the blob was built (digest {} ≠ recipe {}); rebuild it",
                recipe.spirv_namespace, module->payload_digest.hex().substr(0, 16),
                recipe.spirv_digest.hex().substr(0, 16));
  if (module->key.id != e.key.id)
    return fail(Category::corruption, "its key.id differs from its SPIR-V module's: they are not the same kernel");
  return std::move(*module);
}

/// SPIR-V modules spirv-val accepted earlier in the same walk (one read
/// snapshot), by namespace and payload digest: the check of a vulkan entry
/// whose module is among them need not run spirv-val on it again.
using ValidatedModules = std::set<std::pair<std::string, Hash128>>;

Result<Validation> check_spirv_entry(const Entry& e, const Namespace& ns) {
  if (e.payload_kind != PayloadKind::spirv)
    return fail(Category::corruption, "payload kind {} in a spirv namespace", static_cast<int>(e.payload_kind));
  auto words = KCACHE_TRY(compile::spirv_words(e.payload));
  // Under the policy it was stored with (its "validate" id field), as import.
  return compile::validate_under(words, ns.fingerprint, definition::recorded_validate_policy(e.id_fields));
}

/// A trusted runtime serves the recorded interface of a module stored as
/// validated without reflecting it: it must be the module's own
/// (device::check_pipeline_interface). SPIRV-Cross trusts what it parses,
/// so it sees the module only once spirv-val has accepted it (a module it
/// rejects is the SPIR-V entry's own problem; `validated`: it did in this
/// walk). Scheme-1 entries record no interface. Plain verify and verify
/// --device both check this.
Result<void> check_module_interface(const Entry& pipeline, const Entry& module, const device::PipelineRecipe& recipe,
                                    bool validated) {
  if (!KCACHE_TRY(device::read_pipeline_interface(pipeline))) return {};
  if (definition::recorded_validate_policy(module.id_fields) != definition::ValidatePolicy::strict) return {};
  auto words = KCACHE_TRY(compile::spirv_words(module.payload));
  const std::string target = recipe.spirv_namespace.substr(recipe.spirv_namespace.find('/') + 1);
  if (!validated && !compile::validate(words, target))
    return fail(Category::corruption, "its SPIR-V module in {} does not pass spirv-val", recipe.spirv_namespace);
  return device::check_pipeline_interface(pipeline, recipe, words);
}

Result<void> check_vulkan_entry(store::Reader& reader, const Entry& e, const Namespace& ns,
                                const ValidatedModules& validated) {
  if (e.payload_kind != PayloadKind::pipeline_cache)
    return fail(Category::corruption, "payload kind {} in a vulkan namespace", static_cast<int>(e.payload_kind));
  auto recipe = KCACHE_TRY(device::read_pipeline_recipe(e));
  KCACHE_CHECK(device::check_blob_against_record(e.payload, ns.record));
  auto module = KCACHE_TRY(recipe_module(reader, e, recipe));
  return check_module_interface(e, module, recipe, validated.contains({recipe.spirv_namespace, module.payload_digest}));
}

/// The namespace's record must produce its name: otherwise its entries are
/// filed under a fingerprint that is not theirs.
Result<void> check_namespace(const Namespace& ns) {
  if (ns.backend == "spirv") {
    if (!definition::is_known_target(ns.fingerprint))
      return fail(Category::corruption, "unknown SPIR-V target '{}'", ns.fingerprint);
    if (ns.record != spirv_namespace(ns.fingerprint).record)
      return fail(Category::corruption, "its fingerprint record is not {{target = {}}}", ns.fingerprint);
    return {};
  }
  if (ns.backend == "vulkan") {
    auto expected = recorded_vulkan_id(ns.record);
    if (expected != ns.fingerprint)
      return fail(Category::corruption, "its fingerprint record hashes to {}, not to its name", expected);
    return {};
  }
  if (ns.backend == k_cuda_backend) return check_cuda_namespace(ns);
  return fail(Category::corruption, "unknown backend '{}'", ns.backend);
}

/// One entry read again by name for its checks; `entry` holds the read's
/// error when the snapshot that listed it cannot read it (never expected),
/// so that the error takes the entry's place in the output's order.
struct ReadEntry {
  std::string kernel;
  Result<Entry> entry;
};

ReadEntry read_entry(store::Reader& reader, const Namespace& ns, const std::string& kernel) {
  auto got = reader.get(ns.name(), kernel);
  if (!got) return {kernel, tl::unexpected(std::move(got).error())};
  if (!*got)
    return {kernel, fail(Category::corruption, "the scan listed it but the same snapshot cannot read it again")};
  // Fields that do not hash to the key would serve another build under it;
  // fields naming another kernel, another kernel's build under this name.
  if (auto bound = check_key_binding(**got); !bound) return {kernel, tl::unexpected(std::move(bound).error())};
  if (auto named = check_name_fields(kernel, (*got)->id_fields); !named)
    return {kernel, tl::unexpected(std::move(named).error())};
  return {kernel, std::move(**got)};
}

/// The checks of one namespace's entries, listed by name (`kernels`, in scan
/// order), each read again when its turn comes so that no more than the
/// map's window of payloads is held. SPIR-V entries are validated on
/// `threads` workers (spirv-val is nearly all of verify's time); results come
/// back in input order, so problems are listed exactly as a serial walk lists
/// them. Vulkan entries are checked here: their module lookup needs the
/// reader, which stays on this thread; cuda entries too (a header check,
/// check_cuda_payload). Modules spirv-val accepts are added to `validated`;
/// vulkan entries' checks read it. Errors: a worker thread the OS refuses.
Result<void> check_entries(store::Reader& reader, const Namespace& ns, const std::vector<std::string>& kernels,
                           unsigned threads, ValidatedModules& validated, StoreCheck& out) {
  if (ns.backend != "spirv") {
    for (const std::string& kernel : kernels) {
      ++out.entries;
      ReadEntry e = read_entry(reader, ns, kernel);
      auto ok = [&]() -> Result<void> {
        if (!e.entry) return tl::unexpected(e.entry.error());
        if (ns.backend == k_cuda_backend)
          return check_cuda_payload(e.entry->payload_kind, ns.fingerprint, e.entry->payload).and_then([&] {
            return check_cuda_symbol(e.entry->payload_kind, e.entry->payload, cuda_function_symbol(*e.entry));
          });
        return check_vulkan_entry(reader, *e.entry, ns, validated);
      }();
      if (!ok) out.problems.push_back({ns.name(), kernel, ok.error()});
    }
    return {};
  }
  if (kernels.empty()) return {};
  using Window = util::OrderedParallelMap<ReadEntry, Result<Validation>>;
  auto window = KCACHE_TRY(
      Window::start(std::min<std::size_t>(threads, kernels.size()), [&ns](const ReadEntry& e) -> Result<Validation> {
        if (!e.entry) return tl::unexpected(e.entry.error());
        return check_spirv_entry(*e.entry, ns);
      }));
  std::size_t next = 0;
  auto read = [&]() -> Result<std::optional<ReadEntry>> {
    if (next == kernels.size()) return std::optional<ReadEntry>{};
    return std::optional<ReadEntry>{read_entry(reader, ns, kernels[next++])};
  };
  for (;;) {
    auto checked = KCACHE_TRY(window->next(read));
    if (!checked) return {};
    ++out.entries;
    if (!checked->result) out.problems.push_back({ns.name(), checked->item.kernel, checked->result.error()});
    else if (*checked->result == Validation::validated)
      validated.insert({ns.name(), checked->item.entry->payload_digest});
    // Stored under a weaker policy than strict: listed, whatever the
    // validator found (the policy is what a runtime and import apply to it).
    if (checked->item.entry)
      if (auto policy = definition::recorded_validate_policy(checked->item.entry->id_fields);
          policy != definition::ValidatePolicy::strict)
        out.weak.push_back({ns.name(), checked->item.kernel, std::string(definition::validate_policy_name(policy))});
  }
}

}  // namespace

Result<StoreCheck> check_store(store::Store& store, unsigned jobs) {
  Stopwatch watch;
  PhaseTime wall;
  StoreCheck out;
  const unsigned threads = util::worker_threads(jobs);  // capped as import's validators
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    auto namespaces = KCACHE_TRY(reader.namespace_records());
    // "spirv/..." sorts before "vulkan/...", so a module's verdict is known
    // before the pipelines built from it are checked; in any other order
    // they would only validate it again.
    ValidatedModules validated;
    for (const auto& info : namespaces) {
      const Namespace& ns = info.ns;
      ++out.namespaces;
      if (auto ok = check_namespace(ns); !ok) {
        out.problems.push_back({ns.name(), "", ok.error()});
        continue;
      }
      // Names only: the entries are read again one by one as they are
      // checked, so a namespace's payloads are never all held at once.
      std::vector<std::string> kernels;
      const std::size_t damaged_before = reader.damaged().size();
      auto scanned = reader.scan(ns.name(), [&](Entry&& e) {
        kernels.push_back(std::move(e.kernel));
        return true;
      });
      if (!scanned) {
        Error e = scanned.error();
        e.message += "; the rest of this namespace was not checked";
        out.problems.push_back({ns.name(), "", std::move(e)});
      }
      // The scan skipped entries whose record fails its checks: each one is
      // a problem of its own, and the walk went on past it.
      for (std::size_t i = damaged_before; i < reader.damaged().size(); ++i) {
        const store::DamagedEntry& d = reader.damaged()[i];
        ++out.entries;
        out.problems.push_back({d.ns, d.kernel, d.error});
      }
      KCACHE_CHECK(check_entries(reader, ns, kernels, threads, validated, out));
      // Failure records: each must decode and say only what a record may.
      const std::size_t failures_damaged_before = reader.damaged().size();
      auto failures = reader.scan_failures(ns.name(), [&](Failure&& f, std::size_t) {
        ++out.failures;
        if (auto ok = validate_failure_record(f); !ok) out.problems.push_back({ns.name(), f.kernel, ok.error()});
        else if (auto bound = check_key_binding(f); !bound)
          out.problems.push_back({ns.name(), f.kernel, std::move(bound).error().context("failure record")});
        return true;
      });
      if (!failures) out.problems.push_back({ns.name(), "", failures.error()});
      for (std::size_t i = failures_damaged_before; i < reader.damaged().size(); ++i) {
        const store::DamagedEntry& d = reader.damaged()[i];
        ++out.failures;
        out.problems.push_back({d.ns, d.kernel, d.error});
      }
    }
    return {};
  }));
  watch.lap(wall);
  out.wall_ms = wall.wall_ms;
  return out;
}

std::string_view verify_status_name(VerifyStatus s) {
  switch (s) {
    case VerifyStatus::hit: return "hit";
    case VerifyStatus::miss: return "miss";
    case VerifyStatus::timed: return "timed";
    case VerifyStatus::refused: return "refused";
    case VerifyStatus::failure: return "failure";
  }
  return "failure";
}

std::size_t DeviceVerify::count(VerifyStatus s) const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [s](const VerifyRow& r) { return r.status == s; }));
}

Result<DeviceVerify> verify_device(store::Store& store, const device::DeviceInfo& device,
                                   const VerifyOptions& options) {
  Stopwatch watch;
  PhaseTime wall;
  DeviceVerify out;
  out.ns = device.ns;
  out.timed = options.timed || !device.fail_on_compile_required;
  const std::string ns_name = device.ns.name();

  struct Item {
    std::size_t row;
    Entry module;
    device::PipelineRecipe recipe;
    std::vector<std::uint8_t> wrapped;
    std::string target;
  };
  std::vector<Item> items;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    auto namespaces = KCACHE_TRY(reader.namespace_records());
    if (std::none_of(namespaces.begin(), namespaces.end(), [&](const auto& i) { return i.ns.name() == ns_name; }))
      return fail(Category::not_found,
                  "the store holds no pipelines for device '{}' (namespace {}); build them with `kcache build "
                  "--backend vulkan --device {}`",
                  device.name, ns_name, device.fingerprint());
    std::vector<Entry> entries;
    KCACHE_CHECK(reader.scan(ns_name, [&](Entry&& e) {
      entries.push_back(std::move(e));
      return true;
    }));
    for (Entry& e : entries) {
      VerifyRow& row = out.rows.emplace_back();
      row.kernel = e.kernel;
      auto prepared = [&]() -> Result<Item> {
        if (e.payload_kind != PayloadKind::pipeline_cache)
          return fail(Category::corruption, "not a pipeline-cache entry");
        auto recipe = KCACHE_TRY(device::read_pipeline_recipe(e));
        // Wrapper, full fingerprint and Vulkan header against this device,
        // before anything is sent towards a driver.
        KCACHE_CHECK(device::unwrap_blob(e.payload, device));
        auto module = KCACHE_TRY(recipe_module(reader, e, recipe));
        KCACHE_CHECK(check_module_interface(e, module, recipe, /*validated=*/false));
        std::string target = KCACHE_TRY(parse_namespace_name(recipe.spirv_namespace)).second;
        return Item{out.rows.size() - 1, std::move(module), std::move(recipe), std::move(e.payload), std::move(target)};
      }();
      if (!prepared) {
        row.status = VerifyStatus::refused;
        row.category = prepared.error().category;
        row.message = prepared.error().message;
        continue;
      }
      items.push_back(std::move(*prepared));
    }
    // A record that fails its checks never reaches a driver: refused, by name.
    for (const store::DamagedEntry& d : reader.damaged()) {
      VerifyRow& row = out.rows.emplace_back();
      row.kernel = d.kernel;
      row.status = VerifyStatus::refused;
      row.category = d.error.category;
      row.message = d.error.message;
    }
    return {};
  }));

  std::vector<worker::PipelineJob> jobs;
  for (const Item& item : items)
    jobs.push_back({out.rows[item.row].kernel, item.target, item.recipe.entry, item.recipe.spec, item.module.payload,
                    item.wrapped});
  out.sent_to_driver = jobs.size();
  worker::WorkerOptions worker = options.worker;
  worker.threads = util::worker_threads(options.jobs);
  worker.timed = options.timed;
  KCACHE_CHECK(worker::run_pipeline_jobs(
      device, worker::JobMode::verify, jobs, worker, [&](std::size_t j, worker::PipelineOutcome&& o) {
        VerifyRow& row = out.rows[items[j].row];
        if (o.error) {
          // The worker's own checks refuse before the driver; anything else failed in or after it.
          const bool before_driver = !o.crashed && (o.error->category == Category::fingerprint_mismatch ||
                                                    o.error->category == Category::validation_failed ||
                                                    o.error->category == Category::validator_unsupported ||
                                                    o.error->category == Category::corruption);
          row.status = before_driver ? VerifyStatus::refused : VerifyStatus::failure;
          row.category = o.error->category;
          row.message = o.error->message;
          return;
        }
        switch (o.verify.outcome) {
          case device::VerifyOutcome::hit: row.status = VerifyStatus::hit; break;
          case device::VerifyOutcome::miss: row.status = VerifyStatus::miss; break;
          case device::VerifyOutcome::timed: row.status = VerifyStatus::timed; break;
          case device::VerifyOutcome::failure: row.status = VerifyStatus::failure; break;
        }
        row.create_ms = o.verify.create_ms;
        row.empty_cache_ms = o.verify.empty_cache_ms;
        row.blob_refused = o.verify.blob_refused;
        row.message = o.verify.message;
      }));
  watch.lap(wall);
  out.wall_ms = wall.wall_ms;
  return out;
}

bool has_problems(const DeviceVerify& v) {
  return std::any_of(v.rows.begin(), v.rows.end(), [](const auto& r) {
    return r.status == VerifyStatus::refused || r.status == VerifyStatus::failure || r.blob_refused;
  });
}

}  // namespace kcache::maintain
