#include "kcache/util/text.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <ctime>
#include <optional>
#include <vector>

namespace kcache::util {

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  if (v == static_cast<double>(static_cast<std::uint64_t>(v)))
    return fmt::format("{} {}", static_cast<std::uint64_t>(v), units[u]);
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool from_hex(std::string_view text, std::span<std::uint8_t> out) {
  if (text.size() != 2 * out.size()) return false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_digit_value(text[2 * i]), lo = hex_digit_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (;;) {
    const std::size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) return lines;
    text.remove_prefix(nl + 1);
  }
}

std::string iso_time(std::uint64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", tm);
}

namespace {

/// Length of the valid UTF-8 sequence starting at text[i] whose code point is
/// printable; 0 for invalid UTF-8 or a control character.
std::size_t printable_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return (b >= 0x20 && b != 0x7f) ? 1 : 0;
  std::size_t len = 0;
  char32_t cp = 0, min = 0;
  if ((b & 0xe0) == 0xc0) len = 2, cp = b & 0x1fu, min = 0x80;
  else if ((b & 0xf0) == 0xe0) len = 3, cp = b & 0x0fu, min = 0x800;
  else if ((b & 0xf8) == 0xf0) len = 4, cp = b & 0x07u, min = 0x10000;
  else return 0;
  if (i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;  // overlong, too large, surrogate
  if (cp >= 0x80 && cp <= 0x9f) return 0;                                     // C1 controls
  return len;
}

}  // namespace

bool is_printable_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = printable_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

namespace {

std::string escape(std::string_view text, bool escape_backslash) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (const std::size_t n = printable_sequence(text, i); n > 0) {
      if (escape_backslash && text[i] == '\\') out += '\\';
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string escape_untrusted(std::string_view text) { return escape(text, true); }

std::string printable_text(std::string_view text) { return escape(text, false); }

std::string shown_untrusted(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return escape_untrusted(text);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return escape_untrusted(text.substr(0, cut)) + "...";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {

/// Splits "12h" into 12 and "h"; nullopt without a leading number.
std::optional<std::pair<double, std::string>> split_number(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  std::string number(text.substr(0, i));
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string unit(text.substr(i));
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::pair{value, unit};
}

}  // namespace

Result<std::uint64_t> parse_duration(std::string_view text) {
  auto bad = [&] {
    return fail(Category::invalid_argument,
                "'{}' is not a duration: write a whole number and a unit, s (seconds), m (minutes), h (hours), "
                "d (days) or w (weeks), e.g. 90m, 12h, 30d",
                text);
  };
  auto parts = split_number(text);
  if (!parts || parts->first != std::floor(parts->first)) return bad();
  static const std::pair<std::string_view, std::uint64_t> units[] = {
      {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400}};
  for (auto [unit, seconds] : units)
    if (parts->second == unit) {
      if (parts->first > 1e15 / static_cast<double>(seconds)) return bad();
      return static_cast<std::uint64_t>(parts->first) * seconds;
    }
  return bad();
}

Result<std::uint64_t> parse_size(std::string_view text) {
  auto bad = [&] {
    return fail(Category::invalid_argument,
                "'{}' is not a size: write a number and optionally K, M, G or T (powers of 1024), e.g. 500M, 2G", text);
  };
  auto parts = split_number(text);
  if (!parts) return bad();
  std::string unit = parts->second;
  if (unit.ends_with("ib")) unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.ends_with("b")) unit.pop_back();
  else if (unit == "b") unit.clear();
  static const std::pair<std::string_view, double> units[] = {
      {"", 1}, {"k", 1024.0}, {"m", 1024.0 * 1024}, {"g", 1024.0 * 1024 * 1024}, {"t", 1024.0 * 1024 * 1024 * 1024}};
  for (auto [name, factor] : units)
    if (unit == name) {
      double bytes = parts->first * factor;
      if (bytes > 1e18) return bad();
      return static_cast<std::uint64_t>(std::llround(bytes));
    }
  return bad();
}

Error versioned_text_error(const VersionedText& rules, std::string_view shown_path, std::size_t line,
                           std::string_view what) {
  return {Category::corruption,
          fmt::format("{} {}:{}: {}; {}", rules.label, escape_untrusted(shown_path), line, what, rules.fix)};
}

Result<std::vector<std::pair<std::size_t, std::string_view>>> versioned_text_lines(std::string_view text,
                                                                                   std::string_view shown_path,
                                                                                   const VersionedText& rules) {
  auto bad = [&](std::size_t line, std::string_view what) {
    return tl::unexpected(versioned_text_error(rules, shown_path, line, what));
  };
  if (text.size() > rules.max_bytes)
    return fail(Category::corruption, "{} {}: over {} bytes; {}", rules.label, escape_untrusted(shown_path),
                rules.max_bytes, rules.fix);
  std::vector<std::pair<std::size_t, std::string_view>> out;
  std::size_t line_no = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    for (char c : line)
      if ((static_cast<unsigned char>(c) < 0x20 && !(c == '\t' && rules.allow_tab)) || c == 0x7f)
        return bad(line_no, fmt::format("a control byte 0x{:02x}", static_cast<unsigned char>(c)));
    if (line_no > 1) {
      out.emplace_back(line_no, line);
      continue;
    }
    // "MAGIC VERSION"
    if (!line.starts_with(rules.magic) || line.size() < rules.magic.size() + 2 || line[rules.magic.size()] != ' ')
      return bad(1, fmt::format("the first line is '{}', not '{} {}' (not a kcache {})", shown_untrusted(line, 60),
                                rules.magic, rules.version, rules.label));
    const auto digits = line.substr(rules.magic.size() + 1);
    unsigned version = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), version);
    if (ec != std::errc{} || p != digits.data() + digits.size() || digits.size() > 5 || version == 0)
      return bad(1, fmt::format("the version '{}' is not a number", shown_untrusted(digits, 20)));
    if (version > rules.version)
      return fail(Category::version_mismatch, "{} {}:1: version {} is newer than this kcache reads ({}); {}",
                  rules.label, escape_untrusted(shown_path), version, rules.version, rules.newer_fix);
  }
  if (line_no == 0)
    return bad(1, fmt::format("the file is empty (it starts with '{} {}')", rules.magic, rules.version));
  return out;
}

}  // namespace kcache::util
