// Reading the option keys of one [[kernel]] or [defaults] table into Options, and refusing keys it may not hold.
#include "kcache/manifest/manifest_internal.hpp"

#include "kcache/core/cuda.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/definition/definition.hpp"
#include "kcache/util/text.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <map>
#include <set>

namespace kcache::manifest::internal {
namespace {

/// Longest `preamble` text (and preamble_file, by definition::k_max_source_bytes
/// like any source): the text is part of every key, escaped.
constexpr std::size_t k_max_preamble = 16u << 10;

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

// The steps of read_options, one key each, in the order it runs them.

void read_entry(const toml::table& t, Options& o, Diagnostics& diag) {
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
}

void read_arch(const toml::table& t, Options& o, Diagnostics& diag) {
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
}

void read_nvrtc_options(const toml::table& t, Options& o, Diagnostics& diag) {
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
}

void read_target(const toml::table& t, Options& o, Diagnostics& diag) {
  if (const toml::node* n = t.get("target")) {
    auto v = n->value<std::string>();
    if (!v || !definition::is_known_target(*v))
      diag.add(n, fmt::format("unknown target {} — use one of {}", v ? "'" + *v + "'" : std::string("(not a string)"),
                              spirv_target_names()));
    else o.target = *v;
  }
}

void read_strip(const toml::table& t, Options& o, Diagnostics& diag) {
  if (const toml::node* n = t.get("strip")) {
    if (auto b = n->value<bool>()) o.strip = *b;
    else diag.add(n, "'strip' must be true or false (debug names removed, as glslc -O does)");
  }
}

void read_defines(const toml::table& t, Options& o, Diagnostics& diag) {
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
}

void read_include_dirs(const toml::table& t, Options& o, Diagnostics& diag) {
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
}

void read_extensions(const toml::table& t, Options& o, Diagnostics& diag) {
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
}

void read_preamble(const toml::table& t, Options& o, Diagnostics& diag) {
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
}

void read_preamble_file(const toml::table& t, Options& o, Diagnostics& diag) {
  if (const toml::node* n = t.get("preamble_file")) {
    auto s = n->value<std::string>();
    auto path = s && !is_absolute_like(*s) ? contained_path(*s, false) : std::nullopt;
    if (!path)
      diag.add(n, fmt::format("preamble_file {} must be a path relative to the manifest's folder, inside it (no "
                              "'..' out of it, not absolute)",
                              s ? "'" + util::escape_untrusted(*s) + "'" : std::string("(not a string)")));
    else o.preamble_file = std::move(*path);
  }
}

void read_spec_constants(const toml::table& t, Options& o, Diagnostics& diag) {
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

}  // namespace

void read_options(const toml::table& t, Options& o, Diagnostics& diag) {
  read_entry(t, o, diag);
  read_arch(t, o, diag);
  read_nvrtc_options(t, o, diag);
  read_target(t, o, diag);
  read_enum(t, "stage", o.stage, definition::parse_stage,
            "compute, vertex, fragment, geometry, tess_control, tess_evaluation, task, mesh", diag);
  read_enum(t, "language", o.language, definition::parse_language, "glsl, hlsl, cuda", diag);
  read_enum(t, "optimize", o.optimize, definition::parse_optimize, "none, size, performance", diag);
  read_enum(t, "validate", o.validate, definition::parse_validate_policy, "strict, known, off", diag);
  read_strip(t, o, diag);
  read_defines(t, o, diag);
  read_include_dirs(t, o, diag);
  read_extensions(t, o, diag);
  read_preamble(t, o, diag);
  read_preamble_file(t, o, diag);
  read_spec_constants(t, o, diag);
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

}  // namespace kcache::manifest::internal
