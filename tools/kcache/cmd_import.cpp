// kcache import: check a bundle completely, then write it into the store in
// one transaction, or write nothing.
#include "bundle_cli.hpp"
#include "cli.hpp"
#include "kcache/bundle/key_files.hpp"
#include "kcache/remote/bundle_http.hpp"
#include "kcache/remote/oci.hpp"
#include "kcache/report/report.hpp"
#include "kcache/report/transfer_report.hpp"
#include "kcache/store/store.hpp"
#include "kcache/transfer/transfer.hpp"
#include "kcache/util/text.hpp"
#include "oci_cli.hpp"
#include "seams.hpp"
#include "stop_signal.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

namespace kcache::cli {
namespace {

struct ImportArgs {
  std::string input;
  StoreOptions store;
  std::string fingerprint;
  std::string device;
  bool device_given = false;
  std::vector<std::string> trust;
  bool dry_run = false;
  bool replace = false;
  std::string allow_validate = "strict";
  bool json = false;
  unsigned jobs = 0;
  unsigned timeout_ms = 0;  ///< oci:// only: the whole pull (0: the default)
  bool plain_http = false;  ///< oci:// only
};

/// One line per conflict the user asked to replace: never silent.
std::string replaced_on_request_text(const transfer::ImportResult& r) {
  std::string out;
  for (const auto& c : r.conflicts)
    out += fmt::format("kcache: warning: {} on request (--replace): '{}', {}\n",
                       r.dry_run ? "would be replaced" : "replaced", util::escape_untrusted(c.kernel),
                       c.kind == transfer::ConflictKind::older
                           ? fmt::format("an older build (built {}) over one built {}",
                                         util::iso_time(c.bundle_created), util::iso_time(c.stored_created))
                           : std::string("same key as the stored entry but other module bytes"));
  return out;
}

int run_import(const ImportArgs& args) {
  if (args.input == "-" && ::isatty(STDIN_FILENO))
    return report_error(
        {Category::invalid_argument, "reading a bundle from a terminal: pipe one in, or name a FILE.kcb"});
  transfer::ImportOptions options;
  options.dry_run = args.dry_run;
  options.replace = args.replace;
  options.allow_validate = *definition::parse_validate_policy(args.allow_validate);  // CLI11 checked the spelling
  options.clock = &clock();
  auto jobs = jobs_or_env(args.jobs, args.store.path());
  if (!jobs) return report_error(jobs.error());
  options.jobs = *jobs;
  if (!args.fingerprint.empty()) options.target.fingerprint = args.fingerprint;
  if (args.device_given) {
    options.target.device = args.device;
    auto described = seams::described_cuda_devices();
    if (!described) return report_error(described.error());
    if (*described) options.target.cuda_devices = std::move((*described)->devices);
    options.target.cuda_library = cuda_driver_library();
  }
  if (!args.trust.empty()) {
    auto keys = bundle::load_public_keys({args.trust.begin(), args.trust.end()});
    if (!keys) return report_error(keys.error());
    options.trusted = std::move(*keys);
  }
  auto in = bundle_stream(args.input, false);
  const bool oci = remote::is_oci_ref(args.input);
  if ((args.timeout_ms != 0 || args.plain_http) && !oci)
    return report_error({Category::invalid_argument,
                         "--timeout-ms and --plain-http are for an oci:// reference (an http(s) URL takes "
                         "?timeout-ms=N)"});
  // A transfer (an http(s) URL or an OCI reference) streams into the
  // importer through a pipe as it downloads: nothing goes to TMPDIR, the
  // importer checks each section's head as it arrives, and a failed
  // download ends the stream early, so its own error is the one reported.
  // Ctrl-C and SIGTERM stop it within a second and nothing is written.
  std::optional<StopOnSignal> stop;
  std::string shown_input = args.input;
  std::unique_ptr<remote::OciDownload> pull;
  if (oci) {
    auto ref = remote::parse_oci_ref(args.input);
    if (!ref) return report_error(ref.error());
    if (args.plain_http) ref->plain_http = true;
    auto oci_opts = oci_options(*ref, args.timeout_ms);
    if (!oci_opts) return report_error(oci_opts.error());
    ignore_sigpipe();
    stop.emplace();
    oci_opts->cancelled = StopOnSignal::flag();
    // Before the store is opened: a missing artifact or refused
    // credentials create no store.
    auto started = remote::OciDownload::start(*ref, *oci_opts);
    if (!started) return StopOnSignal::report(started.error());
    pull = std::move(*started);
    shown_input = ref->shown();
    in.fd = pull->fd();
    in.path = shown_input;
  }
  // A store this import creates and then writes nothing into is removed
  // again (transfer::discard_store_if_unfilled).
  const bool store_existed = std::filesystem::exists(args.store.path());
  auto store = args.store.open(!args.dry_run);
  // A dry run against a store that does not exist yet: everything would be new.
  if (!store && args.dry_run && store.error().category == Category::not_found) store = store::make_memory_store();
  if (!store) return report_error(store.error());
  std::unique_ptr<remote::HttpDownload> download;
  if (remote::is_http_url(args.input)) {
    ignore_sigpipe();
    stop.emplace();
    auto started = remote::HttpDownload::start(args.input, StopOnSignal::flag());
    if (!started) return report_error(started.error());
    download = std::move(*started);
    in.fd = download->fd();
    in.path = download->shown();
  }
  auto result = transfer::import_bundle(**store, in, options);
  if (download)
    if (auto done = download->finish(); !done) result = tl::unexpected(std::move(done).error());
  if (pull)
    if (auto done = pull->finish(); !done) result = tl::unexpected(std::move(done).error());
  if (!args.dry_run)
    if (auto removed = transfer::discard_store_if_unfilled(*store, args.store.path(), !store_existed, result); !removed)
      fmt::print(stderr, "{}",
                 report::terminal_text(fmt::format("kcache: warning: could not remove the empty store {}: {}\n",
                                                   args.store.path(), removed.error().message)));
  if (!result) return StopOnSignal::report(result.error());
  const auto& r = *result;
  // A URL as given may hold a password: the download's shown form hides it.
  const std::string label = pull ? "bundle " + shown_input : in.label();
  fmt::print("{}", args.json ? report::import_json(r, download ? download->shown() : shown_input)
                             : report::import_text(r, label));
  if (r.empty_bundle) {
    if (!args.json) fmt::print("nothing to import: {} has no entries; the store is unchanged\n", label);
    return k_exit_ok;
  }
  if (r.refused.empty()) {
    if (args.replace) fmt::print(stderr, "{}", report::terminal_text(replaced_on_request_text(r)));
    return k_exit_ok;
  }
  fmt::print(stderr, "{}", report::import_refusals_text(r));
  // The verdict and its category (hence the exit code) are the library's.
  return report_error(*transfer::import_verdict(r, args.replace, label));
}

}  // namespace

void register_import(CLI::App& app, Action& action) {
  auto args = std::make_shared<ImportArgs>();
  auto* cmd =
      app.add_subcommand("import", "Check a bundle completely, then write all of it into the store, or nothing.");
  cmd->description(
      "Import a bundle made by `kcache export` or `kcache merge`, or a release of several namespaces\n"
      "(`export --for-device`, `--namespace` repeated; all of it in one transaction, or nothing; the\n"
      "SPIR-V sections are portable, --device and --fingerprint apply to the others). Before anything is written:\n"
      "the head (format version, sizes against limits, digest), the fingerprint against the\n"
      "target, the signature (with --trust), then every entry as it streams (digest, record,\n"
      "each SPIR-V module through spirv-val, each pipeline-cache blob against the target\n"
      "device), then the digest of the whole file. Then one write transaction.\n"
      "A module is validated under the policy its entry records (manifest key `validate`):\n"
      "strict refuses what spirv-val does not know, known accepts that (and keeps the flag),\n"
      "off checks only its structure (header, instruction lengths): an invalid module built\n"
      "with validate = \"off\" is accepted. Invalid modules are refused under strict and known.\n"
      "A record's policy is its own claim: one asking for known or off is refused unless\n"
      "--allow-validate names that policy or the bundle is signed by a --trust key.\n"
      "A delta (`export --since BASE`) applies only to a store holding BASE's entries it keeps;\n"
      "it removes only BASE's own build of a kernel (a newer one stays, named), and only with\n"
      "--replace or a signature by a --trust key (exit 1 otherwise, nothing written).\n"
      "Target: for spirv bundles --fingerprint TARGET_ENV when given (else the bundle's own\n"
      "target: SPIR-V is portable); for vulkan bundles --fingerprint FP, else the device\n"
      "(--device SEL, default the first GPU); for cuda bundles (cuda/<arch>) --device cuda:N\n"
      "(or N) checks that CUDA device N can run the arch (compute capability) and that its\n"
      "driver offers the bundle's cuda_version; without --device a cuda bundle is taken as\n"
      "built (a cubin serves every device of its arch). A mismatch names every differing field and\n"
      "exits 5; a damaged, untrusted or invalid bundle exits 6; the store is then unchanged.\n"
      "Each entry is compared with the store's entry of that name: new is imported; the same\n"
      "key and module bytes is already present; another key built no earlier than the stored\n"
      "entry replaces it (stale: the normal update). Two cases are conflicts, refused unless\n"
      "--replace (exit 1, each kernel named, nothing written): the same key with other module\n"
      "bytes (a forged or non-reproducible bundle), and an entry built before the stored one\n"
      "(a rollback to an older build). An entry or bundle dated over 5 minutes in the future is\n"
      "refused (exit 6). A bundle with no entries and no removals changes nothing.\n"
      "Examples:\n"
      "  kcache import shaders.kcb --fingerprint vulkan1.2\n"
      "  curl -s https://ci/shaders.kcb | kcache import - --trust ci.pub\n"
      "  kcache import last-week.kcb --replace   # roll back on purpose; each kernel named");
  cmd->add_option("bundle", args->input,
                  "bundle file, - for stdin, an http(s) URL (streamed as it downloads, e.g. from a WebDAV\n"
                  "server `kcache export -o URL` wrote to), or oci://HOST/REPO:TAG (`kcache push` wrote it;\n"
                  "streamed too, every blob checked against its digest, each section's head as it arrives)")
      ->required();
  args->store.add_to(*cmd);
  cmd->add_option("--fingerprint", args->fingerprint,
                  "require this target: a target env (spirv, e.g. vulkan1.2) or a device fingerprint id (vulkan)");
  cmd->add_option("--device", args->device,
                  "vulkan bundles: check against this device (index, name or fingerprint id); cuda bundles: the "
                  "CUDA device (cuda:N, N or a name) must run the bundle's arch and CUDA version")
      ->each([args](const std::string&) { args->device_given = true; });
  cmd->add_option("--trust", args->trust,
                  "accept only bundles signed by one of these public key files (NAME.pub from `kcache keygen`)")
      ->expected(1, -1);
  cmd->add_option("-j,--jobs", args->jobs, "validator threads (default: $KCACHE_JOBS, else all cores)");
  cmd->add_flag("--dry-run", args->dry_run, "check everything and print the counts, write nothing");
  cmd->add_flag("--replace", args->replace,
                "take conflicting entries from the bundle (same key with other bytes, or older than the "
                "stored entry) instead of refusing; each replaced kernel is named on stderr");
  cmd->add_option("--allow-validate", args->allow_validate,
                  "accept entries whose record asks for this weaker validation (known: what spirv-val does not know "
                  "is accepted; off: structure only); default strict, and a bundle signed by a --trust key is "
                  "taken as its records ask")
      ->check(CLI::IsMember({"strict", "known", "off"}));
  cmd->add_flag("--json", args->json, "print the result as JSON on stdout");
  cmd->add_option("--timeout-ms", args->timeout_ms,
                  "oci:// only: bound on the whole pull in ms, every request included (default 600000)")
      ->check(CLI::Range(1u, 3600000u));
  cmd->add_flag("--plain-http", args->plain_http, std::string("oci:// only: ") + k_plain_http_help);
  cmd->callback([args, &action] { action = [args] { return run_import(*args); }; });
}

}  // namespace kcache::cli
