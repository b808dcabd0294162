// kcache inspect: what a store holds, and why an entry is stale.
#include "cli.hpp"

#include "kcache/definition/definition.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/pipeline/freshness.hpp"
#include "kcache/report/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kcache::cli {
namespace {

struct InspectArgs {
  std::string target;
  StoreOptions store;
  std::string manifest;
  bool json = false;
  bool why = false;
  bool stale_only = false;
  bool orphans_only = false;
};

/// One kernel in detail: every namespace holding it, its record, and with a
/// manifest, exactly which fields differ from what was stored.
int inspect_kernel(const InspectArgs& args, store::Store& store, const manifest::Manifest* manifest) {
  const definition::KernelSpec* spec = nullptr;
  if (manifest)
    for (const auto& k : manifest->kernels)
      if (k.name == args.target) spec = &k;
  std::vector<std::pair<std::string, Entry>> found;
  auto read = store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespaces()))
      if (auto e = KCACHE_TRY(reader.get(info.ns.name(), args.target))) found.emplace_back(info.ns.name(), std::move(*e));
    return {};
  });
  if (!read) return report_error(read.error());
  if (found.empty() && !spec)
    return report_error({Category::not_found, fmt::format("kernel '{}' is neither in the store{}", args.target,
                                                          manifest ? " nor in the manifest" : " (pass --manifest to compare)")});
  std::optional<definition::FileCache> files;
  if (manifest) files.emplace(manifest->root);
  std::string wanted_ns = spec ? spirv_namespace(spec->target).name() : "";
  nlohmann::json out = {{"kernel", args.target}, {"entries", nlohmann::json::array()}};
  std::string text;
  bool in_wanted_ns = false;
  for (auto& [ns, e] : found) {
    nlohmann::json j = {{"namespace", ns}, {"id", e.key.id.hex()}, {"ir", e.key.ir.hex()},
                        {"bytes", e.payload.size()}, {"created", e.created},
                        {"origin", e.origin_kind == OriginKind::built ? "built" : "imported"},
                        {"origin_detail", e.origin_detail}};
    j["identity"] = nlohmann::json::object();
    for (const auto& [k, v] : e.id_fields) j["identity"][k] = v;
    j["toolchain"] = nlohmann::json::object();
    for (const auto& [k, v] : e.ir_fields) j["toolchain"][k] = v;
    j["inputs"] = nlohmann::json::array();
    for (const auto& in : e.inputs) j["inputs"].push_back({{"path", in.path}, {"hash", in.hash.hex()}});
    text += fmt::format("{} in {}\n  id {}\n  ir {}\n  {} bytes, origin: {}\n", args.target, ns, e.key.id.hex(),
                        e.key.ir.hex(), e.payload.size(), e.origin_detail);
    text += "  inputs:\n";
    for (const auto& in : e.inputs) text += fmt::format("    {}  {}\n", in.hash.hex().substr(0, 16), in.path);
    if (!args.why) {
      text += "  identity:\n";
      for (const auto& [k, v] : e.id_fields) text += fmt::format("    {} = {}\n", k, v);
      text += "  toolchain:\n";
      for (const auto& [k, v] : e.ir_fields) text += fmt::format("    {} = {}\n", k, v);
    }
    if (spec) {
      // An entry in another namespace is compared too: that is how a changed
      // target explains itself.
      auto a = pipeline::assess(*spec, e, *files);
      if (ns != wanted_ns) a.changes.insert(a.changes.begin(), {"namespace", ns, wanted_ns}), a.state = pipeline::Freshness::stale;
      else in_wanted_ns = true;
      j["state"] = pipeline::freshness_name(a.state);
      j["changes"] = nlohmann::json::array();
      text += fmt::format("  state: {}\n", pipeline::freshness_name(a.state));
      for (const auto& c : a.changes) {
        j["changes"].push_back({{"field", c.name}, {"stored", c.old_value}, {"current", c.new_value}});
        text += fmt::format("    {}: stored {} → current {}\n", c.name, c.old_value, c.new_value);
      }
    }
    out["entries"].push_back(std::move(j));
  }
  if (spec && !in_wanted_ns) {
    text += fmt::format("{}: missing from {} — it has never been built there{}\n", args.target, wanted_ns,
                        found.empty() ? "" : " (entries in other namespaces are compared above)");
    out["missing_from"] = wanted_ns;
  }
  if (args.json) fmt::print("{}\n", out.dump(2));
  else fmt::print("{}", text);
  return k_exit_ok;
}

int run_inspect(const InspectArgs& args) {
  std::optional<manifest::Manifest> manifest;
  if (!args.manifest.empty()) {
    auto m = manifest::load_manifest(args.manifest);
    if (!m) return report_error(m.error());
    manifest = std::move(*m);
  }
  if ((args.why || args.stale_only || args.orphans_only) && !manifest && args.target.empty())
    return report_error({Category::invalid_argument, "--why, --stale and --orphans compare with a manifest: add --manifest kcache.toml"});
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  if (!args.target.empty()) return inspect_kernel(args, **store, manifest ? &*manifest : nullptr);
  auto report = report::inspect_store(**store, manifest ? &*manifest : nullptr);
  if (!report) return report_error(report.error());
  if (args.stale_only || args.orphans_only) {
    std::erase_if(report->entries, [&](const report::EntryRow& e) {
      return !((args.stale_only && e.state == report::EntryState::stale) ||
               (args.orphans_only && e.state == report::EntryState::orphan));
    });
    report->missing.clear();
  }
  fmt::print("{}", args.json ? report::store_json(*report) : report::store_text(*report));
  return k_exit_ok;
}

}  // namespace

void register_inspect(CLI::App& app, Action& action) {
  auto args = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect", "Show what a store holds and why entries are stale.");
  cmd->description(
      "Show what a store holds: namespaces with their fingerprint records, and every entry\n"
      "(kernel, key, size, created, origin). With --manifest, mark each entry fresh, stale or\n"
      "orphan and list manifest kernels missing from the store. With a KERNEL, show that\n"
      "entry in full; add --why (and --manifest) to list exactly which inputs differ.");
  cmd->add_option("kernel", args->target, "a kernel to show in detail");
  args->store.add_to(*cmd);
  cmd->add_option("--manifest", args->manifest, "compare with this manifest");
  cmd->add_flag("--json", args->json, "print JSON on stdout");
  cmd->add_flag("--why", args->why, "with KERNEL: only the reasons it is stale or missing");
  cmd->add_flag("--stale", args->stale_only, "list only stale entries (needs --manifest)");
  cmd->add_flag("--orphans", args->orphans_only, "list only entries the manifest no longer has (needs --manifest)");
  cmd->callback([args, &action] { action = [args] { return run_inspect(*args); }; });
}

}  // namespace kcache::cli
