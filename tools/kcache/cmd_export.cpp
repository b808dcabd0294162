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

namespace kcache::cli {
namespace {

struct ExportArgs {
  StoreOptions store;
  transfer::ExportSelection selection;
  std::string output;
  int level = 0;
  int format_version = 0;
  std::string sign;
  bool json = false;
};

/// `-o URL`: the bundle is written to a temporary file, then PUT from it
/// (streamed, so memory stays bounded; a failed export sends nothing).
int run_export_to_url(const ExportArgs& args, transfer::ExportOptions options) {
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  ignore_sigpipe();
  std::error_code ec;
  std::string tmpl = (std::filesystem::temp_directory_path(ec) / "kcache-export-XXXXXX").string();
  if (ec || !::mkdtemp(tmpl.data()))
    return report_error({Category::io_error, "cannot make a temporary folder for the bundle (TMPDIR)"});
  std::filesystem::path dir(tmpl);
  bundle::BundleStream out;
  out.path = dir / "bundle.kcb";
  auto result = transfer::export_bundle(**store, args.selection, out, options);
  Result<std::uint64_t> sent = 0;
  if (result) {
    result->bundle_bytes = bundle::written_size(out);
    sent = remote::http_upload_file(args.output, out.path);
  }
  std::filesystem::remove_all(dir, ec);
  if (!result) return report_error(result.error());
  if (!sent) return report_error(sent.error());
  // The URL as given may hold a password: reports show it hidden.
  const std::string shown = remote::shown_bundle_url(args.output);
  fmt::print("{}", args.json ? report::export_json(*result, shown) : report::export_text(*result, shown));
  fmt::print(stderr, "{}", report::export_damaged_text(*result));
  return k_exit_ok;
}

int run_export(const ExportArgs& args) {
  if (remote::is_http_url(args.output)) {
    std::optional<bundle::KeyPair> key;
    auto options = write_options(args.level, args.sign, key, args.format_version);
    if (!options) return report_error(options.error());
    return run_export_to_url(args, {*options, clock().now()});
  }
  auto out = output_stream(args.output);
  if (!out) return report_error(out.error());
  bool to_stdout = out->fd >= 0;
  std::optional<bundle::KeyPair> key;
  auto options = write_options(args.level, args.sign, key, args.format_version);
  if (!options) return report_error(options.error());
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  ignore_sigpipe();
  auto result = transfer::export_bundle(**store, args.selection, *out, {*options, clock().now()});
  if (!result) return report_error(result.error());
  // The bundle owns stdout when it goes there; the report then goes to stderr.
  fmt::print(to_stdout ? stderr : stdout, "{}",
             args.json ? report::export_json(*result, args.output)
                       : report::export_text(*result, to_stdout ? "stdout" : args.output));
  // Damaged entries were left out: a warning, not a failure (the healthy ones were exported).
  fmt::print(stderr, "{}", report::export_damaged_text(*result));
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
      "Examples:\n"
      "  kcache export --namespace spirv/vulkan1.2 -o shaders.kcb\n"
      "  kcache export --kernel 'matmul[*' --sign ci.key -o - | ssh host kcache import -");
  args->store.add_to(*cmd);
  cmd->add_option("--namespace", args->selection.ns_name,
                  "namespace to export, e.g. spirv/vulkan1.2 (`kcache inspect` lists them)");
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
  cmd->add_flag("--json", args->json, "print the result as JSON (on stderr when the bundle goes to stdout)");
  cmd->callback([args, &action] { action = [args] { return run_export(*args); }; });
}

}  // namespace kcache::cli
