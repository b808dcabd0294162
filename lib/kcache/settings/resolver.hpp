// The one settings resolver (docs/design.md "Settings"): the value of a key
// that applies to a command, from the command line, a snapshot of the
// environment, the store's settings file and the user's, by the precedence
//
//   flag > environment > store > user > default
//
// and by what each key lets each level do (settings.hpp: KeyInfo). A store
// is written by whoever can write its folder, so its file never names code
// to run (nvrtc, glslc, glslang_validator) or the store folder, gives numbers
// only within KeyInfo::store_max, and may narrow trust but never replace or
// widen it; a store value not honoured is passed over (the next level
// applies) and reported with its file and line. The CLI and libkcache's
// kcache_store_open(NULL) both resolve through this class, so they agree on
// the store and every other setting.
//
// The library reads no environment: the caller hands in a snapshot
// (capture_environment with std::getenv, in a program; a map in a test).
//
// Thread-safety: a Resolver caches the files it has read; use one per
// thread (the CLI has one per process).
#pragma once

#include "kcache/settings/settings.hpp"
#include "kcache/util/error.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::settings {

/// The environment as the caller read it. Only the variables
/// environment_names() lists are consulted; an empty value counts as unset.
struct Environment {
  std::map<std::string, std::string, std::less<>> values;
  /// The value of `name`, "" when unset.
  std::string_view get(std::string_view name) const;
};

/// Every variable a Resolver reads: each key's env, XDG_CONFIG_HOME,
/// XDG_CACHE_HOME and HOME.
std::vector<std::string_view> environment_names();

/// A snapshot of environment_names() through `lookup` (std::getenv in a
/// program: the caller reads, the library does not). `lookup` returns
/// nullptr for an unset variable.
Environment capture_environment(const std::function<const char*(const char*)>& lookup);

/// Why a store's settings file may not give `value` for `key` (a key that
/// names code to run or the store folder; a number over KeyInfo::store_max),
/// with how to set it instead; "" when it may. Trust's narrowing depends on
/// the user's keys and is judged by Resolver. `config set` refuses what this
/// refuses, so kcache never writes a store value it would not honour.
std::string store_refusal(std::string_view key, std::string_view value);

/// A value a level holds that the resolver does not honour.
struct Refusal {
  std::string key;
  std::string value;
  Source level = Source::store;
  std::string file;      ///< the settings file (shown as read)
  std::size_t line = 0;  ///< its line there (0: a file without lines, a store's remotes)
  std::string why;       ///< "a store may not name code to run; ..."
  /// "FILE:LINE: KEY = VALUE is not honoured: WHY" (the value escaped).
  std::string text() const;
};

/// The value of a key for a command, and where it came from.
struct Resolved {
  std::string value;  ///< "" when Source::none (the default applies)
  Source source = Source::none;
  /// Where: "" (command line, default), the variable ("KCACHE_JOBS"),
  /// "FILE:LINE" for a settings file, "FILE" for a store's remotes.
  std::string origin;
  std::vector<Refusal> refused;  ///< values passed over on the way, highest first
};

/// A store's `remote`: the URLs of its STORE/remotes file (remote/setting.hpp,
/// a remote module format) separated by spaces ("" for none), and that file.
struct StoreRemotes {
  std::string urls;
  std::filesystem::path file;
};
/// Reads a store's remotes; the CLI passes one in (remote::read_remote_setting).
using StoreRemotesReader = std::function<Result<StoreRemotes>(const std::filesystem::path& store_dir)>;

class Resolver {
 public:
  /// `env`: the snapshot; `store_remotes`: how the store level of `remote`
  /// is read (null: a store sets no remote, as for libkcache).
  explicit Resolver(Environment env, StoreRemotesReader store_remotes = {});

  /// The value of `key` for a command given `flag` (its command-line value,
  /// "" when not given) on the store in `store_dir` ("" for none: the store
  /// level is skipped). A level is read only when the levels above it leave
  /// the key unset (trust also reads the user's file, which a store's trust
  /// must stay within). Errors: invalid_argument for an unknown key, or
  /// naming the variable for a malformed environment value; a file's
  /// errors (corruption naming file and line, io_error naming an
  /// unreadable file). A flag is not checked here (the CLI's options are).
  Result<Resolved> resolve(std::string_view key, std::string_view flag, const std::filesystem::path& store_dir);

  /// Every level's value of `key`, highest first, as `kcache config list`
  /// shows it: the one that applies has refused empty, and what would be
  /// refused is reported even below the value that applies. Same errors.
  Result<Resolved> explain(std::string_view key, const std::filesystem::path& store_dir);

  /// The store folder: `flag` (--store), else KCACHE_STORE, else the user's
  /// `store`, else default_store(). Errors: the user's file's.
  Result<std::filesystem::path> store_dir(std::string_view flag);
  /// The store folder when no level names one: $XDG_CACHE_HOME/kcache (an
  /// absolute one), else $HOME/.cache/kcache, else ./.kcache
  /// (store::default_store_dir).
  std::filesystem::path default_store() const;

  /// The value `config get` prints for `key` when no level sets it: the
  /// default store folder for `store`, KeyInfo::default_value otherwise.
  std::string default_value(std::string_view key) const;

  /// The user's settings file (user_settings_path of the snapshot), nullopt
  /// when neither XDG_CONFIG_HOME nor HOME is an absolute path.
  const std::optional<std::filesystem::path>& user_file() const { return m_user_path; }
  /// The user's settings, read on first use: empty when there is no file or
  /// its folder cannot be reached (a warning, take_warnings); its errors.
  Result<const Settings*> user_settings();

  /// Warnings not yet taken, each given once: a settings folder that
  /// cannot be reached.
  std::vector<std::string> take_warnings();

 private:
  Result<const SettingsFile*> store_file(const std::filesystem::path& store_dir);
  Result<Resolved> run(std::string_view key, std::string_view flag, const std::filesystem::path& store_dir,
                       bool every_level);

  Environment m_env;
  StoreRemotesReader m_store_remotes;
  std::optional<std::filesystem::path> m_user_path;
  std::optional<Result<SettingsFile>> m_user;
  std::map<std::filesystem::path, Result<SettingsFile>> m_stores;
  std::vector<std::string> m_warnings;
};

}  // namespace kcache::settings
