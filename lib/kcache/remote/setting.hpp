// A store's remote setting (docs/design.md "Remote caches"): the remotes
// every store-using command asks when neither --remote nor KCACHE_REMOTE
// names any, kept in a small text file in the store folder and managed by
// `kcache remote add | list | remove`. Precedence (the CLI applies it):
// --remote > KCACHE_REMOTE > this setting; --no-remote turns all off.
//
// Format, version 1 (file `STORE/remotes`, UTF-8 text, '\n' line ends,
// docs/formats.md; golden file tests/data/remote/remotes-v1.txt):
//
//   kcache-remotes 1          first line: the magic word and the version
//   # a comment               lines starting with '#' and empty lines are ignored
//   redis://cache:6379/0      every other line: one remote URL (url.hpp), in
//   http://c/kc/?read-only    the order they are asked; written as given
//
// At most k_max_setting_bytes and k_max_setting_remotes URLs; no NUL or
// other control byte but '\n' (a '\r' before it is refused too). A newer
// version is refused by name (version_mismatch). The file is written with
// util::write_file_atomic, mode 0600: URLs may hold passwords, kept in plain
// text (the CLI's help says so); every URL shown is RemoteUrl::shown().
//
// The file is untrusted (anyone who can write the store folder can write
// it): bounded, every URL parsed by parse_remote_url, and an error names the
// file and line. Fuzzed by tests/fuzz/fuzz_remote_setting.cpp.
//
// Thread-safety: pure functions, and file functions that do one read or one
// atomic write each.
#pragma once

#include "kcache/remote/url.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::remote {

inline constexpr std::uint16_t k_setting_version = 1;
/// The file's name in the store folder.
inline constexpr std::string_view k_setting_file = "remotes";
/// The largest setting file read: 64 KiB (16 URLs of the largest size).
inline constexpr std::size_t k_max_setting_bytes = 64 * 1024;
/// The most remotes a store may name.
inline constexpr std::size_t k_max_setting_remotes = 64;

/// One remote of the setting: the URL as written (passwords included) and
/// as parsed.
struct SettingRemote {
  std::string text;
  RemoteUrl url;
};

/// Parses a setting file's bytes; `shown_path` names the file in errors.
/// corruption "FILE:LINE: what is wrong; what to do" for a bad first line,
/// a control byte, a URL parse_remote_url refuses (its message, the password
/// hidden), too many remotes or bytes; version_mismatch for a newer version.
Result<std::vector<SettingRemote>> parse_remote_setting(std::string_view text, std::string_view shown_path);

/// The file's text for `remotes` (header line, then one URL per line).
std::string format_remote_setting(const std::vector<SettingRemote>& remotes);

/// The setting file of the store folder `store_dir`.
std::filesystem::path remote_setting_path(const std::filesystem::path& store_dir);

/// Reads the setting of `store_dir`: empty when the file does not exist;
/// corruption / version_mismatch as parse_remote_setting; io_error when it
/// cannot be read; invalid_argument, with nothing read or shown, when it is
/// a symbolic link (it could lead anywhere). Reads at most
/// k_max_setting_bytes + 1 bytes.
Result<std::vector<SettingRemote>> read_remote_setting(const std::filesystem::path& store_dir);

/// Writes `remotes` as the setting of `store_dir` (creating the folder when
/// missing), atomically, mode 0600; removes the file when `remotes` is empty.
/// invalid_argument when over k_max_setting_remotes; io_error.
Result<void> write_remote_setting(const std::filesystem::path& store_dir, const std::vector<SettingRemote>& remotes);

/// Whether two URLs name the same remote for `remote add` / `remove`: the
/// same shown() once the password and read-only are set aside (a user
/// removes what `remote list` shows, where passwords are masked).
bool same_remote(const RemoteUrl& a, const RemoteUrl& b);

}  // namespace kcache::remote
