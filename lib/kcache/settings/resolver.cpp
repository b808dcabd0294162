// The settings resolver (contract in resolver.hpp; the rules per key in
// settings.cpp's key table).
#include "kcache/settings/resolver.hpp"

#include "kcache/settings/remote_url.hpp"
#include "kcache/store/default_dir.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <utility>

namespace kcache::settings {
namespace {

/// A value as messages show it: untrusted text escaped and cut; a remote
/// URL's password hidden (a store's file may hold one).
std::string shown_value(std::string_view key, std::string_view value) {
  if (key == "remote") return util::shown_untrusted(redacted_url_text(value), 120);
  return util::shown_untrusted(value, 120);
}

/// A checked value of a bounded key as a number (check_setting accepted it).
double amount(std::string_view key, const std::string& value) {
  if (key == "map_size" || key == "max_size") return static_cast<double>(util::parse_size(value).value_or(0));
  return std::strtod(value.c_str(), nullptr);
}

/// The bound of a bounded key as the user would write it.
std::string shown_bound(const KeyInfo& info) {
  if (info.name == "map_size" || info.name == "max_size") return util::human_bytes(info.store_max);
  return std::to_string(info.store_max);
}

/// How a user sets `info` instead of a store: "-j, KCACHE_JOBS or `kcache
/// config set --user jobs VALUE`".
std::string other_levels(const KeyInfo& info) {
  std::vector<std::string> ways;
  if (!info.flag.empty()) ways.emplace_back(info.flag);
  if (!info.env.empty()) ways.emplace_back(info.env);
  ways.push_back(fmt::format("`kcache config set --user {} VALUE`", info.name));
  std::string out;
  for (std::size_t i = 0; i < ways.size(); ++i) out += (i == 0 ? "" : i + 1 == ways.size() ? " or " : ", ") + ways[i];
  return out;
}

}  // namespace

std::string store_refusal(std::string_view key, std::string_view value) {
  const KeyInfo* info = find_key(key);
  if (!info) return "it is not a kcache setting";
  if (info->store == StoreRule::refused) return fmt::format("{}; set it with {}", info->why, other_levels(*info));
  if (info->store == StoreRule::bounded && amount(key, std::string(value)) > static_cast<double>(info->store_max))
    return fmt::format(
        "a store may set at most {} (whoever writes a store does not own the machine); set more "
        "with {}",
        shown_bound(*info), other_levels(*info));
  return {};
}

std::string_view Environment::get(std::string_view name) const {
  auto it = values.find(name);
  return it == values.end() ? std::string_view() : std::string_view(it->second);
}

std::vector<std::string_view> environment_names() {
  std::vector<std::string_view> out;
  for (const auto& k : setting_keys())
    if (!k.env.empty()) out.push_back(k.env);
  out.insert(out.end(), {"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "HOME"});
  return out;
}

Environment capture_environment(const std::function<const char*(const char*)>& lookup) {
  Environment env;
  for (std::string_view name : environment_names()) {
    const std::string n(name);
    if (const char* value = lookup(n.c_str()); value && *value) env.values[n] = value;
  }
  return env;
}

std::string Refusal::text() const {
  return fmt::format("{}{}: {} = {} is not honoured: {}", util::escape_untrusted(file),
                     line ? fmt::format(":{}", line) : std::string(), key, shown_value(key, value), why);
}

Resolver::Resolver(Environment env, StoreRemotesReader store_remotes)
    : m_env(std::move(env)),
      m_store_remotes(std::move(store_remotes)),
      m_user_path(user_settings_path(m_env.get("XDG_CONFIG_HOME"), m_env.get("HOME"))) {}

std::vector<std::string> Resolver::take_warnings() { return std::exchange(m_warnings, {}); }

Result<const Settings*> Resolver::user_settings() {
  if (!m_user) {
    m_user = m_user_path ? read_settings_file(*m_user_path) : Result<SettingsFile>(SettingsFile{});
    if (*m_user && !(*m_user)->unreachable.empty())
      m_warnings.push_back(fmt::format("the user's settings: {}", (*m_user)->unreachable));
  }
  if (!*m_user) return tl::unexpected(m_user->error());
  return &(*m_user)->settings;
}

Result<const SettingsFile*> Resolver::store_file(const std::filesystem::path& store_dir) {
  auto it = m_stores.find(store_dir);
  if (it == m_stores.end()) {
    it = m_stores.emplace(store_dir, read_settings_file(store_settings_path(store_dir))).first;
    if (it->second && !it->second->unreachable.empty())
      m_warnings.push_back(fmt::format("the store's settings: {}", it->second->unreachable));
  }
  if (!it->second) return tl::unexpected(it->second.error());
  return &*it->second;
}

Result<Resolved> Resolver::resolve(std::string_view key, std::string_view flag,
                                   const std::filesystem::path& store_dir) {
  return run(key, flag, store_dir, false);
}

Result<Resolved> Resolver::explain(std::string_view key, const std::filesystem::path& store_dir) {
  return run(key, "", store_dir, true);
}

Result<Resolved> Resolver::run(std::string_view key, std::string_view flag, const std::filesystem::path& store_dir,
                               bool every_level) {
  const KeyInfo* info = find_key(key);
  if (!info) return fail(Category::invalid_argument, "no setting '{}'", util::shown_untrusted(key, 60));
  Resolved r;
  bool found = false;
  auto take = [&](std::string value, Source source, std::string origin) {
    if (found) return;
    r.value = std::move(value);
    r.source = source;
    r.origin = std::move(origin);
    found = true;
  };

  // Flag and environment: the caller's own choice, honoured for every key.
  if (!flag.empty()) {
    take(std::string(flag), Source::flag, "");
    if (!every_level) return r;
  }
  if (!info->env.empty()) {
    if (const std::string_view env = m_env.get(info->env); !env.empty()) {
      if (auto ok = check_setting(key, env); !ok)
        return fail(Category::invalid_argument, "{}{} is not valid ({}); unset it for the default, or fix it",
                    info->env,
                    // A remote URL may hold a password: its parser's message hides it.
                    key == "remote" ? "" : fmt::format("='{}'", util::shown_untrusted(env, 120)), ok.error().message);
      take(std::string(env), Source::env, std::string(info->env));
      if (!every_level) return r;
    }
  }

  // The store: written by whoever can write its folder.
  if (!store_dir.empty()) {
    if (key == "remote" && m_store_remotes) {
      if (auto remotes = KCACHE_TRY(m_store_remotes(store_dir)); !remotes.urls.empty())
        take(std::move(remotes.urls), Source::store, remotes.file.string());
    }
    const SettingsFile* file = KCACHE_TRY(store_file(store_dir));
    if (const Setting* line = find_line(file->settings, key)) {
      std::string why;
      if (key == "remote") {
        why = "a store's remotes are kept in its file 'remotes' (`kcache remote add`)";
      } else if (info->store != StoreRule::narrows) {
        why = store_refusal(key, line->value);
      } else {
        // A store may narrow trust, never choose it: each key file it names
        // must be one the user trusts already (the same file name, so the
        // same keys), or it would trust a key of the store writer's.
        const Settings* user = KCACHE_TRY(user_settings());
        const auto user_keys = split_remote_list(find_setting(*user, key).value_or(""));
        if (user_keys.empty()) {
          why =
              "a store may narrow trust but not choose it, and the user trusts no key (`kcache config set --user "
              "trust FILE`, or --trust)";
        } else {
          for (const auto& k : split_remote_list(line->value))
            if (std::find(user_keys.begin(), user_keys.end(), k) == user_keys.end()) {
              why = fmt::format("a store may only narrow trust to keys the user trusts, and '{}' is not one of them",
                                util::shown_untrusted(k, 120));
              break;
            }
        }
      }
      const std::string shown_file = store_settings_path(store_dir).string();
      if (why.empty()) take(line->value, Source::store, fmt::format("{}:{}", shown_file, line->line));
      else r.refused.push_back({std::string(key), line->value, Source::store, shown_file, line->line, why});
    }
    if (found && !every_level) return r;
  }

  // The user's own file.
  const Settings* user = KCACHE_TRY(user_settings());
  if (const Setting* line = find_line(*user, key)) {
    const std::string shown_file = m_user_path ? m_user_path->string() : std::string();
    if (info->user) take(line->value, Source::user, fmt::format("{}:{}", shown_file, line->line));
    else
      r.refused.push_back({std::string(key), line->value, Source::user, shown_file, line->line,
                           "kcache keeps it in each store's own settings, not the user's"});
  }
  return r;
}

Result<std::filesystem::path> Resolver::store_dir(std::string_view flag) {
  auto r = KCACHE_TRY(resolve("store", flag, {}));
  if (r.source == Source::none) return default_store();
  return std::filesystem::path(r.value);
}

std::filesystem::path Resolver::default_store() const {
  return store::default_store_dir({"", std::string(m_env.get("XDG_CACHE_HOME")), std::string(m_env.get("HOME"))});
}

std::string Resolver::default_value(std::string_view key) const {
  if (key == "store") return default_store().string();
  const KeyInfo* info = find_key(key);
  return info ? std::string(info->default_value) : std::string();
}

}  // namespace kcache::settings
