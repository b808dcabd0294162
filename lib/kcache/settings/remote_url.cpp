#include "kcache/settings/remote_url.hpp"

#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

namespace kcache::settings {
namespace {

constexpr std::string_view k_forms =
    "use redis://[USER[:PASSWORD]@]HOST[:PORT][/DB], http(s)://HOST[:PORT]/PATH/ or file:///PATH, with options "
    "?read-only&timeout-ms=N&prefix=TEXT&max-failures=N&trust=PUBLIC_KEY_HEX";

/// A decimal number in [lo, hi], digits only.
std::optional<std::uint64_t> number(std::string_view s, std::uint64_t lo, std::uint64_t hi) {
  if (s.empty() || s.size() > 12) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

/// Percent-decodes user info; nullopt for a bad escape or a decoded byte
/// outside printable ASCII (credentials go into protocol commands).
std::optional<std::string> decode_userinfo(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = util::hex_digit_value(s[i + 1]), lo = util::hex_digit_value(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      c = static_cast<unsigned char>(hi * 16 + lo);
      i += 2;
    }
    if (c < 0x21 || c > 0x7e) return std::nullopt;
    out += static_cast<char>(c);
  }
  return out;
}

/// Percent-encodes user info for display, the inverse of decode_userinfo:
/// only unreserved characters stay as they are, so the shown URL parses back.
std::string encode_userinfo(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~';
    out += unreserved ? std::string(1, c) : fmt::format("%{:02X}", static_cast<unsigned char>(c));
  }
  return out;
}

bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

bool path_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_' || c == '/' || c == '~' || c == '+';
}

/// '/'-separated text of path_char bytes without "." or ".." segments.
bool clean_path(std::string_view p) {
  for (char c : p)
    if (!path_char(c)) return false;
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    auto seg = p.substr(start, end - start);
    if (seg == "." || seg == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

std::string RemoteUrl::shown() const {
  std::string out;
  switch (scheme) {
    case Scheme::redis: out = "redis://"; break;
    case Scheme::http: out = "http://"; break;
    case Scheme::https: out = "https://"; break;
    case Scheme::file: out = "file://"; break;
  }
  if (scheme == Scheme::file) {
    out += path;
  } else {
    if (!user.empty() || !password.empty()) out += encode_userinfo(user) + (password.empty() ? "" : ":***") + "@";
    out += host;
    if (port) out += fmt::format(":{}", port);
    if (scheme == Scheme::redis) out += fmt::format("/{}", db);
    else out += path;
  }
  // Options as parse_remote_url reads them, for every scheme (a file remote
  // may have a prefix too), so that shown() parses back to the same remote.
  std::string opts;
  if (read_only) opts += "&read-only";
  if (!prefix.empty()) opts += "&prefix=" + prefix;
  if (!opts.empty()) out += "?" + opts.substr(1);
  return out;
}

std::string RemoteUrl::http_base() const {
  std::string out = scheme == Scheme::https ? "https://" : "http://";
  out += host;
  if (port) out += fmt::format(":{}", port);
  return out + path;
}

Result<RemoteUrl> parse_remote_url(std::string_view text) {
  auto bad = [&](std::string_view why) -> tl::unexpected<Error> {
    // Never echo a password: the user info goes before the text is cut
    // (cut first, a long password's '@' fell past the cut and it showed).
    std::string shown = redacted_url_text(text).substr(0, 200);
    return fail(Category::invalid_argument, "remote '{}': {}; {}", util::escape_untrusted(shown), why, k_forms);
  };
  if (text.size() > k_max_url_bytes) return bad(fmt::format("longer than {} bytes", k_max_url_bytes));
  RemoteUrl url;
  std::string_view rest;
  if (text.starts_with("redis://")) url.scheme = Scheme::redis, rest = text.substr(8);
  else if (text.starts_with("http://")) url.scheme = Scheme::http, rest = text.substr(7);
  else if (text.starts_with("https://")) url.scheme = Scheme::https, rest = text.substr(8);
  else if (text.starts_with("file://")) url.scheme = Scheme::file, rest = text.substr(7);
  else return bad("unknown scheme");

  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (rest.find('#') != std::string_view::npos) return bad("a fragment ('#') is not allowed");

  if (url.scheme == Scheme::file) {
    if (!rest.starts_with('/')) return bad("file:// needs an absolute path (file:///PATH)");
    if (!clean_path(rest) || rest.find("//") != std::string_view::npos)
      return bad("the path may hold only letters, digits, '._-~+/' and no '.' or '..' segment");
    url.path = std::string(rest);
    while (url.path.size() > 1 && url.path.back() == '/') url.path.pop_back();
  } else {
    std::string_view authority = rest.substr(0, rest.find('/'));
    std::string_view path = authority.size() < rest.size() ? rest.substr(authority.size()) : std::string_view{};
    if (auto at = authority.rfind('@'); at != std::string_view::npos) {
      auto info = authority.substr(0, at);
      authority = authority.substr(at + 1);
      auto colon = info.find(':');
      auto user = decode_userinfo(info.substr(0, colon));
      auto pass =
          colon == std::string_view::npos ? std::optional<std::string>("") : decode_userinfo(info.substr(colon + 1));
      if (!user || !pass) return bad("the user or password holds a byte outside printable ASCII or a bad %-escape");
      if (user->size() > k_max_userinfo_bytes || pass->size() > k_max_userinfo_bytes)
        return bad(fmt::format("the user or password is over {} bytes", k_max_userinfo_bytes));
      url.user = std::move(*user);
      url.password = std::move(*pass);
    }
    std::string_view port;
    if (authority.starts_with('[')) {
      auto close = authority.find(']');
      if (close == std::string_view::npos) return bad("an IPv6 address needs its closing ']'");
      auto inner = authority.substr(1, close - 1);
      if (inner.empty() || inner.size() > 45) return bad("a bad IPv6 address");
      for (char c : inner)
        if (util::hex_digit_value(c) < 0 && c != ':' && c != '.') return bad("a bad IPv6 address");
      url.host = std::string(authority.substr(0, close + 1));
      auto after = authority.substr(close + 1);
      if (!after.empty()) {
        if (after[0] != ':') return bad("unexpected text after the IPv6 address");
        port = after.substr(1);
        if (port.empty()) return bad("an empty port");
      }
    } else {
      auto colon = authority.find(':');
      url.host = std::string(authority.substr(0, colon));
      if (colon != std::string_view::npos) {
        port = authority.substr(colon + 1);
        if (port.empty()) return bad("an empty port");
      }
      if (url.host.empty() || url.host.size() > 253) return bad("no host, or a host name over 253 bytes");
      for (char c : url.host)
        if (!host_char(c)) return bad("the host may hold only letters, digits, '.', '-' and '_'");
    }
    if (!port.empty()) {
      auto p = number(port, 1, 65535);
      if (!p) return bad("the port must be a number from 1 to 65535");
      url.port = static_cast<std::uint16_t>(*p);
    }
    if (url.scheme == Scheme::redis) {
      if (!path.empty() && path != "/") {
        auto db = number(path.substr(1), 0, 65535);
        if (!db) return bad("the redis database after '/' must be a number from 0 to 65535");
        url.db = static_cast<unsigned>(*db);
      }
    } else {
      if (path.empty()) path = "/";
      if (!clean_path(path) || path.find("//") != std::string_view::npos)
        return bad("the path may hold only letters, digits, '._-~+/' and no empty, '.' or '..' segment");
      url.path = std::string(path);
      if (url.path.back() != '/') url.path += '/';
    }
  }

  // Options.
  std::size_t start = 0;
  while (!query.empty() && start <= query.size()) {
    auto end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    auto opt = query.substr(start, end - start);
    start = end + 1;
    if (opt.empty()) continue;
    auto eq = opt.find('=');
    auto name = opt.substr(0, eq);
    auto value = eq == std::string_view::npos ? std::string_view{} : opt.substr(eq + 1);
    if (name == "read-only" && eq == std::string_view::npos) {
      url.read_only = true;
    } else if (name == "timeout-ms") {
      auto v = number(value, 1, 600000);
      if (!v) return bad("timeout-ms must be a number of milliseconds from 1 to 600000");
      url.timeout_ms = static_cast<unsigned>(*v);
      url.timeout_given = true;
    } else if (name == "max-failures") {
      auto v = number(value, 1, 1000);
      if (!v) return bad("max-failures must be a number from 1 to 1000");
      url.max_failures = static_cast<unsigned>(*v);
    } else if (name == "prefix") {
      if (value.size() > 128 || !clean_path(value) || value.find('~') != std::string_view::npos ||
          value.find('+') != std::string_view::npos || value.starts_with('/') ||
          value.find("//") != std::string_view::npos)
        return bad("prefix may hold only letters, digits, '._-' and inner '/', at most 128 bytes, no '..' segment");
      url.prefix = std::string(value);
    } else if (name == "trust") {
      TrustedKey key{};
      if (!util::from_hex(value, key))
        return bad("trust needs a public key: the 64 hex digits of a key file's public-key line");
      if (url.trust.size() == k_max_trusted_keys)
        return bad(fmt::format("more than {} trust= keys", k_max_trusted_keys));
      if (std::find(url.trust.begin(), url.trust.end(), key) == url.trust.end()) url.trust.push_back(key);
    } else {
      return bad(fmt::format("unknown option '{}'", util::escape_untrusted(name.substr(0, 40))));
    }
  }
  return url;
}

std::string redacted_url_text(std::string_view text) {
  std::string out(text);
  const auto at = out.rfind('@');
  if (at == std::string::npos) return out;
  // The last '@', not the first: a password may hold '@' (the parser takes
  // the last one too). Host, path and options cannot hold one.
  auto s = out.find("://");
  const std::size_t start = s != std::string::npos && s < at ? s + 3 : 0;
  out.replace(start, at - start, "***");
  return out;
}

std::vector<std::string> split_remote_list(std::string_view text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < text.size() && !(text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r')) ++j;
    if (j > i) out.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace kcache::settings
