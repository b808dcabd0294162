// A command the launcher's hit path did not serve, through the build engine
// (serve.hpp).
#include "kcache/launcher_build/serve.hpp"

#include "kcache/core/entry.hpp"
#include "kcache/engine/run.hpp"

#include <fmt/format.h>

namespace kcache::launcher_build {
namespace {

/// Why the real program runs for a command kcache could not serve, as
/// `kcache stats` groups it.
std::string fallback_reason(const engine::Receipt& receipt) {
  const Category c = receipt.error ? receipt.error->category : Category::compile_failed;
  if (c == Category::validator_unsupported)
    return "spirv-val does not know what the module uses (launcher_validate = known stores it, flagged)";
  if (c == Category::compile_failed) return "the compile failed (the real program reports it)";
  return fmt::format("kcache could not serve it ({})", category_name(c));
}

}  // namespace

Result<Served> serve(const launcher::Plan& plan, store::Store& store, const ServeOptions& options,
                     const store::Invocation& invocation) {
  Served out;
  out.root = launcher::keys_root(plan, options.base_dir);
  const auto validate = launcher::validate_policy(plan, out.root, options.validate);
  out.kernel = launcher::kernel_name(plan, out.root, validate);
  manifest::Manifest& manifest = out.manifest;
  manifest.root = out.root;
  manifest.path = out.root / ("(" + invocation.tool + " command)");
  manifest.kernels.push_back(launcher::kernel_spec(plan, out.root, out.kernel, validate));

  engine::RunOptions run;
  run.build = options.build;
  run.build.jobs = 1;
  run.build.on_receipt = nullptr;
  run.record_usage = false;  // below, once it is known whether the real program must run
  auto result = KCACHE_TRY(engine::run(manifest, store, run));
  if (result.result.receipts.size() != 1)
    return fail(Category::io_error, "the build of one command returned {} receipts", result.result.receipts.size());
  out.receipt = result.result.receipts.front();
  // The run record, with the command; one the real program must run says
  // why (`kcache stats` counts it among those the real program ran).
  auto record = [&] {
    result.result.receipts.front() = out.receipt;
    store::Invocation recorded = invocation;
    if (out.receipt.outcome == engine::Outcome::failed && recorded.not_cacheable.empty())
      recorded.not_cacheable = fallback_reason(out.receipt);
    if (auto written = engine::record_run(store, result.result, *options.build.clock, &recorded); !written)
      out.record_warning = std::move(written).error();
  };
  if (out.receipt.outcome == engine::Outcome::failed) {
    record();
    return out;
  }

  // The module the build stored or found; the key says it is this one (a
  // concurrent command for the same output may have replaced it since).
  std::optional<Entry> entry;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    entry = KCACHE_TRY(reader.get(out.receipt.ns, out.kernel));
    return {};
  }));
  if (!entry || entry->key != out.receipt.key || entry->payload_kind != PayloadKind::spirv) {
    out.receipt.outcome = engine::Outcome::failed;
    out.receipt.error = Error{Category::busy, "the stored module changed while it was being served"};
    record();
    return out;
  }
  out.diagnostics = std::move(entry->diagnostics);
  if (plan.command.warnings_as_errors && !plan.command.suppress_warnings && !out.diagnostics.empty()) {
    // Not reached by an honest store (-Werror is in the key); kept as a
    // second line against an entry filed under that key with warnings.
    out.receipt.outcome = engine::Outcome::failed;
    out.receipt.error = Error{Category::compile_failed, "the module has warnings and -Werror makes them errors"};
    record();
    return out;
  }
  record();
  out.module = std::move(entry->payload);

  KCACHE_CHECK(launcher::write_outputs(plan, out.root, out.module, entry->inputs));
  return out;
}

}  // namespace kcache::launcher_build
