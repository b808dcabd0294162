// kcache manifest: what a manifest expands to, without compiling anything.
#include "cli.hpp"

#include "kcache/manifest/manifest.hpp"
#include "kcache/report/report.hpp"

#include <fmt/format.h>

namespace kcache::cli {
namespace {

struct ManifestArgs {
  std::string manifest = "kcache.toml";
  bool json = false;
};

int run_manifest(const ManifestArgs& args) {
  auto manifest = manifest::load_manifest(args.manifest);
  if (!manifest) return report_error(manifest.error());
  fmt::print("{}", args.json ? report::manifest_json(*manifest) : report::manifest_text(*manifest));
  return k_exit_ok;
}

}  // namespace

void register_manifest(CLI::App& app, Action& action) {
  auto args = std::make_shared<ManifestArgs>();
  auto* cmd = app.add_subcommand("manifest", "List the kernels a manifest expands to (no compile, no store).");
  cmd->description(
      "Read and check a manifest, expand its defaults and variants, and list every kernel\n"
      "kcache would build: name, stage, target, source and defines (--json: every option,\n"
      "schema kcache.manifest/1). Errors are reported as `kcache build` reports them.\n"
      "Examples:\n"
      "  kcache manifest bundles/example/kcache.toml\n"
      "  kcache manifest --json | jq '.kernels[].name'");
  cmd->add_option("manifest", args->manifest, "the kernel manifest")->capture_default_str();
  cmd->add_flag("--json", args->json, "print every expanded kernel with all its options as JSON");
  register_manifest_from_commands(*cmd, action);
  cmd->callback([args, cmd, &action] {
    if (!cmd->got_subcommand("from-commands")) action = [args] { return run_manifest(*args); };
  });
}

}  // namespace kcache::cli
