// kcache remote check URL: is a remote cache reachable and writable, and what
// does it hold; and the remote options other subcommands share.
#include "bundle_cli.hpp"
#include "cli.hpp"
#include "remote_cli.hpp"

#include "kcache/bundle/key_files.hpp"
#include "kcache/remote/check.hpp"
#include "kcache/remote/url.hpp"
#include "kcache/report/remote_report.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace kcache::cli {

void RemoteArgs::add_to(CLI::App& cmd) {
  cmd.add_option("--remote", urls,
                 "a remote cache asked on a local miss before compiling, and given every compiled kernel\n"
                 "(repeatable, asked in order; default: the URLs in $KCACHE_REMOTE):\n"
                 "  redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]  http(s)://HOST[:PORT]/PATH/  file:///PATH\n"
                 "options after '?', '&'-separated: read-only, timeout-ms=N (default 2000), prefix=TEXT,\n"
                 "max-failures=N (default 3: a remote failing that often in a row is skipped for the run).\n"
                 "A remote never fails a build: failures are warnings, counted, and the kernel is compiled");
  cmd.add_flag("--remote-read-only", read_only, "read from the remotes but write nothing back to them");
  cmd.add_option("--sign", sign, "sign the values written to remotes with this secret key (kcache keygen)");
  cmd.add_option("--trust", trust,
                 "accept only remote values signed by one of these public keys (repeatable); without it the\n"
                 "summary says the values were not authenticated");
}

Result<std::unique_ptr<remote::RemoteTier>> make_remote_tier(const RemoteArgs& args) {
  std::vector<std::string> urls = args.urls;
  if (urls.empty())
    if (const char* env = std::getenv("KCACHE_REMOTE")) urls = remote::split_remote_list(env);
  if (urls.empty()) {
    if (!args.sign.empty() || !args.trust.empty() || args.read_only)
      return fail(Category::invalid_argument,
                  "--sign, --trust and --remote-read-only apply to remote caches: give --remote URL (or set "
                  "KCACHE_REMOTE)");
    return std::unique_ptr<remote::RemoteTier>{};
  }
  remote::TierOptions options;
  for (const auto& u : urls) options.remotes.push_back(KCACHE_TRY(remote::parse_remote_url(u)));
  options.read_only = args.read_only;
  if (!args.trust.empty()) {
    std::vector<std::filesystem::path> paths(args.trust.begin(), args.trust.end());
    options.trusted = KCACHE_TRY(bundle::load_public_keys(paths));
  }
  if (!args.sign.empty()) options.sign = KCACHE_TRY(bundle::load_secret_key(args.sign));
  ignore_sigpipe();
  return std::make_unique<remote::RemoteTier>(std::move(options));
}

namespace {

struct CheckArgs {
  std::string url;
  bool json = false;
};

int run_check(const CheckArgs& args) {
  auto url = remote::parse_remote_url(args.url);
  if (!url) return report_error(url.error());
  ignore_sigpipe();
  auto result = remote::check_remote(*url);
  if (args.json) fmt::print("{}", report::remote_check_json(result));
  else fmt::print("{}", report::remote_check_text(result));
  if (!result.reachable) return k_exit_store;
  if (!result.read_only && !result.writable) return k_exit_store;
  return k_exit_ok;
}

}  // namespace

void register_remote(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("remote", "Remote caches: check one.");
  cmd->description(
      "Remote caches (Redis, HTTP servers that store files by path, a shared folder) that builds\n"
      "share: see `kcache build --help` (--remote).");
  cmd->require_subcommand(1);
  auto args = std::make_shared<CheckArgs>();
  auto* check = cmd->add_subcommand("check", "Say whether a remote is reachable and writable and what it holds.");
  check->description(
      "Say whether a remote is reachable (a probe read), writable (a probe value written, read back and\n"
      "removed; not tried for a read-only URL) and how many values of each namespace it holds where\n"
      "the server can list its keys (Redis, a folder; not plain HTTP). Exit 0 when reachable and\n"
      "writable (or read-only), 4 otherwise.");
  check->add_option("url", args->url, "the remote URL (as for build --remote)")->required();
  check->add_flag("--json", args->json, "print the result as JSON (schema kcache.remote-check/1)");
  check->callback([args, &action] { action = [args] { return run_check(*args); }; });
}

}  // namespace kcache::cli
