// Settings files and their precedence (format and contract in settings.hpp).
#include "kcache/settings/settings.hpp"

#include "kcache/remote/url.hpp"
#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace kcache::settings {
namespace {

constexpr std::string_view k_magic = "kcache-config";

constexpr KeyInfo k_keys[] = {
    {"max_size", "KCACHE_MAX_SIZE", "", true, true, false,
     "the store's size limit (500M, 10G): a build that leaves the store over it evicts least recently used "
     "entries, never those the build used",
     "no limit"},
    {"jobs", "KCACHE_JOBS", "-j", true, true, false, "threads of build, verify and import (1 to 4096)", "all cores"},
    {"remote", "KCACHE_REMOTE", "--remote", true, true, false,
     "remote caches, URLs separated by spaces (the store's own are `kcache remote add`'s)", "none"},
    {"trust", "", "--trust", true, true, false,
     "public key files (kcache keygen): accept only remote values signed by one of them",
     "none (remote values are not authenticated)"},
    {"namespace", "", "--namespace", true, true, false,
     "the namespace `kcache get` takes when a kernel is in several (e.g. spirv/vulkan1.2)", "none"},
    {"store", "KCACHE_STORE", "--store", false, true, false, "the default store folder",
     "$XDG_CACHE_HOME/kcache, else ~/.cache/kcache"},
    {"map_size", "KCACHE_MAP_SIZE", "", true, true, false, "LMDB map size of the store: the most it can ever hold",
     "64G"},
    {"pipeline_timeout", "KCACHE_PIPELINE_TIMEOUT", "", true, true, false, "seconds a silent pipeline worker lives",
     "300"},
    {"nvrtc", "KCACHE_NVRTC", "--nvrtc", true, true, false, "the NVRTC library for cuda kernels",
     "libnvrtc.so.13, .so.12, libnvrtc.so"},
    {"stats_zeroed", "", "", true, false, true, "when `kcache stats --zero` last reset the counters (unix seconds)"},
};

/// What to do about a damaged file, after what is wrong.
constexpr std::string_view k_fix = "fix or delete that line, or set it again with `kcache config set KEY VALUE`";

bool whole_number(std::string_view text, std::uint64_t min, std::uint64_t max) {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return !text.empty() && ec == std::errc{} && end == text.data() + text.size() && n >= min && n <= max;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// The words of a space-separated value.
std::vector<std::string> words(std::string_view value) { return remote::split_remote_list(value); }

}  // namespace

std::span<const KeyInfo> setting_keys() { return k_keys; }

const KeyInfo* find_key(std::string_view name) {
  for (const auto& k : k_keys)
    if (k.name == name) return &k;
  return nullptr;
}

Result<void> check_setting(std::string_view key, std::string_view value) {
  const KeyInfo* info = find_key(key);
  if (!info) {
    std::string nearest;
    std::size_t best = 3;
    for (const auto& k : k_keys) {
      const std::size_t d = util::edit_distance(key, k.name);
      if (!k.internal && d < best) best = d, nearest = k.name;
    }
    return fail(Category::not_found, "'{}' is not a kcache setting{} (`kcache config list` shows them all)",
                util::shown_untrusted(key, 60), nearest.empty() ? "" : fmt::format(" — did you mean '{}'?", nearest));
  }
  const std::string shown = util::shown_untrusted(value, 120);
  if (value.empty() || trim(value) != value)
    return fail(Category::invalid_argument, "{}: '{}' is empty or has spaces around it", key, shown);
  if (!util::is_printable_utf8(value))
    return fail(Category::invalid_argument, "{}: '{}' holds a control character", key, shown);
  if (key == "max_size" || key == "map_size") {
    auto size = util::parse_size(value);
    if (!size) return tl::unexpected(std::move(size).error().context(key));
    if (*size == 0 || *size > (std::uint64_t{1} << 50))
      return fail(Category::invalid_argument, "{}: '{}' is not a size from 1 byte to 1024T", key, shown);
  } else if (key == "jobs") {
    if (!whole_number(value, 1, 4096))
      return fail(Category::invalid_argument, "jobs: '{}' is not a number of threads from 1 to 4096", shown);
  } else if (key == "stats_zeroed") {
    if (!whole_number(value, 0, UINT64_MAX))
      return fail(Category::invalid_argument, "stats_zeroed: '{}' is not unix seconds", shown);
  } else if (key == "pipeline_timeout") {
    char* end = nullptr;
    const std::string text(value);
    const double seconds = std::strtod(text.c_str(), &end);
    if (!end || *end != '\0' || !(seconds > 0) || seconds > 1e6)
      return fail(Category::invalid_argument, "pipeline_timeout: '{}' is not a number of seconds", shown);
  } else if (key == "remote") {
    auto urls = words(value);
    if (urls.size() > 64) return fail(Category::invalid_argument, "remote: more than 64 URLs");
    for (const auto& u : urls)
      if (auto url = remote::parse_remote_url(u); !url) return tl::unexpected(std::move(url).error().context(key));
  } else if (key == "namespace") {
    if (value.find_first_of(" \t") != std::string_view::npos)
      return fail(Category::invalid_argument, "namespace: '{}' holds a space (one namespace, e.g. spirv/vulkan1.2)",
                  shown);
  }
  // store, nvrtc, trust: file names, checked when they are used.
  return {};
}

std::optional<std::string> find_setting(const Settings& settings, std::string_view key) {
  for (const auto& s : settings)
    if (s.key == key) return s.value;
  return std::nullopt;
}

void set_setting(Settings& settings, std::string_view key, std::string_view value) {
  for (auto& s : settings)
    if (s.key == key) {
      s.value = std::string(value);
      return;
    }
  settings.push_back({std::string(key), std::string(value)});
}

bool unset_setting(Settings& settings, std::string_view key) {
  return std::erase_if(settings, [&](const Setting& s) { return s.key == key; }) > 0;
}

Result<Settings> parse_settings(std::string_view text, std::string_view shown_path, Scope scope) {
  util::VersionedText rules;
  rules.label = "settings";
  rules.magic = k_magic;
  rules.version = k_settings_version;
  rules.max_bytes = k_max_settings_bytes;
  rules.allow_tab = true;  // people indent
  rules.fix = k_fix;
  rules.newer_fix = "use a newer kcache, or delete the file and set the settings again with `kcache config set`";
  Settings out;
  for (const auto& [line_no, raw] : KCACHE_TRY(util::versioned_text_lines(text, shown_path, rules))) {
    auto bad = [&, n = line_no](std::string_view what) {
      return tl::unexpected(util::versioned_text_error(rules, shown_path, n, what));
    };
    const std::string_view line = trim(raw);
    if (line.empty() || line.starts_with('#')) continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos)
      return bad(fmt::format("'{}' is not KEY = VALUE", util::shown_untrusted(line, 60)));
    const std::string_view key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (auto checked = check_setting(key, value); !checked) return bad(checked.error().message);
    const KeyInfo* info = find_key(key);
    if (scope == Scope::store && !info->store) return bad(fmt::format("'{}' is a user setting, not a store's", key));
    if (scope == Scope::user && !info->user) return bad(fmt::format("'{}' is a store's setting, not a user's", key));
    if (scope == Scope::store && key == "remote")
      return bad("a store's remotes are kept in its file 'remotes' (`kcache remote add`), not here");
    if (find_setting(out, key)) return bad(fmt::format("'{}' is set twice", key));
    out.push_back({std::string(key), std::string(value)});
  }
  return out;
}

std::string format_settings(const Settings& settings) {
  std::string out = fmt::format("{} {}\n", k_magic, k_settings_version);
  for (const auto& s : settings) out += fmt::format("{} = {}\n", s.key, s.value);
  return out;
}

std::filesystem::path store_settings_path(const std::filesystem::path& store_dir) {
  return store_dir / std::string(k_settings_file);
}

std::optional<std::filesystem::path> user_settings_path(std::string_view xdg_config_home, std::string_view home) {
  // The XDG base directory rules: a relative XDG_CONFIG_HOME is ignored.
  if (!xdg_config_home.empty() && xdg_config_home.front() == '/')
    return std::filesystem::path(xdg_config_home) / "kcache" / std::string(k_settings_file);
  if (!home.empty() && home.front() == '/')
    return std::filesystem::path(home) / ".config" / "kcache" / std::string(k_settings_file);
  return std::nullopt;
}

Result<Settings> read_settings(const std::filesystem::path& path, Scope scope) {
  util::ReadLimits limits;
  limits.max_bytes = k_max_settings_bytes;
  limits.regular_only = true;
  // Never followed: a planted link would make `config list` and a damaged
  // line's error quote another file's bytes.
  limits.no_symlink = true;
  auto text = util::read_file(path, limits);
  if (!text) {
    if (text.error().category == Category::not_found) return Settings{};
    if (text.error().category == Category::invalid_argument)
      return fail(Category::corruption,
                  "settings {}: {}; it must be a regular file: delete it and set the settings again with `kcache "
                  "config set`",
                  util::escape_untrusted(path.string()), text.error().message);
    return tl::unexpected(std::move(text).error());
  }
  return parse_settings(*text, path.string(), scope);
}

Result<void> write_settings(const std::filesystem::path& path, const Settings& settings) {
  std::error_code ec;
  if (settings.empty()) {
    std::filesystem::remove(path, ec);
    if (ec) return fail(Category::io_error, "cannot remove {}: {}", path.string(), ec.message());
    return {};
  }
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return fail(Category::io_error, "cannot create {}: {}", path.parent_path().string(), ec.message());
  // Mode 0600: a remote URL may hold a password.
  return util::write_file_atomic(path, util::as_bytes(format_settings(settings)), 0600);
}

std::string_view source_name(Source s) {
  switch (s) {
    case Source::flag: return "command line";
    case Source::env: return "environment";
    case Source::store: return "store";
    case Source::user: return "user";
    case Source::none: return "default";
  }
  return "?";
}

Resolved resolve_setting(const Layers& layers) {
  if (!layers.flag.empty()) return {layers.flag, Source::flag};
  if (!layers.env.empty()) return {layers.env, Source::env};
  if (!layers.store.empty()) return {layers.store, Source::store};
  if (!layers.user.empty()) return {layers.user, Source::user};
  return {};
}

}  // namespace kcache::settings
