// Reading a manifest: the file, its TOML, its top-level tables, and kernel names unique across the whole manifest.
#include "kcache/manifest/manifest.hpp"

#include "kcache/manifest/manifest_internal.hpp"
#include "kcache/util/file.hpp"

#include <map>

namespace kcache::manifest {

Result<Manifest> parse_manifest(std::string_view text, const std::string& display_name,
                                const std::filesystem::path& root, bool check_files) {
  internal::Diagnostics diag(display_name);
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

  internal::Options defaults;
  if (const toml::node* d = top.get("defaults")) {
    if (auto dt = d->as_table()) {
      internal::check_keys(*dt, false, "[defaults]", diag);
      internal::read_options(*dt, defaults, diag);
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
    for (const auto& node : *arr)
      internal::expand_kernel(defaults, *node.as_table(), diag, root, check_files, m.kernels);
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

}  // namespace kcache::manifest
