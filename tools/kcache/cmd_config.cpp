// kcache config list | get | set | unset: the settings of a store and of the
// user (settings/settings.hpp), as `ccache --show-config / --set-config`.
#include "cli.hpp"

#include "kcache/remote/setting.hpp"
#include "kcache/remote/url.hpp"
#include "kcache/report/report.hpp"
#include "kcache/settings/settings.hpp"

#include <fmt/format.h>

namespace kcache::cli {
namespace {

struct ConfigArgs {
  std::string store;         ///< --store
  bool user = false;         ///< --user: the user's file, not the store's
  bool show_origin = false;  ///< get --show-origin: where the value comes from, before it
  std::string key, value;
};

std::string store_dir(const ConfigArgs& args) {
  StoreOptions options;
  options.dir = args.store;
  return options.path();
}

/// A value as shown: remote URLs with their passwords hidden.
std::string shown(std::string_view key, const std::string& value) {
  if (key != "remote") return value;
  std::string out;
  for (const auto& u : remote::split_remote_list(value)) {
    auto url = remote::parse_remote_url(u);
    out += (out.empty() ? "" : " ") + (url ? url->shown() : std::string("(not a URL)"));
  }
  return out;
}

/// The key named `key`; not_found naming the nearest one otherwise.
Result<const settings::KeyInfo*> known_key(const std::string& key) {
  if (const settings::KeyInfo* info = settings::find_key(key)) return info;
  return tl::unexpected(settings::check_setting(key, "").error());
}

/// Refuses keys that `set`/`unset` may not write where asked. `unset` may
/// remove any key a file holds (a line kcache does not honour included).
Result<const settings::KeyInfo*> writable_key(const ConfigArgs& args, bool setting_it) {
  const settings::KeyInfo* info = KCACHE_TRY(known_key(args.key));
  if (info->internal)
    return fail(Category::invalid_argument, "'{}' is kept by kcache itself (`kcache stats --zero`)", args.key);
  if (!setting_it) return info;
  if (args.user && !info->user)
    return fail(Category::invalid_argument, "'{}' is a store's setting: leave --user out", args.key);
  if (!args.user && info->store == settings::StoreRule::refused)
    return fail(Category::invalid_argument, "'{}' is a user setting: add --user ({})", args.key, info->why);
  // What a store may not hold is never written there (it would be refused).
  if (!args.user)
    if (const std::string why = settings::store_refusal(args.key, args.value); !why.empty())
      return fail(Category::invalid_argument, "{} = {} in a store: {}", args.key, args.value, why);
  return info;
}

Result<std::filesystem::path> file_of(const ConfigArgs& args) {
  if (!args.user) return settings::store_settings_path(store_dir(args));
  auto path = user_settings_file();
  if (!path)
    return fail(Category::invalid_argument,
                "no user settings file: neither XDG_CONFIG_HOME nor HOME is an absolute path");
  return *path;
}

/// Writes one key (`value` empty: removes it) into the chosen file; the
/// store's `remote` goes to its remote setting (STORE/remotes), the one file
/// `kcache remote add` writes.
Result<bool> write_key(const ConfigArgs& args, const std::string& value) {
  if (!args.user && args.key == "remote") {
    std::vector<remote::SettingRemote> remotes;
    for (auto& u : remote::split_remote_list(value)) {
      auto url = KCACHE_TRY(remote::parse_remote_url(u));
      remotes.push_back({std::move(u), std::move(url)});
    }
    const bool had = !KCACHE_TRY(remote::read_remote_setting(store_dir(args))).empty();
    KCACHE_CHECK(remote::write_remote_setting(store_dir(args), remotes));
    return had;
  }
  const auto path = KCACHE_TRY(file_of(args));
  auto current = KCACHE_TRY(settings::read_settings(path));
  bool had = settings::find_setting(current, args.key).has_value();
  if (value.empty()) settings::unset_setting(current, args.key);
  else settings::set_setting(current, args.key, value);
  KCACHE_CHECK(settings::write_settings(path, current));
  return had;
}

std::string where(const ConfigArgs& args) {
  if (args.user) return fmt::format("the user's settings ({})", file_of(args).value_or("").string());
  if (args.key == "remote")
    return fmt::format("store {} ({})", store_dir(args), remote::remote_setting_path(store_dir(args)).string());
  return fmt::format("store {} ({})", store_dir(args), settings::store_settings_path(store_dir(args)).string());
}

int run_set(const ConfigArgs& args) {
  if (auto ok = settings::check_setting(args.key, args.value); !ok) return report_error(ok.error());
  if (auto info = writable_key(args, true); !info) return report_error(info.error());
  if (auto written = write_key(args, args.value); !written) return report_error(written.error());
  fmt::print("{}", report::terminal_text(
                       fmt::format("set {} = {} in {}\n", args.key, shown(args.key, args.value), where(args))));
  return k_exit_ok;
}

int run_unset(const ConfigArgs& args) {
  if (auto info = writable_key(args, false); !info) return report_error(info.error());
  auto written = write_key(args, "");
  if (!written) return report_error(written.error());
  if (!*written) return report_error({Category::not_found, fmt::format("{} is not set in {}", args.key, where(args))});
  fmt::print("{}", report::terminal_text(fmt::format("unset {} in {}\n", args.key, where(args))));
  return k_exit_ok;
}

/// Where a resolved value comes from, as `config list` and `get
/// --show-origin` show it: "store", "environment KCACHE_JOBS", "default".
std::string origin_name(const settings::KeyInfo& key, const settings::Resolved& value) {
  if (value.source == settings::Source::env) return fmt::format("environment {}", key.env);
  return std::string(settings::source_name(value.source));
}

int run_get(const ConfigArgs& args) {
  auto known = known_key(args.key);
  if (!known) return report_error(known.error());
  auto value = setting(args.key, "", store_dir(args));
  if (!value) return report_error(value.error());
  // Unset: the value in effect is the default's (empty when it is not a
  // value, as "no limit"), and it says so; not an error.
  const bool unset = value->source == settings::Source::none;
  const std::string shown_value = unset ? settings_resolver().default_value(args.key) : shown(args.key, value->value);
  // Each part escaped on its own: the tab between them is ours.
  if (args.show_origin)
    fmt::print("{}\t", report::terminal_text(fmt::format("{}{}", origin_name(**known, *value),
                                                         value->origin.empty() ? "" : " " + value->origin)));
  fmt::print("{}\n", report::terminal_text(shown_value));
  if (unset && !args.show_origin)
    fmt::print(stderr, "kcache: {} is not set: the default applies ({})\n", args.key, (*known)->fallback);
  return k_exit_ok;
}

int run_list(const ConfigArgs& args) {
  const std::string dir = store_dir(args);
  auto user = user_settings_file();
  std::string out = fmt::format("# store {}: {}\n# user: {}\n", dir, settings::store_settings_path(dir).string(),
                                user ? user->string() : std::string("(none: no HOME)"));
  out += "# precedence: command line > environment > store > user > default\n";
  out +=
      "# a store never sets nvrtc, glslc, glslang_validator or store, sets numbers within bounds, and may only "
      "narrow trust\n";
  for (const auto& key : settings::setting_keys()) {
    auto value = settings_resolver().explain(key.name, dir);
    if (!value) return report_error(value.error());
    // Refused values first, each with its file and line, then what applies.
    for (const auto& r : value->refused)
      out += fmt::format("(refused) {} = {}  # {}:{}: {}\n", key.name, shown(key.name, r.value), r.file, r.line, r.why);
    if (key.internal && value->source == settings::Source::none) continue;
    const std::string where = value->source == settings::Source::store || value->source == settings::Source::user
                                  ? fmt::format("  # {}", value->origin)
                                  : std::string();
    if (value->source == settings::Source::none) out += fmt::format("(default) {} = # {}\n", key.name, key.fallback);
    else
      out += fmt::format("({}) {} = {}{}\n", origin_name(key, *value), key.name, shown(key.name, value->value), where);
  }
  print_settings_warnings({});
  fmt::print("{}", report::terminal_text(out));
  return k_exit_ok;
}

void add_common(CLI::App& cmd, ConfigArgs& args, bool user) {
  add_store_dir_option(cmd, args.store,
                       "the store whose settings these are (default: $KCACHE_STORE, else the user's `store`\n"
                       "setting, else $XDG_CACHE_HOME/kcache, else ~/.cache/kcache)");
  if (user)
    cmd.add_flag("--user", args.user,
                 "the user's settings ($XDG_CONFIG_HOME/kcache/config, else ~/.config/kcache/config), not the store's");
}

}  // namespace

void register_config(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("config", "Settings of a store and of the user: list, get, set, unset.");
  std::string keys;
  for (const auto& k : settings::setting_keys())
    if (!k.internal)
      keys +=
          fmt::format("  {:<17}{}{}\n", k.name, k.help, k.env.empty() ? std::string() : fmt::format(" [{}]", k.env));
  cmd->description(
      "Settings that would otherwise be flags or environment variables on every call. Each is kept\n"
      "per store (STORE/config; a store's remotes in STORE/remotes, as `kcache remote add` keeps\n"
      "them) or per user ($XDG_CONFIG_HOME/kcache/config, else ~/.config/kcache/config). The value\n"
      "that applies, first found: the command-line option, the environment variable, the store's\n"
      "setting, the user's setting, the default. Whoever can write a store can write its settings,\n"
      "so a store never names code to run (nvrtc, glslc, glslang_validator) or the store folder,\n"
      "gives numbers only within bounds, and may only narrow trust to keys the user trusts: `config\n"
      "list` shows a store value it does not honour as (refused), with its file and line. Files are\n"
      "written mode 0600 (a remote URL may hold a password); URLs are shown with their passwords hidden.\n"
      "\n"
      "Settings:\n" +
      keys +
      "\n"
      "Examples:\n"
      "  kcache config set max_size 10G        # this store: evicted after a build that crosses it\n"
      "  kcache config set --user jobs 8\n"
      "  kcache config list\n"
      "  kcache config get max_size\n"
      "  kcache config unset max_size");
  cmd->require_subcommand(1);
  {
    auto args = std::make_shared<ConfigArgs>();
    auto* list = cmd->add_subcommand("list", "Every setting with the value that applies and where it comes from.");
    add_common(*list, *args, false);
    list->callback([args, &action] { action = [args] { return run_list(*args); }; });
  }
  {
    auto args = std::make_shared<ConfigArgs>();
    auto* get = cmd->add_subcommand(
        "get", "Print the value of a setting that applies (when none is set, the default's, and a note on stderr).");
    get->add_option("key", args->key, "the setting")->required();
    get->add_flag("--show-origin", args->show_origin,
                  "print where the value comes from before it, tab-separated (store FILE:LINE, user FILE:LINE,\n"
                  "environment VARIABLE, command line, default)");
    add_common(*get, *args, false);
    get->callback([args, &action] { action = [args] { return run_get(*args); }; });
  }
  {
    auto args = std::make_shared<ConfigArgs>();
    auto* set = cmd->add_subcommand("set", "Set a setting of the store (or, --user, of the user).");
    set->add_option("key", args->key, "the setting")->required();
    set->add_option("value", args->value, "its value")->required();
    add_common(*set, *args, true);
    set->callback([args, &action] { action = [args] { return run_set(*args); }; });
  }
  {
    auto args = std::make_shared<ConfigArgs>();
    auto* unset = cmd->add_subcommand("unset", "Remove a setting of the store (or, --user, of the user).");
    unset->add_option("key", args->key, "the setting")->required();
    add_common(*unset, *args, true);
    unset->callback([args, &action] { action = [args] { return run_unset(*args); }; });
  }
}

}  // namespace kcache::cli
