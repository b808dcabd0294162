// kcache inspect: what a store holds, and why an entry is stale or missing.
#include "cli.hpp"

#include "kcache/definition/definition.hpp"
#include "kcache/device/device.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/pipeline/explain.hpp"
#include "kcache/pipeline/freshness.hpp"
#include "kcache/report/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace kcache::cli {
namespace {

using nlohmann::json;

struct InspectArgs {
  std::string target;
  StoreOptions store;
  std::string manifest;
  bool json = false;
  bool why = false;
  bool stale_only = false;
  bool orphans_only = false;
  bool foreign_only = false;
};

json changes_json(const std::vector<pipeline::Change>& changes) {
  json out = json::array();
  for (const auto& c : changes)
    out.push_back({{"field", c.name},
                   {"kind", pipeline::change_kind_name(pipeline::change_kind(c.name))},
                   {"stored", c.old_value},
                   {"current", c.new_value}});
  return out;
}

std::string changes_text(const std::vector<pipeline::Change>& changes, std::string_view indent) {
  std::string out;
  for (const auto& c : changes)
    out += fmt::format("{}{}: stored {} → current {}\n", indent, c.name, c.old_value, c.new_value);
  return out;
}

json explanation_json(const pipeline::Explanation& e) {
  json j = {{"kernel", e.kernel},
            {"namespace", e.ns},
            {"state", pipeline::freshness_name(e.state)},
            {"summary", pipeline::describe(e, 1000)},
            {"changes", changes_json(e.changes)},
            {"elsewhere", e.elsewhere}};
  j["compared"] = e.compared_ns.empty() ? json(nullptr)
                                        : json{{"namespace", e.compared_ns}, {"kernel", e.compared_kernel}};
  return j;
}

std::string explanation_text(const pipeline::Explanation& e) {
  std::string out;
  switch (e.state) {
    case pipeline::Freshness::fresh: out += fmt::format("{}: fresh in {}\n", e.kernel, e.ns); break;
    case pipeline::Freshness::stale:
      out += fmt::format("{}: stale in {}; these inputs differ from the stored entry:\n", e.kernel, e.ns);
      break;
    case pipeline::Freshness::missing:
      out += fmt::format("{}: not in store (namespace {})\n", e.kernel, e.ns);
      if (e.compared_ns.empty())
        out += "  the store has no entry of this kernel or of its variants in any namespace: it was never built here\n";
      else if (e.compared_kernel == e.kernel)
        out += fmt::format("  {} has an entry of this kernel; it differs in:\n", e.compared_ns);
      else
        out += fmt::format("  nearest stored variant: {}{}; it differs in:\n", e.compared_kernel,
                           e.compared_ns == e.ns ? "" : " in " + e.compared_ns);
      break;
  }
  out += changes_text(e.changes, "    ");
  if (e.state != pipeline::Freshness::missing && !e.elsewhere.empty())
    out += fmt::format("  also stored in: {}\n", fmt::join(e.elsewhere, ", "));
  return out;
}

/// The manifest --why compares with: --manifest, else ./kcache.toml when it
/// exists (the file `kcache build` reads by default), else none.
Result<std::optional<manifest::Manifest>> load_for(const InspectArgs& args) {
  std::string path = args.manifest;
  if (path.empty() && args.why && std::filesystem::exists("kcache.toml")) path = "kcache.toml";
  if (path.empty()) return std::optional<manifest::Manifest>{};
  return manifest::load_manifest(path).map([](manifest::Manifest m) { return std::optional(std::move(m)); });
}

/// `inspect KERNEL`: every stored entry of that name and, with a manifest,
/// the explanation of its state; `--why` shows only the explanation.
int inspect_kernel(const InspectArgs& args, store::Store& store, const manifest::Manifest* manifest) {
  const definition::KernelSpec* spec = nullptr;
  if (manifest)
    for (const auto& k : manifest->kernels)
      if (k.name == args.target) spec = &k;
  std::optional<definition::FileCache> files;
  if (manifest) files.emplace(manifest->root);
  std::vector<std::pair<std::string, Entry>> found;
  std::optional<pipeline::Explanation> explanation;
  auto read = store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespaces()))
      if (auto e = KCACHE_TRY(reader.get(info.ns.name(), args.target))) found.emplace_back(info.ns.name(), std::move(*e));
    if (spec) {
      pipeline::Explainer explainer(reader, *files);
      explanation = KCACHE_TRY(explainer.explain(*spec));
    }
    return {};
  });
  if (!read) return report_error(read.error());
  if (found.empty() && !spec)
    return report_error({Category::not_found,
                         fmt::format("kernel '{}' is neither in the store{}", args.target,
                                     manifest ? fmt::format(" nor in {}", manifest->path.string())
                                              : " nor in a manifest (pass --manifest to compare with one)")});

  json out = {{"schema", "kcache.inspect-kernel/1"}, {"kernel", args.target}, {"entries", json::array()}};
  std::string text;
  for (auto& [ns, e] : found) {
    // Without a manifest, an entry can still be known stale: another
    // toolchain built it, so it can never hit here again.
    auto toolchain = pipeline::toolchain_changes(e);
    if (!args.why) {
      json j = {{"namespace", ns}, {"id", e.key.id.hex()}, {"ir", e.key.ir.hex()},
                {"bytes", e.payload.size()}, {"created", e.created},
                {"origin", e.origin_kind == OriginKind::built ? "built" : "imported"},
                {"origin_detail", e.origin_detail}};
      j["identity"] = json::object();
      for (const auto& [k, v] : e.id_fields) j["identity"][k] = v;
      j["toolchain"] = json::object();
      for (const auto& [k, v] : e.ir_fields) j["toolchain"][k] = v;
      j["inputs"] = json::array();
      for (const auto& in : e.inputs) j["inputs"].push_back({{"path", in.path}, {"hash", in.hash.hex()}});
      out["entries"].push_back(std::move(j));
      text += fmt::format("{} in {}\n  id {}\n  ir {}\n  {} bytes, origin: {} ({})\n", args.target, ns,
                          e.key.id.hex(), e.key.ir.hex(), e.payload.size(),
                          e.origin_kind == OriginKind::built ? "built" : "imported", e.origin_detail);
      text += "  inputs:\n";
      for (const auto& in : e.inputs) text += fmt::format("    {}  {}\n", in.hash.hex().substr(0, 16), in.path);
      text += "  identity:\n";
      for (const auto& [k, v] : e.id_fields) text += fmt::format("    {} = {}\n", k, v);
      text += "  toolchain:\n";
      for (const auto& [k, v] : e.ir_fields) text += fmt::format("    {} = {}\n", k, v);
    } else if (!spec) {
      out["entries"].push_back({{"namespace", ns},
                                {"state", toolchain.empty() ? "unknown" : "stale"},
                                {"changes", changes_json(toolchain)}});
      if (!toolchain.empty())
        text += fmt::format("{} in {}: stale: built by another toolchain; it can never hit here again:\n{}",
                            args.target, ns, changes_text(toolchain, "    "));
      else
        text += fmt::format("{} in {}: the toolchain matches; pass --manifest to compare its inputs and options\n",
                            args.target, ns);
    }
  }
  if (manifest && !spec) {
    text += fmt::format("{} is not in {}: its entries are orphans (kcache gc --orphans removes them)\n", args.target,
                        manifest->path.string());
    out["state"] = "orphan";
  }
  if (explanation) {
    if (!args.why) text += "\n";
    text += explanation_text(*explanation);
    out["why"] = explanation_json(*explanation);
  }
  if (args.json) fmt::print("{}\n", out.dump(2));
  else fmt::print("{}", text);
  return k_exit_ok;
}

/// `inspect --why` without a kernel: one line for every manifest kernel that
/// would not hit.
int explain_all(const InspectArgs& args, store::Store& store, const manifest::Manifest& manifest) {
  definition::FileCache files(manifest.root);
  std::vector<pipeline::Explanation> all;
  auto read = store.read([&](store::Reader& reader) -> Result<void> {
    pipeline::Explainer explainer(reader, files);
    for (const auto& spec : manifest.kernels) all.push_back(KCACHE_TRY(explainer.explain(spec)));
    return {};
  });
  if (!read) return report_error(read.error());
  json out = {{"schema", "kcache.why/1"}, {"kernels", json::array()}};
  std::string text;
  std::size_t fresh = 0;
  for (const auto& e : all) {
    if (e.state == pipeline::Freshness::fresh) {
      ++fresh;
      continue;
    }
    out["kernels"].push_back(explanation_json(e));
    text += fmt::format("{}: {}\n", e.kernel, pipeline::describe(e));
  }
  text += fmt::format("{} of {} kernels fresh; {} would be rebuilt\n", fresh, all.size(), all.size() - fresh);
  out["fresh"] = fresh;
  out["total"] = all.size();
  fmt::print("{}", args.json ? out.dump(2) + "\n" : text);
  return k_exit_ok;
}

int run_inspect(const InspectArgs& args) {
  // A bundle file is inspected without any store (inspect_bundle.cpp).
  if (args.target.ends_with(".kcb")) return run_inspect_bundle(args.target, args.json);
  auto manifest = load_for(args);
  if (!manifest) return report_error(manifest.error());
  const manifest::Manifest* m = *manifest ? &**manifest : nullptr;
  if (args.orphans_only && !m)
    return report_error({Category::invalid_argument,
                         "--orphans lists entries the manifest no longer has: add --manifest kcache.toml"});
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  if (!args.target.empty()) return inspect_kernel(args, **store, m);
  if (args.why) {
    if (!m)
      return report_error({Category::invalid_argument,
                           "--why compares the store with a manifest: add --manifest kcache.toml (or name a KERNEL)"});
    return explain_all(args, **store, *m);
  }

  auto report = report::inspect_store(**store, m);
  if (!report) return report_error(report.error());
  bool any_device_ns = std::any_of(report->namespaces.begin(), report->namespaces.end(),
                                   [](const store::NamespaceInfo& i) { return i.ns.backend != "spirv"; });
  // Loading Vulkan only when a device namespace needs matching keeps plain
  // inspect fast and free of driver start-up.
  Result<std::vector<FingerprintRecord>> local = std::vector<FingerprintRecord>{};
  if (any_device_ns)
    local = device::list_devices().map([](const std::vector<device::DeviceInfo>& devices) {
      std::vector<FingerprintRecord> records;
      for (const auto& d : devices) records.push_back(d.record());
      return records;
    });
  report::mark_foreign(*report, m, local);

  if (args.stale_only || args.orphans_only || args.foreign_only) {
    std::set<std::string> foreign;
    for (const auto& s : report->summaries)
      if (s.foreign) foreign.insert(s.ns);
    std::erase_if(report->entries, [&](const report::EntryRow& e) {
      return !((args.stale_only && e.state == report::EntryState::stale) ||
               (args.orphans_only && e.state == report::EntryState::orphan) ||
               (args.foreign_only && foreign.count(e.ns)));
    });
    if (args.foreign_only && !args.stale_only && !args.orphans_only) {
      for (std::size_t i = report->namespaces.size(); i-- > 0;)
        if (!foreign.count(report->namespaces[i].ns.name())) {
          report->namespaces.erase(report->namespaces.begin() + static_cast<std::ptrdiff_t>(i));
          report->summaries.erase(report->summaries.begin() + static_cast<std::ptrdiff_t>(i));
        }
    }
    report->missing.clear();
    if (args.foreign_only && !args.json && report->namespaces.empty()) {
      fmt::print("no foreign namespaces: every namespace matches a local device{}\n",
                 m ? " or a target the manifest uses" : " (spirv namespaces are portable)");
      return k_exit_ok;
    }
  }
  fmt::print("{}", args.json ? report::store_json(*report) : report::store_text(*report));
  return k_exit_ok;
}

}  // namespace

void register_inspect(CLI::App& app, Action& action) {
  auto args = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect", "Show what a store holds and why entries are stale or missing.");
  cmd->description(
      "Show what a store holds: per namespace its fingerprint record, entry count, bytes,\n"
      "oldest/newest entry, last use and origin (built here, or imported from which bundle and\n"
      "when), then every entry. With --manifest, mark each entry fresh, stale or orphan and list\n"
      "manifest kernels missing from the store.\n"
      "\n"
      "With a KERNEL, show its stored entries in full. `--why` explains the kernel against the\n"
      "manifest (--manifest, else ./kcache.toml) and this kcache's toolchain: every input that\n"
      "differs from the stored entry with its stored and current value — a source or include\n"
      "file (content hash), define, variant value, entry point, spec constant, target, optimize\n"
      "level, glslang / SPIRV-Tools / key schema version, device fingerprint field. A missing\n"
      "kernel is compared with the same kernel in another namespace or its nearest stored\n"
      "variant. `--why` without a KERNEL prints one line per manifest kernel that would not hit.\n"
      "\n"
      "A KERNEL ending in .kcb is a bundle file: its head and entries are shown and checked.\n"
      "\n"
      "Examples:\n"
      "  kcache inspect\n"
      "  kcache inspect 'matmul[T=float]' --why --manifest kcache.toml\n"
      "  kcache inspect --stale --manifest kcache.toml --json\n"
      "  kcache inspect --foreign");
  cmd->add_option("kernel", args->target, "a kernel to show or explain, or a bundle file (*.kcb)");
  args->store.add_to(*cmd);
  cmd->add_option("--manifest", args->manifest, "compare with this manifest");
  cmd->add_flag("--json", args->json, "print JSON on stdout");
  cmd->add_flag("--why", args->why, "explain why KERNEL (or every kernel that would not hit) is stale or missing");
  cmd->add_flag("--stale", args->stale_only,
                "list only stale entries (with --manifest: against it; without: built by another toolchain)");
  cmd->add_flag("--orphans", args->orphans_only, "list only entries the manifest no longer has (needs --manifest)");
  cmd->add_flag("--foreign", args->foreign_only,
                "list only namespaces that match no local Vulkan device, or (with --manifest) no target it uses");
  cmd->callback([args, &action] { action = [args] { return run_inspect(*args); }; });
}

}  // namespace kcache::cli
