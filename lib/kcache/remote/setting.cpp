// A store's remote setting (format and contract in setting.hpp).
#include "kcache/remote/setting.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

namespace kcache::remote {
namespace {

constexpr std::string_view k_setting_magic = "kcache-remotes";

/// What to do about a damaged setting, after what is wrong.
constexpr std::string_view k_fix =
    "fix or delete that line (or the file), or set the remotes again with `kcache remote add URL`";

}  // namespace

Result<std::vector<SettingRemote>> parse_remote_setting(std::string_view text, std::string_view shown_path) {
  util::VersionedText rules;
  rules.label = "remote setting";
  rules.magic = k_setting_magic;
  rules.version = k_setting_version;
  rules.max_bytes = k_max_setting_bytes;
  rules.fix = k_fix;
  rules.newer_fix = "use a newer kcache, or set the remotes again with `kcache remote add URL` after deleting the file";
  std::vector<SettingRemote> out;
  for (const auto& [line_no, line] : KCACHE_TRY(util::versioned_text_lines(text, shown_path, rules))) {
    if (line.empty() || line.starts_with('#')) continue;
    if (out.size() == k_max_setting_remotes)
      return tl::unexpected(util::versioned_text_error(rules, shown_path, line_no,
                                                       fmt::format("more than {} remotes", k_max_setting_remotes)));
    auto url = parse_remote_url(line);
    if (!url) return tl::unexpected(util::versioned_text_error(rules, shown_path, line_no, url.error().message));
    out.push_back({std::string(line), std::move(*url)});
  }
  return out;
}

std::string format_remote_setting(const std::vector<SettingRemote>& remotes) {
  std::string out = fmt::format("{} {}\n", k_setting_magic, k_setting_version);
  for (const auto& r : remotes) out += r.text + "\n";
  return out;
}

std::filesystem::path remote_setting_path(const std::filesystem::path& store_dir) {
  return store_dir / std::string(k_setting_file);
}

Result<std::vector<SettingRemote>> read_remote_setting(const std::filesystem::path& store_dir) {
  const auto path = remote_setting_path(store_dir);
  util::ReadLimits limits;
  limits.max_bytes = k_max_setting_bytes;
  limits.regular_only = true;
  // Never followed: a planted link would make `remote list` and a damaged
  // line's error quote another file's bytes.
  limits.no_symlink = true;
  auto text = util::read_file(path, limits);
  if (!text) {
    if (text.error().category == Category::not_found) return std::vector<SettingRemote>{};
    if (text.error().category == Category::invalid_argument)  // over the limit, a symlink or not a regular file
      return fail(Category::corruption,
                  "remote setting {}: {}; the setting must be a regular file in the store: delete it and set the "
                  "remotes again with `kcache remote add URL`",
                  util::escape_untrusted(path.string()), text.error().message);
    return tl::unexpected(std::move(text).error());
  }
  return parse_remote_setting(*text, path.string());
}

Result<void> write_remote_setting(const std::filesystem::path& store_dir, const std::vector<SettingRemote>& remotes) {
  if (remotes.size() > k_max_setting_remotes)
    return fail(Category::invalid_argument, "a store may name at most {} remotes", k_max_setting_remotes);
  const auto path = remote_setting_path(store_dir);
  std::error_code ec;
  if (remotes.empty()) {
    std::filesystem::remove(path, ec);
    if (ec) return fail(Category::io_error, "cannot remove {}: {}", path.string(), ec.message());
    return {};
  }
  std::filesystem::create_directories(store_dir, ec);
  if (ec) return fail(Category::io_error, "cannot create store directory {}: {}", store_dir.string(), ec.message());
  // Mode 0600: the URLs may hold passwords.
  return util::write_file_atomic(path, util::as_bytes(format_remote_setting(remotes)), 0600);
}

bool same_remote(const RemoteUrl& a, const RemoteUrl& b) {
  auto identity = [](RemoteUrl u) {
    u.password.clear();
    u.read_only = false;
    return u.shown();
  };
  return identity(a) == identity(b);
}

}  // namespace kcache::remote
