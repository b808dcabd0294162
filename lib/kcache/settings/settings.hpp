// Settings (docs/design.md "Settings"): what a user would otherwise pass on
// every call (a store's size limit, -j, remotes and their trust, the default
// namespace, ...), kept per store and per user and managed by `kcache config`.
// This header is the keys, their checks and the files; resolver.hpp applies
// the levels (flag > environment > store > user > default) and what each key
// lets each level do. The library reads no environment.
//
// Format, version 1 (the store's `STORE/config` and the user's
// `$XDG_CONFIG_HOME/kcache/config`, else `~/.config/kcache/config`; UTF-8
// text, '\n' line ends, docs/formats.md; golden file
// tests/data/settings/config-v1.txt):
//
//   kcache-config 1           first line: the magic word and the version
//   # a comment               lines starting with '#' and empty lines are ignored
//   max_size = 10G            every other line: KEY = VALUE, one per key, KEY
//   jobs = 8                  one of setting_keys(); spaces around '=' and at
//                             the ends are ignored; VALUE is what check_setting
//                             accepts for KEY
//
// A key this version does not know is refused by name (a typo must not be
// ignored silently); a later version may only add keys. At most
// k_max_settings_bytes; no control byte but '\n'. A key the file's level may
// not set (a store's `nvrtc`) is read, kept and not honoured: the resolver
// reports it with its file and line. The store's remotes are not in this
// file: they stay in STORE/remotes (remote/setting.hpp), which `kcache
// config` reads and writes as the store's `remote` setting. Files are written
// with util::write_file_atomic, mode 0600 (a remote URL may hold a password).
//
// Every file is untrusted (anyone who can write the folder can write it):
// bounded, every value checked, an error names the file and line. Fuzzed by
// tests/fuzz/fuzz_settings.cpp.
//
// Thread-safety: pure functions, and file functions that do one read or one
// atomic write each.
#pragma once

#include "kcache/definition/kernel_spec.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::settings {

inline constexpr std::uint16_t k_settings_version = 1;
/// The file's name, in the store folder and in the user's config folder.
inline constexpr std::string_view k_settings_file = "config";
/// The largest settings file read.
inline constexpr std::size_t k_max_settings_bytes = 64 * 1024;

/// What a store's settings file may do with a key. A store is written by
/// whoever can write its folder (a restored CI cache, a shared folder, a
/// checkout), so it never names code to run and never widens trust
/// (docs/reliability.md "Threat model").
enum class StoreRule {
  honoured,  ///< a store's value applies like any level's
  bounded,   ///< applies only up to KeyInfo::store_max (a number or a size)
  narrows,   ///< trust: applies only when every key file it names is one the user trusts
  refused,   ///< never taken from a store (KeyInfo::why says why)
};

/// One known setting and the levels that may set it.
struct KeyInfo {
  std::string_view name;                  ///< "max_size"
  std::string_view env;                   ///< the environment variable above the files, or "" (none may set it)
  std::string_view flag;                  ///< the command-line option above everything, or ""
  StoreRule store = StoreRule::honoured;  ///< what a store's file may do with it
  bool user = true;                       ///< the user's file may set it
  bool internal = false;                  ///< written by kcache itself (stats --zero), not by `config set`
  std::string_view help;                  ///< one line: what it does, its values
  std::string_view fallback = "";         ///< what applies when no level sets it, in words
  std::string_view why = "";              ///< StoreRule::refused: why a store may not set it
  std::uint64_t store_max = 0;            ///< StoreRule::bounded: the largest value a store may give
  std::string_view default_value = "";    ///< the value `config get` prints when none is set, if it is one
};

/// Every key, in the order `kcache config list` shows them.
std::span<const KeyInfo> setting_keys();
/// The key named `name`, or nullptr.
const KeyInfo* find_key(std::string_view name);

/// Checks `value` for `key`: invalid_argument saying what the key takes
/// (sizes by util::parse_size, jobs 1 to 4096, remotes by the URL parser,
/// ...); not_found naming the nearest key for an unknown one.
Result<void> check_setting(std::string_view key, std::string_view value);

/// One KEY = VALUE line.
struct Setting {
  std::string key;
  std::string value;
  std::size_t line = 0;  ///< its line in the file read (1-based; 0: not read from a file)
  /// Same key and value (where each was read does not matter).
  bool operator==(const Setting& o) const { return key == o.key && value == o.value; }
};
/// A file's settings, in file order, each key once.
using Settings = std::vector<Setting>;

/// The value of `key` in `settings`, or nullopt.
std::optional<std::string> find_setting(const Settings& settings, std::string_view key);
/// The line of `key` in `settings`, or nullptr.
const Setting* find_line(const Settings& settings, std::string_view key);
/// Sets `key` to `value` (in place when present, else appended).
void set_setting(Settings& settings, std::string_view key, std::string_view value);
/// Removes `key`; whether it was there.
bool unset_setting(Settings& settings, std::string_view key);

/// Parses a file's bytes; `shown_path` names the file in errors. corruption
/// "FILE:LINE: what is wrong; what to do" for a bad first line, a control
/// byte, a line without '=', an unknown or repeated key, a value
/// check_setting refuses, too many bytes; version_mismatch for a newer
/// version. Whether the file's level may set a key is the resolver's
/// question, not the parser's: such a line is returned like any other.
Result<Settings> parse_settings(std::string_view text, std::string_view shown_path);

/// The file's text for `settings` (header line, then KEY = VALUE lines).
std::string format_settings(const Settings& settings);

/// The settings file of a store folder.
std::filesystem::path store_settings_path(const std::filesystem::path& store_dir);
/// The user's settings file: XDG_CONFIG_HOME/kcache/config when that is an
/// absolute path, else HOME/.config/kcache/config; nullopt when neither is
/// usable (no user settings then). The caller passes the variables.
std::optional<std::filesystem::path> user_settings_path(std::string_view xdg_config_home, std::string_view home);

/// A settings file as read_settings found it.
struct SettingsFile {
  Settings settings;
  /// Set when a folder on the way to the file cannot be searched (EACCES:
  /// HOME inherited from another user): the file's level is skipped, as git
  /// skips a config it cannot reach, and this says so once.
  std::string unreachable;
};

/// Reads a settings file: empty when it does not exist (or a component of
/// its folder is not a folder); empty with `unreachable` set when a folder
/// on the way cannot be searched; corruption / version_mismatch as
/// parse_settings; corruption when it is a symbolic link or not a regular
/// file (never followed); io_error naming the file when it exists but
/// cannot be read (a file made unreadable is an error, not silently no
/// settings).
Result<SettingsFile> read_settings_file(const std::filesystem::path& path);
/// read_settings_file's settings; an unreachable file is io_error naming it
/// (for `config set`/`unset`, which must not write over what they cannot read).
Result<Settings> read_settings(const std::filesystem::path& path);

/// Writes `settings` to `path` atomically, mode 0600 (creating its folder);
/// removes the file when `settings` is empty. io_error.
Result<void> write_settings(const std::filesystem::path& path, const Settings& settings);

/// One word of the `launcher_validate` setting: the validate policy of the
/// launcher's outputs whose path (relative to the project root) matches
/// `pattern` (fnmatch(3), '*' also matching '/'); "" matches every output.
struct ValidateRule {
  std::string pattern;
  definition::ValidatePolicy policy = definition::ValidatePolicy::strict;
  bool operator==(const ValidateRule&) const = default;
};
/// The most words `launcher_validate` holds.
inline constexpr std::size_t k_max_validate_rules = 64;
/// Parses `launcher_validate`: words separated by spaces, each POLICY (the
/// policy of outputs no pattern matches) or PATTERN=POLICY, POLICY one of
/// strict, known, off (the manifest's `validate`). invalid_argument naming
/// the word; at most one bare POLICY and k_max_validate_rules words.
Result<std::vector<ValidateRule>> parse_validate_rules(std::string_view value);
/// The policy of `output` (relative to the project root, '/'-separated):
/// the first pattern that matches, else the bare POLICY, else strict.
definition::ValidatePolicy validate_policy_for(const std::vector<ValidateRule>& rules, std::string_view output);

/// The levels a value may come from, highest first; none = the default.
enum class Source { flag, env, store, user, none };
/// "command line", "environment", "store", "user", "default".
std::string_view source_name(Source s);

}  // namespace kcache::settings
