// kcache export: pack a store namespace into a bundle file (or stdout).
#include "bundle_cli.hpp"
#include "cli.hpp"
#include "kcache/remote/bundle_http.hpp"
#include "kcache/report/transfer_report.hpp"
#include "kcache/transfer/transfer.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <utility>

namespace kcache::cli {
namespace {

struct ExportArgs {
  StoreOptions store;
  transfer::ExportSelection selection;
  std::vector<std::string> namespaces;
  std::string for_device;
  std::string since;
  std::string output;
  int level = 0;
  int format_version = 0;
  std::string sign;
  bool sign_remote_entries = false;
  bool json = false;
};

/// Several namespaces (--namespace repeated, --for-device) make a release.
bool is_release(const ExportArgs& args) { return args.namespaces.size() > 1 || !args.for_device.empty(); }

/// What an export prints: the report, and warnings for stderr.
struct ExportReport {
  std::string report;
  std::string warnings;  ///< damaged entries left out
};

/// Writes the bundle (or release) to `out` and renders the report for
/// `shown` (the destination as it may be printed).
Result<ExportReport> write_export(store::Store& store, const ExportArgs& args, const bundle::BundleStream& out,
                                  const transfer::ExportOptions& options, const std::string& shown,
                                  const std::string& json_output) {
  if (is_release(args)) {
    auto scratch = KCACHE_TRY(bundle_scratch_dir());
    transfer::ReleaseSelection sel;
    sel.namespaces = args.namespaces;
    sel.for_device = args.for_device;
    sel.kernel_globs = args.selection.kernel_globs;
    sel.scratch = scratch.path();
    auto result = KCACHE_TRY(transfer::export_release(store, sel, out, options));
    ExportReport r{
        args.json ? report::release_export_json(result, json_output) : report::release_export_text(result, shown), {}};
    for (const auto& section : result.sections) r.warnings += report::export_damaged_text(section);
    return r;
  }
  auto result = KCACHE_TRY(transfer::export_bundle(store, args.selection, out, options));
  return ExportReport{args.json ? report::export_json(result, json_output) : report::export_text(result, shown),
                      report::export_damaged_text(result)};
}

/// Prints the report to `report_to`, the warnings to stderr.
void print_export(const ExportReport& r, FILE* report_to) {
  fmt::print(report_to, "{}", r.report);
  fmt::print(stderr, "{}", r.warnings);
}

/// `-o URL`: the bundle is written to a temporary file, then PUT from it
/// (streamed, so memory stays bounded; a failed export sends nothing).
int run_export_to_url(const ExportArgs& args, transfer::ExportOptions options) {
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  ignore_sigpipe();
  auto dir = bundle_scratch_dir();
  if (!dir) return report_error(dir.error());
  bundle::BundleStream out;
  out.path = dir->path() / "bundle.kcb";
  // The URL as given may hold a password: reports show it hidden.
  const std::string shown = remote::shown_bundle_url(args.output);
  auto text = write_export(**store, args, out, options, shown, shown);
  if (!text) return report_error(text.error());
  auto sent = remote::http_upload_file(args.output, out.path);
  if (!sent) return report_error(sent.error());
  print_export(*text, stdout);
  return k_exit_ok;
}

int run_export(const ExportArgs& args) {
  auto selection_ok = [&]() -> Result<void> {
    if (!args.since.empty() && (is_release(args) || args.format_version != 0))
      return fail(Category::invalid_argument,
                  "--since writes a delta of one namespace (format version 5): not with several namespaces or "
                  "--format-version");
    if (args.namespaces.size() == 1) return {};
    if (!args.selection.backend.empty() && is_release(args))
      return fail(Category::invalid_argument,
                  "--backend/--fingerprint name one namespace; with several "
                  "(--namespace repeated, --for-device) use --namespace only");
    return {};
  }();
  if (!selection_ok) return report_error(selection_ok.error());
  std::optional<bundle::KeyPair> key;
  auto options = write_options(args.level, args.sign, key, args.format_version);
  if (!options) return report_error(options.error());
  const transfer::ExportOptions export_options{*options, clock().now(), args.since, args.sign_remote_entries};
  if (remote::is_http_url(args.output)) return run_export_to_url(args, export_options);
  auto out = output_stream(args.output);
  if (!out) return report_error(out.error());
  bool to_stdout = out->fd >= 0;
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  ignore_sigpipe();
  auto text = write_export(**store, args, *out, export_options, to_stdout ? "stdout" : args.output, args.output);
  if (!text) return report_error(text.error());
  // The bundle owns stdout when it goes there; the report then goes to stderr.
  // Damaged entries were left out: a warning, not a failure (the healthy ones were exported).
  print_export(*text, to_stdout ? stderr : stdout);
  return k_exit_ok;
}

}  // namespace

void register_export(CLI::App& app, Action& action) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand("export", "Pack a store namespace into a bundle file (.kcb) to ship elsewhere.");
  cmd->description(
      "Pack the entries of one namespace into a bundle: one file with the namespace's full\n"
      "fingerprint record, the tool versions, an index of every entry and the entries\n"
      "themselves, zstd-compressed, with a BLAKE2b digest over everything and, with --sign,\n"
      "an Ed25519 signature. `kcache import` on another machine checks all of it.\n"
      "The namespace is --namespace, or --backend with --fingerprint, or the store's only one.\n"
      "Several namespaces (--namespace repeated, or --for-device FINGERPRINT) make one release bundle\n"
      "(format version 4): one file that `kcache import` checks whole and writes in one transaction.\n"
      "Examples:\n"
      "  kcache export --namespace spirv/vulkan1.2 -o shaders.kcb\n"
      "  kcache export --kernel 'matmul[*' --sign ci.key -o - | ssh host kcache import -\n"
      "  kcache export --for-device 9f3c2a7b1d4e6f80 -o h200.kcb");
  args->store.add_to(*cmd);
  cmd->add_option("--namespace", args->namespaces,
                  "namespace to export, e.g. spirv/vulkan1.2 (`kcache inspect` lists them); repeated: one release "
                  "bundle holding each (e.g. cuda/sm_80 and cuda/sm_90)")
      ->each([args](const std::string& name) { args->selection.ns_name = name; });
  cmd->add_option("--since", args->since,
                  "BASE.kcb: a delta bundle of what changed since BASE (a bundle of the same namespace): entries "
                  "added or replaced, BASE's kernels kept and removed, BASE named by its digest; import applies it "
                  "to a store that holds BASE's entries");
  cmd->add_option("--for-device", args->for_device,
                  "FINGERPRINT: a release bundle of everything that vulkan device class needs: its pipelines "
                  "(vulkan/FINGERPRINT) and each SPIR-V module they were built from (`kcache devices` shows the id)");
  cmd->add_option("--backend", args->selection.backend,
                  "backend of the namespace (spirv or vulkan), with --fingerprint");
  cmd->add_option("--fingerprint", args->selection.fingerprint,
                  "fingerprint of the namespace (a target env, or a device fingerprint id)");
  cmd->add_option("--kernel", args->selection.kernel_globs,
                  "export only kernels matching GLOB (* and ?; brackets are literal); repeatable");
  cmd->add_option("-o,--output", args->output,
                  "bundle file to write (atomically), - for stdout, or an http(s) URL naming a file to PUT it to\n"
                  "(a WebDAV server such as nginx's dav_methods PUT; sent only once the whole bundle is written)");
  cmd->add_option("--level", args->level,
                  "zstd level 1..19 (default 1: with format 3, under half the size of `tar | zstd -19` of "
                  "the modules, faster than `tar | zstd -3`; with --format-version 2 use 7)");
  cmd->add_option("--format-version", args->format_version, k_format_version_help);
  cmd->add_option("--sign", args->sign, "sign with this secret key file (from `kcache keygen`)");
  cmd->add_flag("--sign-remote-entries", args->sign_remote_entries,
                "with --sign: sign entries fetched from a remote cache too (refused by default: they were not built "
                "here)");
  cmd->add_flag("--json", args->json, "print the result as JSON (on stderr when the bundle goes to stdout)");
  cmd->callback([args, &action] { action = [args] { return run_export(*args); }; });
}

}  // namespace kcache::cli
