#include "kcache/manifest/manifest.hpp"

#include "kcache/core/cuda.hpp"
#include "kcache/definition/definition.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/path.hpp"
#include "kcache/util/text.hpp"

#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

namespace kcache::manifest {
namespace {

using definition::KernelSpec;

constexpr std::array k_default_keys{"entry",         "stage",    "language",       "defines",    "include_dirs",
                                    "target",        "optimize", "spec_constants", "extensions", "preamble",
                                    "preamble_file", "strip",    "validate",       "arch",       "nvrtc_options"};
/// Keys that mean something only to glslang (refused on a cuda kernel's own
/// table), and keys that mean something only to NVRTC (refused on a GLSL or
/// HLSL kernel's own table). [defaults] may hold both kinds: each kernel
/// takes the ones of its language.
constexpr std::array k_glsl_only_keys{"stage",    "target",        "optimize", "spec_constants", "extensions",
                                      "preamble", "preamble_file", "strip",    "validate"};
constexpr std::array k_cuda_only_keys{"arch", "nvrtc_options"};
constexpr std::array k_kernel_only_keys{"name", "source", "variants"};

/// Collects problems as "file:line: message" lines.
class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : m_file(std::move(file)) {}
  void add(const toml::node* at, std::string message) {
    add_at(at ? static_cast<int>(at->source().begin.line) : 0, std::move(message));
  }
  void add_at(int line, std::string message) {
    m_lines.push_back(line > 0 ? fmt::format("{}:{}: {}", m_file, line, message)
                               : fmt::format("{}: {}", m_file, message));
  }
  bool empty() const { return m_lines.empty(); }
  tl::unexpected<Error> error() const { return fail(Category::invalid_argument, "{}", fmt::join(m_lines, "\n")); }

 private:
  std::string m_file;
  std::vector<std::string> m_lines;
};

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

/// Longest `preamble` text (and preamble_file, by definition::k_max_source_bytes
/// like any source): the text is part of every key, escaped.
constexpr std::size_t k_max_preamble = 16u << 10;

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

/// The fields of a kernel or [defaults] table, before variant expansion.
struct Options {
  std::optional<std::string> entry, target;
  std::optional<definition::Stage> stage;
  std::optional<definition::Language> language;
  std::optional<definition::Optimize> optimize;
  std::map<std::string, std::string> defines;
  std::optional<std::vector<std::string>> include_dirs;
  std::map<std::uint32_t, definition::SpecConstant> spec_constants;
  std::optional<std::vector<std::string>> extensions;
  std::optional<std::string> preamble, preamble_file;
  std::optional<bool> strip;
  std::optional<definition::ValidatePolicy> validate;
  std::optional<std::vector<std::string>> arch, nvrtc_options;
};

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

/// Reads an array of strings; each checked by `check` (an error text or
/// nullopt). nullopt and a diagnostic when `n` is not an array of strings.
template <typename Check>
std::optional<std::vector<std::string>> read_string_list(const toml::node* n, std::string_view key,
                                                         std::string_view example, Check check, Diagnostics& diag) {
  auto arr = n->as_array();
  if (!arr) {
    diag.add(n, fmt::format("'{}' must be an array of strings, e.g. {} = {}", key, key, example));
    return std::nullopt;
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& v : *arr) {
    auto s = v.value<std::string>();
    if (!s) {
      diag.add(&v, fmt::format("'{}' entries must be strings, e.g. {} = {}", key, key, example));
      continue;
    }
    if (auto why = check(*s)) {
      diag.add(&v, fmt::format("{} '{}': {}", key, util::escape_untrusted(*s), *why));
      continue;
    }
    if (!seen.insert(*s).second) {
      diag.add(&v, fmt::format("{} lists '{}' twice — keep one", key, util::escape_untrusted(*s)));
      continue;
    }
    out.push_back(std::move(*s));
  }
  return out;
}

template <typename Enum, typename Parse>
void read_enum(const toml::table& t, const char* key, std::optional<Enum>& out, Parse parse, std::string_view choices,
               Diagnostics& diag) {
  const toml::node* node = t.get(key);
  if (!node) return;
  auto text = node->value<std::string>();
  auto parsed = text ? parse(*text) : std::nullopt;
  if (!parsed) {
    diag.add(node, fmt::format("'{}' must be one of {} (got {})", key, choices,
                               text ? "'" + *text + "'" : std::string("a non-string")));
    return;
  }
  out = *parsed;
}

void read_options(const toml::table& t, Options& o, Diagnostics& diag) {
  if (const toml::node* n = t.get("entry")) {
    // A name expression is accepted here and refused later on a kernel that
    // is not CUDA (the language may come from [defaults]).
    auto v = n->value<std::string>();
    if (!v || v->empty() || !is_name_expression(*v))
      diag.add(n,
               "'entry' must be a function name such as \"main\" (for CUDA also a name expression such as "
               "\"matmul<float, 16>\")");
    else o.entry = *v;
  }
  if (const toml::node* n = t.get("arch")) {
    o.arch = read_string_list(
        n, "arch", "[\"sm_80\", \"sm_90\"]",
        [](const std::string& s) -> std::optional<std::string> {
          if (is_cuda_arch(s)) return std::nullopt;
          return std::string(
              "not a CUDA architecture — use sm_XY (cubin, e.g. sm_90), sm_XYa / sm_XYf, or "
              "compute_XY (PTX, e.g. compute_90)");
        },
        diag);
    if (o.arch && o.arch->empty()) diag.add(n, "'arch' is empty — list at least one, e.g. arch = [\"sm_90\"]");
  }
  if (const toml::node* n = t.get("nvrtc_options")) {
    o.nvrtc_options = read_string_list(
        n, "nvrtc_options", "[\"-use_fast_math\", \"-std=c++17\"]",
        [](const std::string& s) -> std::optional<std::string> {
          if (s.empty() || s.size() > 1024 || has_control_character(s))
            return std::string("must be one printable option of at most 1024 bytes");
          return refused_nvrtc_option(s);
        },
        diag);
  }
  if (const toml::node* n = t.get("target")) {
    auto v = n->value<std::string>();
    if (!v || !definition::is_known_target(*v))
      diag.add(n, fmt::format("unknown target {} — use one of vulkan1.0, vulkan1.1, vulkan1.2, vulkan1.3",
                              v ? "'" + *v + "'" : std::string("(not a string)")));
    else o.target = *v;
  }
  read_enum(t, "stage", o.stage, definition::parse_stage,
            "compute, vertex, fragment, geometry, tess_control, tess_evaluation, task, mesh", diag);
  read_enum(t, "language", o.language, definition::parse_language, "glsl, hlsl, cuda", diag);
  read_enum(t, "optimize", o.optimize, definition::parse_optimize, "none, size, performance", diag);
  read_enum(t, "validate", o.validate, definition::parse_validate_policy, "strict, known, off", diag);
  if (const toml::node* n = t.get("strip")) {
    if (auto b = n->value<bool>()) o.strip = *b;
    else diag.add(n, "'strip' must be true or false (debug names removed, as glslc -O does)");
  }
  if (const toml::node* n = t.get("defines")) {
    if (auto table = n->as_table()) {
      std::map<std::string, std::string, std::less<>> macros;  // macro → the define naming it
      for (const auto& [k, v] : *table) {
        const std::string_view name = k.str();
        auto text = scalar_text(v);
        if (has_control_character(name))
          diag.add(&v, fmt::format("define '{}' has a newline or control character in its name — a name is a macro "
                                   "name such as TILE or TWICE(x)",
                                   util::escape_untrusted(name)));
        else if (!is_macro_name(name))
          diag.add(&v, fmt::format("define '{}' is not a valid macro name — use NAME or a function-like NAME(a, b)",
                                   util::escape_untrusted(name)));
        else if (!text) diag.add(&v, fmt::format("define '{}' must be a string, number or boolean", name));
        else if (!is_single_line_value(*text))
          diag.add(&v, fmt::format("define '{}' holds a newline or control character ('{}') — a value must be one "
                                   "line; use `preamble` for text of several lines",
                                   name, util::escape_untrusted(*text)));
        else if (auto why = value_spills_over(*text))
          diag.add(&v, fmt::format("define '{}' = '{}' {} — remove it", name, *text, *why));
        else if (auto [it, fresh] = macros.emplace(std::string(macro_of(name)), std::string(name)); !fresh)
          diag.add(&v,
                   fmt::format("defines '{}' and '{}' both define macro {} — keep one", it->second, name, it->first));
        else o.defines[std::string(name)] = *text;
      }
    } else {
      diag.add(n, "'defines' must be a table, e.g. defines = { TILE = 16 }");
    }
  }
  if (const toml::node* n = t.get("include_dirs")) {
    std::vector<std::string> dirs;
    if (auto arr = n->as_array()) {
      for (const auto& v : *arr) {
        auto s = v.value<std::string>();
        if (!s) diag.add(&v, "'include_dirs' entries must be strings");
        else if (is_absolute_like(*s))
          diag.add(&v, fmt::format("include dir '{}' is absolute — use a path relative to the manifest's folder, "
                                   "so that keys do not depend on where the project is checked out",
                                   *s));
        else if (auto dir = contained_path(*s, true); !dir)
          diag.add(&v, fmt::format("include dir '{}' is not inside the manifest's folder — use \".\" or a relative "
                                   "path such as \"include\" (no '..' out of the folder)",
                                   util::escape_untrusted(*s)));
        else dirs.push_back(std::move(*dir));
      }
    } else {
      diag.add(n, "'include_dirs' must be an array of paths, e.g. include_dirs = [\"include\"]");
    }
    o.include_dirs = std::move(dirs);
  }
  if (const toml::node* n = t.get("extensions")) {
    std::vector<std::string> names;
    if (auto arr = n->as_array()) {
      std::set<std::string> seen;
      for (const auto& v : *arr) {
        auto s = v.value<std::string>();
        if (!s || !is_identifier(*s))
          diag.add(&v, fmt::format("extension {} must be an extension name such as \"GL_EXT_shader_16bit_storage\" "
                                   "(letters, digits, '_'); kcache writes `#extension NAME : enable`",
                                   s ? "'" + util::escape_untrusted(*s) + "'" : std::string("(not a string)")));
        else if (!seen.insert(*s).second) diag.add(&v, fmt::format("extension '{}' is listed twice", *s));
        else names.push_back(std::move(*s));
      }
    } else {
      diag.add(n, "'extensions' must be an array of names, e.g. extensions = [\"GL_EXT_shader_16bit_storage\"]");
    }
    o.extensions = std::move(names);
  }
  if (const toml::node* n = t.get("preamble")) {
    auto s = n->value<std::string>();
    const auto bad = s ? std::find_if(s->begin(), s->end(),
                                      [](char c) {
                                        const auto b = static_cast<unsigned char>(c);
                                        return (b < 0x20 && c != '\n' && c != '\t') || b == 0x7f;
                                      })
                       : std::string::iterator{};
    if (!s) diag.add(n, "'preamble' must be a string (text put after #version), e.g. preamble = \"\"\"...\"\"\"");
    else if (bad != s->end())
      diag.add(n, fmt::format("'preamble' holds control character U+{:04X} — only newlines and tabs may appear",
                              static_cast<unsigned>(static_cast<unsigned char>(*bad))));
    else if (s->size() > k_max_preamble)
      diag.add(n, fmt::format("'preamble' is {} bytes; limit {} — put longer text into a file named by "
                              "preamble_file",
                              s->size(), k_max_preamble));
    else o.preamble = std::move(*s);
  }
  if (const toml::node* n = t.get("preamble_file")) {
    auto s = n->value<std::string>();
    auto path = s && !is_absolute_like(*s) ? contained_path(*s, false) : std::nullopt;
    if (!path)
      diag.add(n, fmt::format("preamble_file {} must be a path relative to the manifest's folder, inside it (no "
                              "'..' out of it, not absolute)",
                              s ? "'" + util::escape_untrusted(*s) + "'" : std::string("(not a string)")));
    else o.preamble_file = std::move(*path);
  }
  if (const toml::node* n = t.get("spec_constants")) {
    auto table = n->as_table();
    if (!table) {
      diag.add(n, "'spec_constants' must be a table of constant_id = value, e.g. spec_constants = { \"0\" = 64 }");
      return;
    }
    for (const auto& [k, v] : *table) {
      std::uint32_t id = 0;
      auto key = k.str();
      auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc{} || ptr != key.data() + key.size()) {
        diag.add(&v, fmt::format("spec constant key '{}' must be a constant_id (a non-negative integer)", key));
        continue;
      }
      definition::SpecConstant sc;
      sc.id = id;
      if (auto b = v.as_boolean()) {
        sc.type = "bool", sc.bits = b->get() ? 1u : 0u, sc.text = b->get() ? "true" : "false";
      } else if (auto i = v.as_integer()) {
        std::int64_t x = i->get();
        if (x < INT32_MIN || x > static_cast<std::int64_t>(UINT32_MAX)) {
          diag.add(&v, fmt::format("spec constant {} = {} does not fit in 32 bits", id, x));
          continue;
        }
        sc.type = "int", sc.bits = static_cast<std::uint32_t>(x), sc.text = std::to_string(x);
      } else if (auto f = v.as_floating_point()) {
        sc.type = "float", sc.bits = std::bit_cast<std::uint32_t>(static_cast<float>(f->get()));
        sc.text = fmt::format("{}", f->get());
      } else {
        diag.add(&v, fmt::format("spec constant {} must be an integer, float or boolean", id));
        continue;
      }
      o.spec_constants[id] = sc;
    }
  }
}

void check_keys(const toml::table& t, bool is_kernel, std::string_view where, Diagnostics& diag) {
  for (const auto& [k, v] : t) {
    auto key = k.str();
    bool ok =
        std::find(k_default_keys.begin(), k_default_keys.end(), key) != k_default_keys.end() ||
        (is_kernel && std::find(k_kernel_only_keys.begin(), k_kernel_only_keys.end(), key) != k_kernel_only_keys.end());
    if (!ok)
      diag.add(&v, fmt::format("unknown key '{}' in {} — allowed: {}{}{}", key, where, fmt::join(k_default_keys, ", "),
                               is_kernel ? ", " : "",
                               is_kernel ? fmt::format("{}", fmt::join(k_kernel_only_keys, ", ")) : std::string()));
  }
}

/// Variant lists in key order; an empty list or a non-scalar value is an error.
std::vector<std::pair<std::string, std::vector<std::string>>> read_variants(const toml::node* node, Diagnostics& diag) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  if (!node) return out;
  auto table = node->as_table();
  if (!table) {
    diag.add(node, "'variants' must be a table of NAME = [values], e.g. [kernel.variants] T = [\"float\", \"int\"]");
    return out;
  }
  for (const auto& [k, v] : *table) {
    std::string key(k.str());
    if (!is_identifier(key)) {
      diag.add(&v, fmt::format("variant '{}' is not a valid macro name", key));
      continue;
    }
    auto arr = v.as_array();
    if (!arr) {
      diag.add(&v, fmt::format("variant '{}' must be an array of values, e.g. {} = [8, 16]", key, key));
      continue;
    }
    if (arr->empty()) {
      diag.add(&v, fmt::format("variant '{}' has an empty list — give at least one value or remove it", key));
      continue;
    }
    std::vector<std::string> values;
    std::set<std::string> seen;
    for (const auto& item : *arr) {
      auto text = scalar_text(item);
      if (!text) diag.add(&item, fmt::format("variant '{}' values must be strings, numbers or booleans", key));
      else if (!is_single_line_value(*text))
        diag.add(&item, fmt::format("variant '{}' has a value with a newline or control character — a value must be "
                                    "one line",
                                    key));
      else if (auto why = value_spills_over(*text))
        diag.add(&item, fmt::format("variant '{}' value '{}' {} — remove it", key, *text, *why));
      else if (!seen.insert(*text).second) diag.add(&item, fmt::format("variant '{}' lists '{}' twice", key, *text));
      else values.push_back(*text);
    }
    out.emplace_back(std::move(key), std::move(values));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expand_kernel(const Options& defaults, const toml::table& kt, Diagnostics& diag, const std::filesystem::path& root,
                   bool check_files, std::vector<KernelSpec>& out) {
  check_keys(kt, true, "[[kernel]]", diag);
  int line = static_cast<int>(kt.source().begin.line);
  const toml::node* name_node = kt.get("name");
  auto name = name_node ? name_node->value<std::string>() : std::nullopt;
  if (!name || !is_valid_kernel_name(*name)) {
    diag.add(
        name_node ? name_node : &kt,
        name ? fmt::format("kernel name '{}' may use only letters, digits, '_', '-' and '.' (and is not '.' or '..')",
                           *name)
             : std::string("kernel needs a 'name' (letters, digits, '_', '-', '.')"));
    return;
  }
  const toml::node* source_node = kt.get("source");
  auto source = source_node ? source_node->value<std::string>() : std::nullopt;
  if (!source) {
    diag.add(source_node ? source_node : &kt,
             fmt::format("kernel '{}' needs a 'source' path relative to the manifest's folder", *name));
    return;
  }
  if (is_absolute_like(*source)) {
    diag.add(source_node, fmt::format("kernel '{}': source '{}' is absolute — use a path relative to the manifest's "
                                      "folder, so that keys do not depend on where the project lives",
                                      *name, *source));
    return;
  }
  auto contained_source = contained_path(*source, false);
  if (!contained_source) {
    diag.add(source_node, fmt::format("kernel '{}': source '{}' does not name a file inside the manifest's folder — "
                                      "give a relative path such as \"shaders/{}.comp\" (no '..' out of the folder)",
                                      *name, util::escape_untrusted(*source), *name));
    return;
  }
  std::string source_rel = std::move(*contained_source);
  if (check_files) {
    std::error_code ec;
    const auto status = std::filesystem::status(root / source_rel, ec);
    if (!std::filesystem::exists(status))
      diag.add(source_node, fmt::format("kernel '{}': source '{}' does not exist (looked in {})", *name, *source,
                                        (root / source_rel).string()));
    else if (!std::filesystem::is_regular_file(status))
      diag.add(source_node, fmt::format("kernel '{}': source '{}' is not a regular file (a folder, device or FIFO) — "
                                        "name a shader file",
                                        *name, *source));
  }

  Options o = defaults;
  Options own;
  read_options(kt, own, diag);
  if (own.entry) o.entry = own.entry;
  if (own.target) o.target = own.target;
  if (own.stage) o.stage = own.stage;
  if (own.language) o.language = own.language;
  if (own.optimize) o.optimize = own.optimize;
  if (own.include_dirs) o.include_dirs = own.include_dirs;
  if (own.extensions) o.extensions = own.extensions;
  if (own.preamble) o.preamble = own.preamble;
  if (own.preamble_file) o.preamble_file = own.preamble_file;
  if (own.strip) o.strip = own.strip;
  if (own.validate) o.validate = own.validate;
  if (own.arch) o.arch = own.arch;
  if (own.nvrtc_options) o.nvrtc_options = own.nvrtc_options;
  // A kernel's define replaces a default one of the same macro, whichever
  // form (object- or function-like) either has.
  // (Named copies, not the structured bindings: clang 14, which builds the
  // fuzz targets, cannot capture a binding in a lambda.)
  for (const auto& define : own.defines) {
    const std::string_view macro = macro_of(define.first);
    std::erase_if(o.defines, [&](const auto& d) { return macro_of(d.first) == macro; });
  }
  for (auto& [k, v] : own.defines) o.defines[k] = v;
  for (auto& [k, v] : own.spec_constants) o.spec_constants[k] = v;

  auto variants = read_variants(kt.get("variants"), diag);
  for (const auto& [k, values] : variants)
    if (values.empty()) return;
  // The product is checked before anything is expanded: 10 lists of 10
  // values would otherwise allocate 10^10 kernels.
  std::uint64_t count = 1;
  for (const auto& [k, values] : variants) {
    count *= values.size();
    if (count > k_max_kernels) break;  // stays far from overflow: each factor is < 2^32
  }
  if (count > k_max_kernels - std::min(out.size(), k_max_kernels)) {
    const std::string before = out.empty() ? "" : fmt::format(" after {} kernels before it", out.size());
    diag.add(kt.get("variants"),
             fmt::format("kernel '{}' expands to {}{} variants{}; a manifest may hold at most {} kernels — split "
                         "the variant lists or the manifest",
                         *name, count > k_max_kernels ? "over " : "", std::min<std::uint64_t>(count, k_max_kernels),
                         before, k_max_kernels));
    return;
  }

  KernelSpec base;
  base.base_name = *name;
  base.source = source_rel;
  base.entry = o.entry.value_or("main");
  base.stage = o.stage.value_or(definition::Stage::compute);
  base.language = o.language.value_or(definition::Language::glsl);
  base.include_dirs = o.include_dirs.value_or(std::vector<std::string>{});
  base.target = o.target.value_or(std::string(definition::k_default_target));
  base.optimize = o.optimize.value_or(definition::Optimize::performance);
  base.extensions = o.extensions.value_or(std::vector<std::string>{});
  base.preamble = o.preamble.value_or("");
  base.preamble_file = o.preamble_file.value_or("");
  base.strip = o.strip.value_or(base.optimize != definition::Optimize::none);  // glslc: -O strips, -O0 keeps
  base.validate = o.validate.value_or(definition::ValidatePolicy::strict);
  if (check_files && !base.preamble_file.empty()) {
    std::error_code ec;
    const auto status = std::filesystem::status(root / base.preamble_file, ec);
    if (!std::filesystem::is_regular_file(status))
      diag.add(kt.get("preamble_file") ? kt.get("preamble_file") : &kt,
               fmt::format("kernel '{}': preamble_file '{}' is {} (looked in {})", *name, base.preamble_file,
                           std::filesystem::exists(status) ? "not a regular file" : "missing",
                           (root / base.preamble_file).string()));
  }
  for (auto& [id, sc] : o.spec_constants) base.spec_constants.push_back(sc);
  base.manifest_line = line;
  if (base.language == definition::Language::cuda) {
    // A GLSL-only key written on this kernel would be silently ignored.
    for (const char* key : k_glsl_only_keys)
      if (const toml::node* n = kt.get(key))
        diag.add(n, fmt::format("kernel '{}': '{}' is a GLSL/HLSL key; a cuda kernel does not use it — remove it "
                                "(CUDA takes arch, nvrtc_options, defines, include_dirs, entry)",
                                *name, key));
    if (!o.arch)
      diag.add(&kt, fmt::format("kernel '{}': language = \"cuda\" needs `arch`, the GPU architectures to build, e.g. "
                                "arch = [\"sm_80\", \"sm_90\"] (compute_XY stores PTX)",
                                *name));
    base.arch = o.arch.value_or(std::vector<std::string>{});
    base.nvrtc_options = o.nvrtc_options.value_or(std::vector<std::string>{});
    base.entry = o.entry.value_or(*name);  // NVRTC has no "main": the kernel's own name
    base.strip = false;
  } else {
    for (const char* key : k_cuda_only_keys)
      if (const toml::node* n = kt.get(key))
        diag.add(n, fmt::format("kernel '{}': '{}' applies to language = \"cuda\" kernels only — remove it or set "
                                "language = \"cuda\"",
                                *name, key));
    if (!is_identifier(base.entry))
      diag.add(kt.get("entry") ? kt.get("entry") : &kt,
               fmt::format("kernel '{}': entry '{}' must be a function name such as \"main\" (name expressions are "
                           "for CUDA kernels)",
                           *name, util::escape_untrusted(base.entry)));
  }

  // Odometer over the variant lists: the last key varies fastest.
  std::vector<std::size_t> index(variants.size(), 0);
  for (;;) {
    KernelSpec spec = base;
    auto defines = o.defines;
    std::string suffix;
    for (std::size_t i = 0; i < variants.size(); ++i) {
      const auto& [key, values] = variants[i];
      spec.variant.emplace_back(key, values[index[i]]);
      const std::string& name_of_key = key;  // a binding cannot be captured by clang 14
      std::erase_if(defines, [&](const auto& d) { return d.first != name_of_key && macro_of(d.first) == name_of_key; });
      defines[key] = values[index[i]];
      suffix += fmt::format("{}{}={}", i ? "," : "", key, values[index[i]]);
    }
    spec.name = variants.empty() ? *name : fmt::format("{}[{}]", *name, suffix);
    spec.defines.assign(defines.begin(), defines.end());
    if (spec.name.size() > k_max_kernel_name) {
      diag.add(&kt, fmt::format("kernel name '{}…' is longer than {} bytes — shorten variant values",
                                spec.name.substr(0, 60), k_max_kernel_name));
      return;
    }
    out.push_back(std::move(spec));
    std::size_t i = variants.size();
    while (i > 0) {
      --i;
      if (++index[i] < variants[i].second.size()) break;
      index[i] = 0;
      if (i == 0) return;
    }
    if (variants.empty()) return;
  }
}

}  // namespace

Result<Manifest> parse_manifest(std::string_view text, const std::string& display_name,
                                const std::filesystem::path& root, bool check_files) {
  Diagnostics diag(display_name);
  toml::parse_result parsed = toml::parse(text, display_name);
  if (!parsed) {
    const auto& err = parsed.error();
    return fail(Category::invalid_argument, "{}:{}:{}: TOML syntax error: {}", display_name, err.source().begin.line,
                err.source().begin.column, err.description());
  }
  const toml::table& top = parsed.table();
  for (const auto& [k, v] : top)
    if (k.str() != "defaults" && k.str() != "kernel" && k.str() != "vulkan")
      diag.add(&v,
               fmt::format("unknown top-level key '{}' — a manifest has [defaults], [vulkan] and [[kernel]] entries",
                           k.str()));

  Options defaults;
  if (const toml::node* d = top.get("defaults")) {
    if (auto dt = d->as_table()) {
      check_keys(*dt, false, "[defaults]", diag);
      read_options(*dt, defaults, diag);
    } else {
      diag.add(d, "'defaults' must be a table: [defaults]");
    }
  }

  Manifest m;
  m.path = display_name;
  m.root = root;
  // [vulkan] device_profile: the name is checked where devices are made
  // (device::parse_device_profile); here only its shape.
  if (const toml::node* vk = top.get("vulkan")) {
    if (auto vt = vk->as_table()) {
      for (const auto& [k, v] : *vt) {
        if (k.str() != "device_profile") {
          diag.add(&v, fmt::format("unknown key '{}' in [vulkan] — it holds device_profile", k.str()));
        } else if (auto name = v.value<std::string>(); name && name->size() <= 64) {
          m.device_profile = *name;
        } else {
          diag.add(&v, "'device_profile' must be a short string: \"all-supported\" or \"minimal\"");
        }
      }
    } else {
      diag.add(vk, "'vulkan' must be a table: [vulkan]");
    }
  }
  const toml::node* kernels = top.get("kernel");
  if (!kernels) {
    diag.add(nullptr, "no kernels — add a [[kernel]] table with name and source");
  } else if (auto arr = kernels->as_array(); !arr || !arr->is_array_of_tables()) {
    diag.add(kernels, "'kernel' must be written as [[kernel]] tables");
  } else {
    for (const auto& node : *arr) expand_kernel(defaults, *node.as_table(), diag, root, check_files, m.kernels);
  }

  std::map<std::string, int> seen;
  for (const auto& k : m.kernels) {
    auto [it, inserted] = seen.emplace(k.name, k.manifest_line);
    if (!inserted)
      diag.add_at(k.manifest_line, fmt::format("duplicate kernel name '{}' (first at line {}) — names must be unique",
                                               k.name, it->second));
  }
  if (!diag.empty()) return diag.error();
  return m;
}

Result<Manifest> load_manifest(const std::filesystem::path& path) {
  auto text = util::read_file(path);
  if (!text) {
    if (text.error().category == Category::not_found)
      return fail(Category::not_found, "manifest {} not found — pass the path of a kcache.toml", path.string());
    return tl::unexpected(text.error());
  }
  auto root = path.parent_path();
  if (root.empty()) root = ".";
  return parse_manifest(*text, path.string(), root);
}

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
