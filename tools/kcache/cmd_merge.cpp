// kcache merge: join bundles of one namespace (e.g. the exports of N shard
// builds) into one, deduplicating by kernel and key.
#include "bundle_cli.hpp"
#include "cli.hpp"
#include "kcache/bundle/merge.hpp"
#include "kcache/report/transfer_report.hpp"

#include <fmt/format.h>
#include <unistd.h>

namespace kcache::cli {
namespace {

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string output;
  int level = 0;
  int format_version = 0;
  std::string sign;
  bool json = false;
};

int run_merge(const MergeArgs& args) {
  auto out = output_stream(args.output);
  if (!out) return report_error(out.error());
  bool to_stdout = out->fd >= 0;
  std::optional<bundle::KeyPair> key;
  auto options = write_options(args.level, args.sign, key, args.format_version);
  if (!options) return report_error(options.error());
  std::vector<bundle::BundleStream> inputs;
  for (const auto& in : args.inputs) {
    if (in == "-") return report_error({Category::invalid_argument, "merge reads each input twice: give files, not -"});
    inputs.push_back(bundle_stream(in, false));
  }
  ignore_sigpipe();
  auto result = bundle::merge_bundles(inputs, *out, *options, clock().now());
  if (!result) return report_error(result.error());
  const auto& r = *result;
  // The bundle owns stdout when it goes there; the report then goes to stderr.
  fmt::print(
      to_stdout ? stderr : stdout, "{}",
      args.json ? report::merge_json(r, args.output) : report::merge_text(r, to_stdout ? "stdout" : args.output));
  if (r.conflicts.empty()) return k_exit_ok;
  fmt::print(stderr, "{}", report::merge_conflicts_text(r));
  return k_exit_failed;
}

}  // namespace

void register_merge(CLI::App& app, Action& action) {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "Join bundles of one namespace into one (e.g. the exports of shard builds).");
  cmd->description(
      "Join bundles of the same namespace (backend and full fingerprint record) into one,\n"
      "keeping each kernel once. A kernel found in several bundles with the same key and\n"
      "module bytes is a duplicate (the first bundle's entry is kept); the same kernel with\n"
      "another key, or with the same key but other bytes, is a conflict: every conflict is\n"
      "listed, nothing is written, and the exit code is 1. Bundles of different namespaces\n"
      "are refused (exit 5), naming the fields that differ. Every input is checked fully.\n"
      "Example (CI: N shard jobs each export, one job merges):\n"
      "  kcache merge shard-*.kcb -o shaders.kcb --sign ci.key");
  cmd->add_option("bundles", args->inputs, "input bundle files")->required();
  cmd->add_option("-o,--output", args->output, "merged bundle file (written atomically), or - for stdout")->required();
  cmd->add_option("--level", args->level, "zstd level 1..19 for the output (default 1)");
  cmd->add_option("--format-version", args->format_version, k_format_version_help);
  cmd->add_option("--sign", args->sign, "sign the merged bundle with this secret key file");
  cmd->add_flag("--json", args->json, "print the result as JSON (on stderr when the bundle goes to stdout)");
  cmd->callback([args, &action] { action = [args] { return run_merge(*args); }; });
}

}  // namespace kcache::cli
