// kcache push / pull: a bundle or release to and from an OCI registry
// (lib/kcache/remote/oci.hpp; the mapping in lib/kcache/remote/OCI.md).
#include "bundle_cli.hpp"
#include "cli.hpp"
#include "kcache/remote/oci.hpp"
#include "kcache/report/transfer_report.hpp"
#include "oci_cli.hpp"
#include "stop_signal.hpp"

#include <fmt/format.h>

namespace kcache::cli {
namespace {

struct PushArgs {
  std::string bundle, ref;
  unsigned timeout_ms = 0;
  bool plain_http = false;
  bool json = false;
};

struct PullArgs {
  std::string ref, output;
  unsigned timeout_ms = 0;
  bool plain_http = false;
};

int run_push(const PushArgs& args) {
  auto ref = remote::parse_oci_ref(args.ref);
  if (!ref) return report_error(ref.error());
  if (args.plain_http) ref->plain_http = true;
  auto options = oci_options(*ref, args.timeout_ms);
  if (!options) return report_error(options.error());
  StopOnSignal stop;
  options->cancelled = StopOnSignal::flag();
  auto pushed = remote::oci_push(args.bundle, *ref, *options);
  if (!pushed) return StopOnSignal::report(pushed.error());
  fmt::print("{}", args.json ? report::oci_push_json(*pushed, args.bundle, ref->shown())
                             : report::oci_push_text(*pushed, args.bundle, ref->shown()));
  return k_exit_ok;
}

int run_pull(const PullArgs& args) {
  auto ref = remote::parse_oci_ref(args.ref);
  if (!ref) return report_error(ref.error());
  if (args.plain_http) ref->plain_http = true;
  auto options = oci_options(*ref, args.timeout_ms);
  if (!options) return report_error(options.error());
  // Ctrl-C or SIGTERM ends the pull within a second; the file's temporary
  // is removed on the way out.
  StopOnSignal stop;
  options->cancelled = StopOnSignal::flag();
  auto pulled = remote::oci_pull(*ref, args.output, *options);
  if (!pulled) return StopOnSignal::report(pulled.error());
  fmt::print("{}", report::oci_pull_text(*pulled, ref->shown(), args.output));
  return k_exit_ok;
}

constexpr const char* k_timeout_help = "bound on the whole push or pull in ms, every request included (default 600000)";
constexpr const char* k_auth_help =
    "Authentication: anonymous unless the registry asks; then the credentials docker's config.json\n"
    "holds for the host ($DOCKER_CONFIG/config.json, else ~/.docker/config.json; `docker login`\n"
    "writes it), as basic auth or for the bearer token the registry's token service issues. They go\n"
    "only to the registry's own origin (scheme, host, port): an upload sent elsewhere is refused, a\n"
    "blob download redirected to object storage is followed without them.\n"
    "Loopback hosts (localhost, 127.*, [::1]) are spoken to over http, every other over https unless\n"
    "--plain-http. A transfer that moves under 1 KiB in 10 s is cut (stalled).\n";

}  // namespace

void register_push(CLI::App& app, Action& action) {
  auto args = std::make_shared<PushArgs>();
  auto* cmd = app.add_subcommand("push", "Push a bundle or release to an OCI registry, one layer per namespace.");
  cmd->description(std::string("Push a bundle (or a release of several namespaces) to an OCI registry as an artifact:\n"
                               "an OCI image manifest with kcache's artifact and config media types, one layer per\n"
                               "namespace, the device fingerprints and the signer in its annotations\n"
                               "(lib/kcache/remote/OCI.md). A layer the repository already has is not sent again.\n") +
                   k_auth_help +
                   "Examples:\n"
                   "  kcache export --for-device 9f3c2a7b1d4e6f80 --sign ci.key -o h200.kcb\n"
                   "  kcache push h200.kcb oci://registry.example.com/gpu/kernels:h200-580\n"
                   "  kcache import oci://registry.example.com/gpu/kernels:h200-580 --trust ci.pub");
  cmd->add_option("bundle", args->bundle, "bundle or release file (.kcb)")->required();
  cmd->add_option("reference", args->ref, "oci://HOST[:PORT]/REPOSITORY:TAG")->required();
  cmd->add_option("--timeout-ms", args->timeout_ms, k_timeout_help)->check(CLI::Range(1u, 3600000u));
  cmd->add_flag("--plain-http", args->plain_http, k_plain_http_help);
  cmd->add_flag("--json", args->json, "print the result as JSON");
  cmd->callback([args, &action] { action = [args] { return run_push(*args); }; });
}

void register_pull(CLI::App& app, Action& action) {
  auto args = std::make_shared<PullArgs>();
  auto* cmd = app.add_subcommand("pull", "Pull a release from an OCI registry into a file.");
  cmd->description(std::string("Pull an artifact `kcache push` wrote into a release file: the manifest (bounded),\n"
                               "the config (the release head) and every layer, each verified against its sha256\n"
                               "digest, the layers against the release head. `kcache import FILE` then checks it\n"
                               "as any bundle; `kcache import oci://...` does both.\n") +
                   k_auth_help +
                   "Example:\n"
                   "  kcache pull oci://registry.example.com/gpu/kernels:h200-580 -o h200.kcb");
  cmd->add_option("reference", args->ref, "oci://HOST[:PORT]/REPOSITORY[:TAG|@sha256:DIGEST]")->required();
  cmd->add_option("-o,--output", args->output, "release file to write (atomically)")->required();
  cmd->add_option("--timeout-ms", args->timeout_ms, k_timeout_help)->check(CLI::Range(1u, 3600000u));
  cmd->add_flag("--plain-http", args->plain_http, k_plain_http_help);
  cmd->callback([args, &action] { action = [args] { return run_pull(*args); }; });
}

}  // namespace kcache::cli
