// kcache remote check URL: is a remote cache reachable and writable, and what
// does it hold; kcache remote add | list | remove: a store's remote setting;
// and the remote options other subcommands share.
#include "bundle_cli.hpp"
#include "cli.hpp"
#include "remote_cli.hpp"

#include "kcache/bundle/key_files.hpp"
#include "kcache/remote/check.hpp"
#include "kcache/remote/setting.hpp"
#include "kcache/remote/url.hpp"
#include "kcache/report/remote_report.hpp"
#include "kcache/report/report.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace kcache::cli {

void RemoteArgs::add_to(CLI::App& cmd) {
  auto* remote =
      cmd.add_option("--remote", urls,
                     "a remote cache asked on a local miss before compiling, and given every compiled kernel\n"
                     "(repeatable, asked in order; default: the URLs in $KCACHE_REMOTE, else the store's own,\n"
                     "`kcache remote add`; with --backend vulkan pipelines too):\n"
                     "  redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]  http(s)://HOST[:PORT]/PATH/  file:///PATH\n"
                     "options after '?', '&'-separated: read-only, timeout-ms=N (default 2000), prefix=TEXT,\n"
                     "max-failures=N (default 3: a remote failing that often in a row is skipped for the run),\n"
                     "trust=PUBLIC_KEY_HEX (only values signed by that key; see --trust).\n"
                     "A remote never fails a build: failures are warnings, counted, and the kernel is compiled");
  cmd.add_flag("--no-remote", none, "ask no remote cache in this run (not $KCACHE_REMOTE, not the store's)")
      ->excludes(remote);
  cmd.add_flag("--remote-read-only", read_only, "read from the remotes but write nothing back to them");
  cmd.add_option("--sign", sign, "sign the values written to remotes with this secret key (kcache keygen)");
  cmd.add_option("--trust", trust,
                 "accept only remote values signed by one of these public keys (repeatable), from every remote;\n"
                 "a URL's trust=PUBLIC_KEY_HEX does the same for that remote and is saved with it (`kcache\n"
                 "remote add URL --trust KEY.pub`, $KCACHE_REMOTE). Without either the summary says the\n"
                 "values were not authenticated");
}

Result<std::unique_ptr<remote::RemoteTier>> make_remote_tier(const RemoteArgs& args, const std::string& store_dir) {
  // --remote > KCACHE_REMOTE > the store's remotes > the user's `remote`
  // setting (cli::setting, the one precedence); --no-remote: none.
  std::vector<std::string> urls = args.urls;  // as given: the parser judges each
  bool store_remotes = false;                 // the URLs are the store's own (STORE/remotes)
  if (!args.none && urls.empty()) {
    auto resolved = KCACHE_TRY(setting("remote", "", store_dir));
    urls = remote::split_remote_list(resolved.value);
    store_remotes = resolved.source == settings::Source::store;
  }
  std::vector<std::string> trust = args.trust;
  if (trust.empty() && !urls.empty())
    trust = remote::split_remote_list(KCACHE_TRY(setting("trust", "", store_dir)).value);
  if (urls.empty()) {
    if (!args.sign.empty() || !args.trust.empty() || args.read_only)
      return fail(Category::invalid_argument,
                  "--sign, --trust and --remote-read-only apply to remote caches: give --remote URL (or set "
                  "KCACHE_REMOTE, or `kcache remote add URL`){}",
                  args.none ? ", without --no-remote" : "");
    return std::unique_ptr<remote::RemoteTier>{};
  }
  remote::TierOptions options;
  options.read_only = args.read_only;
  if (!trust.empty()) {
    std::vector<std::filesystem::path> paths(trust.begin(), trust.end());
    options.trusted = KCACHE_TRY(bundle::load_public_keys(paths));
  }
  for (const auto& u : urls) {
    auto url = KCACHE_TRY(remote::parse_remote_url(u));
    // A store's own remote may narrow trust (trust= on its URL, when the run
    // trusts no key), never widen it: with keys of the run's, a key of the
    // store writer's would be trusted beside them, so it is dropped.
    if (store_remotes && !options.trusted.empty())
      std::erase_if(url.trust, [&](const remote::TrustedKey& k) {
        const bool known = std::any_of(options.trusted.begin(), options.trusted.end(),
                                       [&](const bundle::PublicKey& p) { return p.bytes == k; });
        if (!known)
          print_settings_warnings(
              {{"remote", url.shown(), settings::Source::store, remote::remote_setting_path(store_dir).string(), 0,
                fmt::format("its trust={} is not a key this run trusts: a store may narrow "
                            "trust, never widen it; that key is not honoured",
                            util::to_hex(k).substr(0, 16))}});
        return !known;
      });
    options.remotes.push_back(std::move(url));
  }
  // --sign > KCACHE_SIGN > the user's `sign` setting (never a store's).
  const std::string sign = args.sign.empty() ? KCACHE_TRY(setting("sign", "", store_dir)).value : args.sign;
  if (!sign.empty()) options.sign = KCACHE_TRY(bundle::load_secret_key(sign));
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

struct SettingArgs {
  StoreOptions store;
  std::string url;
  bool read_only = false;
  std::vector<std::string> trust;  ///< add: public key files, saved as trust= options
  bool json = false;
};

/// `remote add`: appends URL to the store's setting, or replaces the entry
/// naming the same remote in place (its position, so its order, is kept).
int run_add(const SettingArgs& args) {
  std::string text = args.url;
  auto url = remote::parse_remote_url(text);
  if (!url) return report_error(url.error());
  auto add_option = [&](std::string_view option) {
    text += text.find('?') == std::string::npos ? "?" : "&";
    text += option;
  };
  if (args.read_only && !url->read_only) add_option("read-only");
  // --trust KEY.pub is saved as the URL's trust= option, so every build that
  // asks this remote accepts only values signed by one of these keys.
  if (!args.trust.empty()) {
    std::vector<std::filesystem::path> paths(args.trust.begin(), args.trust.end());
    auto keys = bundle::load_public_keys(paths);
    if (!keys) return report_error(keys.error());
    for (const auto& k : *keys) add_option("trust=" + util::to_hex(k.bytes));
  }
  url = remote::parse_remote_url(text);  // the text that is saved, read as every build will read it
  if (!url) return report_error(url.error());
  auto remotes = remote::read_remote_setting(args.store.path());
  if (!remotes) return report_error(remotes.error());
  bool replaced = false;
  for (auto& r : *remotes)
    if (remote::same_remote(r.url, *url)) {
      r = {text, *url};
      replaced = true;
    }
  if (!replaced) remotes->push_back({text, *url});
  if (auto written = remote::write_remote_setting(args.store.path(), *remotes); !written)
    return report_error(written.error());
  fmt::print("{}",
             report::terminal_text(fmt::format("{} remote {} of store {} ({} in all)\n", replaced ? "updated" : "added",
                                               url->shown(), args.store.path(), remotes->size())));
  return k_exit_ok;
}

int run_list(const SettingArgs& args) {
  auto remotes = remote::read_remote_setting(args.store.path());
  if (!remotes) return report_error(remotes.error());
  std::vector<remote::RemoteUrl> urls;
  for (const auto& r : *remotes) urls.push_back(r.url);
  const auto file = remote::remote_setting_path(args.store.path()).string();
  if (args.json) fmt::print("{}", report::remote_setting_json(file, urls));
  else fmt::print("{}", report::remote_setting_text(file, urls));
  return k_exit_ok;
}

int run_remove(const SettingArgs& args) {
  auto url = remote::parse_remote_url(args.url);
  if (!url) return report_error(url.error());
  auto remotes = remote::read_remote_setting(args.store.path());
  if (!remotes) return report_error(remotes.error());
  auto before = remotes->size();
  std::erase_if(*remotes, [&](const remote::SettingRemote& r) { return remote::same_remote(r.url, *url); });
  if (remotes->size() == before)
    return report_error(
        Error{Category::not_found, fmt::format("store {} has no remote {} (`kcache remote list` shows its remotes)",
                                               args.store.path(), url->shown())});
  if (auto written = remote::write_remote_setting(args.store.path(), *remotes); !written)
    return report_error(written.error());
  fmt::print("{}", report::terminal_text(fmt::format("removed remote {} from store {} ({} left)\n", url->shown(),
                                                     args.store.path(), remotes->size())));
  return k_exit_ok;
}

/// The store options of the setting subcommands: --store only (--read-only
/// would make no sense for add/remove, and list never writes).
void add_store_option(CLI::App& cmd, SettingArgs& args) {
  add_store_dir_option(cmd, args.store.dir,
                       "the store whose remotes these are (default: $KCACHE_STORE, else "
                       "$XDG_CACHE_HOME/kcache, else ~/.cache/kcache)");
}

}  // namespace

void register_remote(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("remote", "Remote caches: a store's own remotes (add, list, remove); check one.");
  cmd->description(
      "Remote caches (Redis, HTTP servers that store files by path, a shared folder) that builds\n"
      "share: see `kcache build --help` (--remote). A store can keep its own remotes (`remote add`):\n"
      "every build with that store then asks them without a flag. Which remotes a build asks, first\n"
      "match wins: --remote URL..., else $KCACHE_REMOTE, else the store's remotes; --no-remote: none.\n"
      "The store's remotes are kept in plain text in STORE/remotes (mode 0600), passwords included:\n"
      "anyone who can read that file can read them. Every URL shown hides its password.");
  cmd->require_subcommand(1);
  {
    auto sargs = std::make_shared<SettingArgs>();
    auto* add = cmd->add_subcommand("add", "Add a remote to the store's own remotes (asked by every build).");
    add->description(
        "Add URL to the store's remotes, asked in the order added by every build that names no\n"
        "--remote and no $KCACHE_REMOTE. A URL naming a remote the store has already (the same server,\n"
        "path, database and prefix) replaces it in place. Stored in plain text in STORE/remotes\n"
        "(mode 0600), password included.");
    add->add_option("url", sargs->url, "the remote URL (as for build --remote, options included)")->required();
    add->add_flag("--read-only", sargs->read_only, "builds read from this remote but write nothing back to it");
    add->add_option("--trust", sargs->trust,
                    "accept from this remote only values signed by this public key (kcache keygen's KEY.pub;\n"
                    "repeatable): saved in the URL as trust=PUBLIC_KEY_HEX, as KCACHE_REMOTE may carry it too");
    add_store_option(*add, *sargs);
    add->callback([sargs, &action] { action = [sargs] { return run_add(*sargs); }; });
  }
  {
    auto sargs = std::make_shared<SettingArgs>();
    auto* list = cmd->add_subcommand("list", "List the store's own remotes, in the order builds ask them.");
    list->description("List the store's own remotes in the order builds ask them, passwords hidden.");
    list->add_flag("--json", sargs->json, "print them as JSON (schema kcache.remote-list/1)");
    add_store_option(*list, *sargs);
    list->callback([sargs, &action] { action = [sargs] { return run_list(*sargs); }; });
  }
  {
    auto sargs = std::make_shared<SettingArgs>();
    auto* remove = cmd->add_subcommand("remove", "Remove a remote from the store's own remotes.");
    remove->description(
        "Remove the store's remote that URL names (as `remote list` shows it: a password and\n"
        "?read-only may be left out). Exit 3 when the store has no such remote.");
    remove->add_option("url", sargs->url, "the remote URL")->required();
    add_store_option(*remove, *sargs);
    remove->callback([sargs, &action] { action = [sargs] { return run_remove(*sargs); }; });
  }
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
