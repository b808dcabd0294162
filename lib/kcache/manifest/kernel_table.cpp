// One [[kernel]] table into KernelSpecs: its name and source, its options over [defaults], its language's rules.
#include "kcache/manifest/manifest_internal.hpp"

#include "kcache/util/text.hpp"

namespace kcache::manifest::internal {
namespace {

/// The kernel's name; nullopt, diagnosed, when it is missing or not a valid kernel name.
std::optional<std::string> kernel_name(const toml::table& kt, Diagnostics& diag) {
  const toml::node* name_node = kt.get("name");
  auto name = name_node ? name_node->value<std::string>() : std::nullopt;
  if (!name || !is_valid_kernel_name(*name)) {
    diag.add(
        name_node ? name_node : &kt,
        name ? fmt::format("kernel name '{}' may use only letters, digits, '_', '-' and '.' (and is not '.' or '..')",
                           *name)
             : std::string("kernel needs a 'name' (letters, digits, '_', '-', '.')"));
    return std::nullopt;
  }
  return name;
}

/// The kernel's source normalised; nullopt, diagnosed, when it is missing or not inside the manifest's folder. With
/// `check_files` a source that does not exist or is not a regular file is diagnosed (and still returned).
std::optional<std::string> kernel_source(const toml::table& kt, const std::string& name,
                                         const std::filesystem::path& root, bool check_files, Diagnostics& diag) {
  const toml::node* source_node = kt.get("source");
  auto source = source_node ? source_node->value<std::string>() : std::nullopt;
  if (!source) {
    diag.add(source_node ? source_node : &kt,
             fmt::format("kernel '{}' needs a 'source' path relative to the manifest's folder", name));
    return std::nullopt;
  }
  if (is_absolute_like(*source)) {
    diag.add(source_node, fmt::format("kernel '{}': source '{}' is absolute — use a path relative to the manifest's "
                                      "folder, so that keys do not depend on where the project lives",
                                      name, *source));
    return std::nullopt;
  }
  auto contained_source = contained_path(*source, false);
  if (!contained_source) {
    diag.add(source_node, fmt::format("kernel '{}': source '{}' does not name a file inside the manifest's folder — "
                                      "give a relative path such as \"shaders/{}.comp\" (no '..' out of the folder)",
                                      name, util::escape_untrusted(*source), name));
    return std::nullopt;
  }
  std::string source_rel = std::move(*contained_source);
  if (check_files) {
    std::error_code ec;
    const auto status = std::filesystem::status(root / source_rel, ec);
    if (!std::filesystem::exists(status))
      diag.add(source_node, fmt::format("kernel '{}': source '{}' does not exist (looked in {})", name, *source,
                                        (root / source_rel).string()));
    else if (!std::filesystem::is_regular_file(status))
      diag.add(source_node, fmt::format("kernel '{}': source '{}' is not a regular file (a folder, device or FIFO) — "
                                        "name a shader file",
                                        name, *source));
  }
  return source_rel;
}

/// `defaults` with the options of the kernel's own table laid over them.
Options kernel_options(const Options& defaults, const toml::table& kt, Diagnostics& diag) {
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
  return o;
}

/// The spec every variant of the kernel starts from: the options, each unset one at its default.
KernelSpec base_spec(const Options& o, const std::string& name, const std::string& source_rel) {
  KernelSpec base;
  base.base_name = name;
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
  return base;
}

/// The kernel's language rules: no key of the other language on its own table; a CUDA kernel's arch, NVRTC options
/// and entry, a GLSL or HLSL kernel's entry a function name.
void apply_language(const Options& o, const toml::table& kt, const std::string& name, KernelSpec& base,
                    Diagnostics& diag) {
  if (base.language == definition::Language::cuda) {
    // A GLSL-only key written on this kernel would be silently ignored.
    for (const char* key : k_glsl_only_keys)
      if (const toml::node* n = kt.get(key))
        diag.add(n, fmt::format("kernel '{}': '{}' is a GLSL/HLSL key; a cuda kernel does not use it — remove it "
                                "(CUDA takes arch, nvrtc_options, defines, include_dirs, entry)",
                                name, key));
    if (!o.arch)
      diag.add(&kt, fmt::format("kernel '{}': language = \"cuda\" needs `arch`, the GPU architectures to build, e.g. "
                                "arch = [\"sm_80\", \"sm_90\"] (compute_XY stores PTX)",
                                name));
    base.arch = o.arch.value_or(std::vector<std::string>{});
    base.nvrtc_options = o.nvrtc_options.value_or(std::vector<std::string>{});
    base.entry = o.entry.value_or(name);  // NVRTC has no "main": the kernel's own name
    base.strip = false;
  } else {
    for (const char* key : k_cuda_only_keys)
      if (const toml::node* n = kt.get(key))
        diag.add(n, fmt::format("kernel '{}': '{}' applies to language = \"cuda\" kernels only — remove it or set "
                                "language = \"cuda\"",
                                name, key));
    if (!is_identifier(base.entry))
      diag.add(kt.get("entry") ? kt.get("entry") : &kt,
               fmt::format("kernel '{}': entry '{}' must be a function name such as \"main\" (name expressions are "
                           "for CUDA kernels)",
                           name, util::escape_untrusted(base.entry)));
  }
}

}  // namespace

void expand_kernel(const Options& defaults, const toml::table& kt, Diagnostics& diag, const std::filesystem::path& root,
                   bool check_files, std::vector<KernelSpec>& out) {
  check_keys(kt, true, "[[kernel]]", diag);
  int line = static_cast<int>(kt.source().begin.line);
  auto name = kernel_name(kt, diag);
  if (!name) return;
  auto source_rel = kernel_source(kt, *name, root, check_files, diag);
  if (!source_rel) return;

  Options o = kernel_options(defaults, kt, diag);
  auto variants = kernel_variants(kt, *name, out, diag);
  if (!variants) return;

  KernelSpec base = base_spec(o, *name, *source_rel);
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
  apply_language(o, kt, *name, base, diag);
  expand_variants(base, o, *variants, kt, *name, diag, out);
}

}  // namespace kcache::manifest::internal
