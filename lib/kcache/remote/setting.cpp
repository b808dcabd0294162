// A store's remote setting (format and contract in setting.hpp).
#include "kcache/remote/setting.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <charconv>

namespace kcache::remote {
namespace {

constexpr std::string_view k_setting_magic = "kcache-remotes";

/// What to do about a damaged setting, after what is wrong.
constexpr std::string_view k_fix =
    "fix or delete that line (or the file), or set the remotes again with `kcache remote add URL`";

}  // namespace

Result<std::vector<SettingRemote>> parse_remote_setting(std::string_view text, std::string_view shown_path) {
  const std::string file = util::escape_untrusted(shown_path);
  auto bad = [&](std::size_t line, std::string_view what) {
    return fail(Category::corruption, "remote setting {}:{}: {}; {}", file, line, what, k_fix);
  };
  if (text.size() > k_max_setting_bytes)
    return fail(Category::corruption, "remote setting {}: over {} bytes; {}", file, k_max_setting_bytes, k_fix);
  std::vector<SettingRemote> out;
  std::size_t line_no = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    for (char c : line)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        return bad(line_no, fmt::format("a control byte 0x{:02x}", static_cast<unsigned char>(c)));
    if (line_no == 1) {
      // "kcache-remotes VERSION"
      if (!line.starts_with(k_setting_magic) || line.size() < k_setting_magic.size() + 2 ||
          line[k_setting_magic.size()] != ' ')
        return bad(1, fmt::format("the first line is '{}', not '{} {}' (not a kcache remote setting)",
                                  util::shown_untrusted(line, 60), k_setting_magic, k_setting_version));
      auto digits = line.substr(k_setting_magic.size() + 1);
      unsigned version = 0;
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), version);
      if (ec != std::errc{} || p != digits.data() + digits.size() || digits.size() > 5 || version == 0)
        return bad(1, fmt::format("the version '{}' is not a number", util::shown_untrusted(digits, 20)));
      if (version > k_setting_version)
        return fail(Category::version_mismatch,
                    "remote setting {}:1: version {} is newer than this kcache reads ({}); use a newer kcache, or "
                    "set the remotes again with `kcache remote add URL` after deleting the file",
                    file, version, k_setting_version);
      continue;
    }
    if (line.empty() || line.starts_with('#')) continue;
    if (out.size() == k_max_setting_remotes)
      return bad(line_no, fmt::format("more than {} remotes", k_max_setting_remotes));
    auto url = parse_remote_url(line);
    if (!url) return bad(line_no, url.error().message);
    out.push_back({std::string(line), std::move(*url)});
  }
  if (line_no == 0)
    return bad(1, fmt::format("the file is empty (it starts with '{} {}')", k_setting_magic, k_setting_version));
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
