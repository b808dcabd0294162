// Shared by the manifest module's sources (not for callers outside it): TOML setup, key lists, Options, steps.
#pragma once

#include "kcache/manifest/manifest.hpp"

#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache::manifest::internal {

using definition::KernelSpec;

/// Keys a [defaults] table may hold; a kernel's own table may hold them too.
inline constexpr std::array k_default_keys{
    "entry",      "stage",    "language",      "defines", "include_dirs", "target", "optimize",     "spec_constants",
    "extensions", "preamble", "preamble_file", "strip",   "validate",     "arch",   "nvrtc_options"};
/// Keys that mean something only to glslang (refused on a cuda kernel's own
/// table), and keys that mean something only to NVRTC (refused on a GLSL or
/// HLSL kernel's own table). [defaults] may hold both kinds: each kernel
/// takes the ones of its language.
inline constexpr std::array k_glsl_only_keys{"stage",    "target",        "optimize", "spec_constants", "extensions",
                                             "preamble", "preamble_file", "strip",    "validate"};
inline constexpr std::array k_cuda_only_keys{"arch", "nvrtc_options"};
/// Keys only a [[kernel]] table may hold.
inline constexpr std::array k_kernel_only_keys{"name", "source", "variants"};

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

/// Variant lists, (macro name, values), in key order (read_variants).
using VariantLists = std::vector<std::pair<std::string, std::vector<std::string>>>;

// value_rules.cpp: what a manifest's text may hold.

/// Whether `p` is absolute ('/') or home-relative ('~').
bool is_absolute_like(std::string_view p);
/// `raw` normalised when it names something inside the manifest's folder ("." only when `allow_root`), else nullopt.
std::optional<std::string> contained_path(std::string_view raw, bool allow_root);
/// Whether `v` holds a control character (< 0x20 or 0x7f).
bool has_control_character(std::string_view v);
/// Whether `v` can be one preamble line: no control character.
bool is_single_line_value(std::string_view v);
/// A scalar TOML value as define/variant text; nullopt for tables and arrays.
std::optional<std::string> scalar_text(const toml::node& node);
/// Whether `s` is a macro name as the GLSL preprocessor accepts it.
bool is_identifier(std::string_view s);
/// Whether `s` is a define name: a macro name or a function-like "NAME(a, b)".
bool is_macro_name(std::string_view s);
/// The macro a define name defines: "TWICE" for "TWICE(x)".
std::string_view macro_of(std::string_view name);
/// Whether `s` is a kernel name: letters, digits, '_', '-' and '.', not "." or "..".
bool is_valid_kernel_name(std::string_view s);
/// Whether `s` is a C++ name expression NVRTC can lower ("matmul<float, 16>").
bool is_name_expression(std::string_view s);
/// Why kcache refuses NVRTC option `opt`, with what to use instead; nullopt when allowed.
std::optional<std::string> refused_nvrtc_option(std::string_view opt);

// option_reader.cpp: the option keys of one table.

/// Reads the option keys of [[kernel]] or [defaults] table `t` into `o`; a bad value is diagnosed and left unset.
void read_options(const toml::table& t, Options& o, Diagnostics& diag);
/// Diagnoses each key of `t` that `where` may not hold (the kernel-only keys are allowed when `is_kernel`).
void check_keys(const toml::table& t, bool is_kernel, std::string_view where, Diagnostics& diag);

// variants.cpp: reading, bounding and expanding [kernel.variants].

/// The variant lists of `node` ([kernel.variants], may be null); each bad list or value is diagnosed.
VariantLists read_variants(const toml::node* node, Diagnostics& diag);
/// Kernel `name`'s variant lists; nullopt (diagnosed) if one is unusable or they take `out` past k_max_kernels.
std::optional<VariantLists> kernel_variants(const toml::table& kt, const std::string& name,
                                            const std::vector<KernelSpec>& out, Diagnostics& diag);
/// Appends `base` to `out` per point of the variants' product, named and defined; stops at a name too long.
void expand_variants(const KernelSpec& base, const Options& o, const VariantLists& variants, const toml::table& kt,
                     const std::string& name, Diagnostics& diag, std::vector<KernelSpec>& out);

// kernel_table.cpp: one [[kernel]] table.

/// Appends the KernelSpecs of [[kernel]] table `kt` (over `defaults`, variants expanded) to `out`; problems to `diag`.
void expand_kernel(const Options& defaults, const toml::table& kt, Diagnostics& diag, const std::filesystem::path& root,
                   bool check_files, std::vector<KernelSpec>& out);

}  // namespace kcache::manifest::internal
