// Settings files and their precedence (format and contract in settings.hpp).
#include "kcache/settings/settings.hpp"

#include "kcache/settings/remote_url.hpp"
#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace kcache::settings {
namespace {

constexpr std::string_view k_magic = "kcache-config";

constexpr std::string_view k_runs_code =
    "a store may not name code to run: whoever can write a store would run code as every user of it";

// Designated initialisers: each key says what every level may do with it.
constexpr KeyInfo k_keys[] = {
    {.name = "max_size",
     .env = "KCACHE_MAX_SIZE",
     .help = "the store's size limit (500M, 10G): a build that leaves the store over it evicts least recently "
             "used entries, never those the build used",
     .fallback = "no limit"},
    {.name = "jobs",
     .env = "KCACHE_JOBS",
     .flag = "-j",
     .store = StoreRule::bounded,
     .help = "threads of build, verify and import (1 to 4096; a store's at most 64)",
     .fallback = "all cores",
     .store_max = 64},
    {.name = "remote",
     .env = "KCACHE_REMOTE",
     .flag = "--remote",
     .help = "remote caches, URLs separated by spaces (the store's own are `kcache remote add`'s)",
     .fallback = "none"},
    {.name = "trust",
     .flag = "--trust",
     .store = StoreRule::narrows,
     .help = "public key files (kcache keygen): accept only remote values signed by one of them (a store's may "
             "only name some of the user's)",
     .fallback = "none (remote values are not authenticated)"},
    {.name = "sign",
     .env = "KCACHE_SIGN",
     .flag = "--sign",
     .store = StoreRule::refused,
     .help = "a secret key file (kcache keygen): sign the values written to remote caches with it, so that "
             "readers trusting its public key believe them, recorded inputs included (never from a store)",
     .fallback = "none (values are written unsigned)",
     .why = "a store may not choose what its users sign"},
    {.name = "namespace",
     .flag = "--namespace",
     .help = "the namespace `kcache get` takes when a kernel is in several (e.g. spirv/vulkan1.2)",
     .fallback = "none"},
    {.name = "store",
     .env = "KCACHE_STORE",
     .flag = "--store",
     .store = StoreRule::refused,
     .help = "the default store folder",
     .fallback = "$XDG_CACHE_HOME/kcache, else ~/.cache/kcache",
     .why = "a store cannot choose where the store is"},
    {.name = "map_size",
     .env = "KCACHE_MAP_SIZE",
     .store = StoreRule::bounded,
     .help = "LMDB map size of the store: the most it can ever hold (a store's at most 4T)",
     .fallback = "64G",
     .store_max = std::uint64_t{4} << 40,
     .default_value = "64G"},
    {.name = "pipeline_timeout",
     .env = "KCACHE_PIPELINE_TIMEOUT",
     .store = StoreRule::bounded,
     .help = "seconds a silent pipeline worker lives (a store's at most 3600)",
     .fallback = "300",
     .store_max = 3600,
     .default_value = "300"},
    {.name = "nvrtc",
     .env = "KCACHE_NVRTC",
     .flag = "--nvrtc",
     .store = StoreRule::refused,
     .help = "the NVRTC library for cuda kernels (never from a store)",
     .fallback = "libnvrtc.so.13, .so.12, libnvrtc.so",
     .why = k_runs_code},
    {.name = "glslc",
     .env = "KCACHE_GLSLC",
     .store = StoreRule::refused,
     .help = "the real glslc the launcher runs when it cannot serve a command (never from a store)",
     .fallback = "the first glslc on PATH that is not kcache",
     .why = k_runs_code},
    {.name = "glslang_validator",
     .env = "KCACHE_GLSLANG_VALIDATOR",
     .store = StoreRule::refused,
     .help = "the real glslangValidator the launcher runs when it cannot serve a command (never from a store)",
     .fallback = "the first glslangValidator on PATH that is not kcache",
     .why = k_runs_code},
    {.name = "launcher_validate",
     .env = "KCACHE_LAUNCHER_VALIDATE",
     .store = StoreRule::refused,
     .help = "how the glslc launcher validates modules, as a manifest's validate: strict, known (store a module "
             "spirv-val does not know, flagged) or off; per output as PATTERN=POLICY words, e.g. "
             "'strict *coopmat*.spv=known' (never from a store)",
     .fallback = "strict",
     .why = "a store may not weaken validation: whoever can write a store would have unchecked modules served",
     .default_value = "strict"},
    {.name = "stats_zeroed",
     .user = false,
     .internal = true,
     .help = "when `kcache stats --zero` last reset the counters (unix seconds)"},
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
std::vector<std::string> words(std::string_view value) { return split_remote_list(value); }

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
      if (auto url = parse_remote_url(u); !url) return tl::unexpected(std::move(url).error().context(key));
  } else if (key == "launcher_validate") {
    if (auto rules = parse_validate_rules(value); !rules) return tl::unexpected(std::move(rules).error());
  } else if (key == "namespace") {
    if (value.find_first_of(" \t") != std::string_view::npos)
      return fail(Category::invalid_argument, "namespace: '{}' holds a space (one namespace, e.g. spirv/vulkan1.2)",
                  shown);
  }
  // store, nvrtc, glslc, glslang_validator, trust: file names, checked when
  // they are used; the resolver decides which levels may give them.
  return {};
}

Result<std::vector<ValidateRule>> parse_validate_rules(std::string_view value) {
  std::vector<ValidateRule> rules;
  bool bare = false;
  for (const auto& word : words(value)) {
    if (rules.size() == k_max_validate_rules)
      return fail(Category::invalid_argument, "launcher_validate: more than {} words", k_max_validate_rules);
    const auto eq = word.rfind('=');
    const std::string pattern = eq == std::string::npos ? "" : word.substr(0, eq);
    const std::string policy = eq == std::string::npos ? word : word.substr(eq + 1);
    auto parsed = definition::parse_validate_policy(policy);
    if (!parsed)
      return fail(Category::invalid_argument,
                  "launcher_validate: '{}' is not POLICY or PATTERN=POLICY with POLICY strict, known or off",
                  util::shown_untrusted(word, 120));
    if (eq != std::string::npos && pattern.empty())
      return fail(Category::invalid_argument, "launcher_validate: '{}' has an empty pattern",
                  util::shown_untrusted(word, 120));
    if (pattern.empty()) {
      if (bare) return fail(Category::invalid_argument, "launcher_validate: more than one bare POLICY");
      bare = true;
    }
    rules.push_back({pattern, *parsed});
  }
  return rules;
}

definition::ValidatePolicy validate_policy_for(const std::vector<ValidateRule>& rules, std::string_view output) {
  const std::string path(output);
  for (const auto& rule : rules)
    if (!rule.pattern.empty() && ::fnmatch(rule.pattern.c_str(), path.c_str(), 0) == 0) return rule.policy;
  for (const auto& rule : rules)
    if (rule.pattern.empty()) return rule.policy;
  return definition::ValidatePolicy::strict;
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

const Setting* find_line(const Settings& settings, std::string_view key) {
  for (const auto& s : settings)
    if (s.key == key) return &s;
  return nullptr;
}

Result<Settings> parse_settings(std::string_view text, std::string_view shown_path) {
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
    if (find_setting(out, key)) return bad(fmt::format("'{}' is set twice", key));
    out.push_back({std::string(key), std::string(value), line_no});
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

Result<SettingsFile> read_settings_file(const std::filesystem::path& path) {
  // Whether the file can be reached at all, before opening it: EACCES from
  // lstat means a folder on the way cannot be searched (HOME inherited
  // from another user, as under sudo -u or in a container), which git too
  // treats as "no settings there" with a warning. A file that is there but
  // cannot be read is an error: its settings would silently not apply.
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return SettingsFile{};
    if (err == EACCES)
      return SettingsFile{{},
                          fmt::format("cannot reach {} ({}): its settings are not read, the defaults apply",
                                      util::escape_untrusted(path.parent_path().string()), std::strerror(err))};
    return util::os_error(path, "read settings", err);
  }
  util::ReadLimits limits;
  limits.max_bytes = k_max_settings_bytes;
  limits.regular_only = true;
  // Never followed: a planted link would make `config list` and a damaged
  // line's error quote another file's bytes.
  limits.no_symlink = true;
  auto text = util::read_file(path, limits);
  if (!text) {
    if (text.error().category == Category::not_found) return SettingsFile{};
    if (text.error().category == Category::invalid_argument)
      return fail(Category::corruption,
                  "settings {}: {}; it must be a regular file: delete it and set the settings again with `kcache "
                  "config set`",
                  util::escape_untrusted(path.string()), text.error().message);
    // Its message names the file; what to do is ours to say.
    return fail(text.error().category, "settings: {} (make it readable by this user, or remove it)",
                text.error().message);
  }
  return SettingsFile{KCACHE_TRY(parse_settings(*text, path.string())), {}};
}

Result<Settings> read_settings(const std::filesystem::path& path) {
  auto file = KCACHE_TRY(read_settings_file(path));
  if (!file.unreachable.empty()) return fail(Category::io_error, "settings: {}", file.unreachable);
  return std::move(file.settings);
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

}  // namespace kcache::settings
