// Variants: reading [kernel.variants], bounding their product, and expanding a kernel over it, one spec a point.
#include "kcache/manifest/manifest_internal.hpp"

#include <algorithm>
#include <set>

namespace kcache::manifest::internal {

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

std::optional<VariantLists> kernel_variants(const toml::table& kt, const std::string& name,
                                            const std::vector<KernelSpec>& out, Diagnostics& diag) {
  auto variants = read_variants(kt.get("variants"), diag);
  for (const auto& [k, values] : variants)
    if (values.empty()) return std::nullopt;
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
                         name, count > k_max_kernels ? "over " : "", std::min<std::uint64_t>(count, k_max_kernels),
                         before, k_max_kernels));
    return std::nullopt;
  }
  return variants;
}

void expand_variants(const KernelSpec& base, const Options& o, const VariantLists& variants, const toml::table& kt,
                     const std::string& name, Diagnostics& diag, std::vector<KernelSpec>& out) {
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
    spec.name = variants.empty() ? name : fmt::format("{}[{}]", name, suffix);
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

}  // namespace kcache::manifest::internal
