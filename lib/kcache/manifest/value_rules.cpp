// What a manifest's texts may be: contained paths, macro, kernel and CUDA names, one-line values, NVRTC options.
#include "kcache/manifest/manifest_internal.hpp"

#include "kcache/definition/definition.hpp"
#include "kcache/util/path.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace kcache::manifest::internal {

bool is_absolute_like(std::string_view p) { return !p.empty() && (p[0] == '/' || p[0] == '~'); }

/// `raw` normalised ("a/./b/" -> "a/b") when it names something inside the
/// manifest's folder; "." itself only when `allow_root`. nullopt for "",
/// "..", "../x", "a/../../x" and paths with control characters: every path
/// a manifest puts into an entry must stay inside the project, so that the
/// entry's records never lead a later check outside it.
std::optional<std::string> contained_path(std::string_view raw, bool allow_root) {
  std::string p = definition::FileCache::normalise(std::string(raw));
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (allow_root && (p == "." || raw == "." || raw == "./")) return std::string(".");
  if (!util::is_contained_relative_path(p)) return std::nullopt;
  return p;
}

/// Whether text holds a control character (< 0x20 or 0x7f): a newline in a
/// define or variant value would let it inject "#include" or "#error" lines
/// into the preamble of every source it is defined for.
bool has_control_character(std::string_view v) {
  return std::any_of(v.begin(), v.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}
bool is_single_line_value(std::string_view v) { return !has_control_character(v); }

/// A scalar TOML value as define/variant text; nullopt for tables and arrays.
std::optional<std::string> scalar_text(const toml::node& node) {
  if (auto s = node.as_string()) return s->get();
  if (auto i = node.as_integer()) return std::to_string(i->get());
  if (auto f = node.as_floating_point()) {
    std::string text = fmt::format("{}", f->get());
    if (text.find_first_of(".eE") == std::string::npos && text.find("inf") == std::string::npos) text += ".0";
    return text;
  }
  if (auto b = node.as_boolean()) return b->get() ? "1" : "0";
  return std::nullopt;
}

/// Macro names as the GLSL preprocessor accepts them.
bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// A define name: a macro name, or a function-like one, "NAME(a, b)" (no
/// space before '(', parameters are names, separated by commas).
bool is_macro_name(std::string_view s) {
  const std::size_t paren = s.find('(');
  if (paren == std::string_view::npos) return is_identifier(s);
  if (!is_identifier(s.substr(0, paren)) || s.back() != ')') return false;
  std::string_view params = s.substr(paren + 1, s.size() - paren - 2);
  const auto trim = [](std::string_view p) {
    while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
    while (!p.empty() && p.back() == ' ') p.remove_suffix(1);
    return p;
  };
  if (trim(params).empty()) return true;
  std::set<std::string_view> seen;
  for (;;) {
    const std::size_t comma = params.find(',');
    std::string_view param = trim(params.substr(0, comma));
    if (!is_identifier(param) || !seen.insert(param).second) return false;
    if (comma == std::string_view::npos) return true;
    params.remove_prefix(comma + 1);
  }
}

/// The macro a define name defines: "TWICE" for "TWICE(x)".
std::string_view macro_of(std::string_view name) { return name.substr(0, name.find('(')); }

/// Letters, digits, '_', '-' and '.', but not "." or "..": the name is a
/// store key and appears beside paths (kcache::check_kernel_name refuses
/// those too when a bundle carries them).
bool is_valid_kernel_name(std::string_view s) {
  return !s.empty() && s != "." && s != ".." && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

/// A C++ name expression NVRTC can lower ("matmul<float, 16>", "ns::f"):
/// one printable line without quotes, comments or preprocessor text, at most
/// 256 bytes. It goes into nvrtcAddNameExpression, never into a path.
bool is_name_expression(std::string_view s) {
  if (s.empty() || s.size() > 256 || has_control_character(s)) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_' || s[0] == ':')) return false;
  for (char c : s)
    if (c == '"' || c == '\'' || c == '#' || c == '\\' || c == ';' || c == '{' || c == '}') return false;
  return s.find("//") == std::string_view::npos && s.find("/*") == std::string_view::npos;
}

/// An NVRTC option kcache refuses, with what to use instead; nullopt when
/// allowed. Refused: what changes the output kind or where files go, and
/// what would read files or settings outside the key.
std::optional<std::string> refused_nvrtc_option(std::string_view opt) {
  auto is = [&](std::string_view name) {
    return opt == name || (opt.starts_with(name) && (opt[name.size()] == '=' || (name.size() == 2 && name != "-o")));
  };
  for (std::string_view n : {"--gpu-architecture", "-arch"})
    if (is(n)) return std::string("the architecture comes from `arch` — list it there, e.g. arch = [\"sm_90\"]");
  for (std::string_view n : {"-dc", "--device-c", "-rdc", "--relocatable-device-code", "-dlto", "--dlink-time-opt",
                             "-lto", "--extensible-whole-program", "-ewp"})
    if (opt == n || opt.starts_with(std::string(n) + "="))
      return std::string("relocatable and LTO output is not supported (kcache stores whole cubins) — remove it");
  for (std::string_view n : {"-I", "--include-path"})
    if (is(n)) return std::string("include folders come from `include_dirs` (relative, so keys stay portable)");
  for (std::string_view n : {"-D", "--define-macro", "-U", "--undefine-macro"})
    if (is(n)) return std::string("macros come from `defines` (and variants)");
  for (std::string_view n : {"-include", "--pre-include", "-pch", "--pch", "-create-pch", "--create-pch", "-use-pch",
                             "--use-pch", "-pch-dir", "--pch-dir", "-time", "--time", "-fdevice-time-trace",
                             "--fdevice-time-trace", "-o", "--output-file"})
    if (is(n) || opt == n) return std::string("it reads or writes files kcache does not track — remove it");
  if (!opt.starts_with("-")) return std::string("an option starts with '-', e.g. \"-use_fast_math\"");
  return std::nullopt;
}

}  // namespace kcache::manifest::internal

namespace kcache::manifest {

std::optional<std::string> value_spills_over(std::string_view v) {
  if (!v.empty() && v.back() == '\\')
    return std::string("ends in a backslash, which would continue it onto the next preamble line");
  for (std::size_t open = v.find("/*"); open != std::string_view::npos; open = v.find("/*", open)) {
    const std::size_t close = v.find("*/", open + 2);
    if (close == std::string_view::npos)
      return std::string("opens a /* comment it does not close, which would swallow the next preamble lines");
    open = close + 2;
  }
  return std::nullopt;
}

}  // namespace kcache::manifest
