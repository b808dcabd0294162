#include "kcache/core/namespace.hpp"

#include "kcache/core/cuda.hpp"
#include "kcache/core/entry.hpp"

#include "kcache/util/hash.hpp"
#include "kcache/util/text.hpp"

#include <fmt/ranges.h>

#include <algorithm>

namespace kcache {

const std::string* FingerprintRecord::find(std::string_view field) const {
  for (const auto& [k, v] : fields)
    if (k == field) return &v;
  return nullptr;
}

std::vector<FieldDifference> diff_fingerprints(const FingerprintRecord& a, const FingerprintRecord& b) {
  std::vector<FieldDifference> out;
  for (const auto& [k, v] : a.fields) {
    const std::string* other = b.find(k);
    if (!other) out.push_back({k, v, "<absent>"});
    else if (*other != v) out.push_back({k, v, *other});
  }
  for (const auto& [k, v] : b.fields)
    if (!a.find(k)) out.push_back({k, "<absent>", v});
  return out;
}

Namespace spirv_namespace(std::string_view target) {
  return Namespace{"spirv", std::string(target), FingerprintRecord{{{"target", std::string(target)}}}};
}

bool is_per_card_field(std::string_view field) {
  return field == "deviceUUID" || field == "deviceLUID" || field == "pciBus";
}

FingerprintRecord compatible_record(const FingerprintRecord& record) {
  FingerprintRecord out;
  for (const auto& f : record.fields)
    if (!is_per_card_field(f.first)) out.fields.push_back(f);
  return out;
}

bool has_per_card_fields(const FingerprintRecord& record) {
  return std::any_of(record.fields.begin(), record.fields.end(),
                     [](const auto& f) { return is_per_card_field(f.first); });
}

namespace {

std::string short_id_of(const FingerprintRecord& record) {
  util::Hasher h;
  h.field("fingerprint-scheme", "1");
  for (const auto& [k, v] : record.fields) h.field(k, v);
  return h.finish().hex().substr(0, 16);
}

}  // namespace

Namespace vulkan_namespace(FingerprintRecord record) {
  record = compatible_record(record);
  std::string short_id = short_id_of(record);
  return Namespace{"vulkan", std::move(short_id), std::move(record)};
}

std::string recorded_vulkan_id(const FingerprintRecord& record) { return short_id_of(record); }

const SpirvTarget* find_spirv_target(std::string_view name) {
  for (const SpirvTarget& t : k_spirv_targets)
    if (t.name == name) return &t;
  return nullptr;
}

bool is_known_spirv_target(std::string_view target) { return find_spirv_target(target) != nullptr; }

std::string spirv_target_names() {
  std::string names;
  for (const SpirvTarget& t : k_spirv_targets) names += fmt::format("{}{}", names.empty() ? "" : ", ", t.name);
  return names;
}

Result<void> check_foreign_namespace(const Namespace& ns) {
  const auto shown = [](std::string_view s) { return util::escape_untrusted(s.substr(0, 120)); };
  // An unknown target is named as such even when it also holds control
  // characters: it would otherwise create a namespace of that name and have
  // its modules validated against some other target.
  if (ns.backend == "spirv" && !is_known_spirv_target(ns.fingerprint))
    return fail(Category::corruption, "unknown SPIR-V target '{}' (known: {})", shown(ns.fingerprint),
                spirv_target_names());
  const auto& fields = ns.record.fields;
  if (fields.size() > k_max_record_fields)
    return fail(Category::corruption, "fingerprint record has {} fields; limit {}", fields.size(), k_max_record_fields);
  for (const auto& [name, value] : fields) {
    if (name.size() > k_max_decoded_string || value.size() > k_max_decoded_string)
      return fail(Category::corruption, "fingerprint record field '{}' is over {} bytes", shown(name),
                  k_max_decoded_string);
    if (!util::is_printable_utf8(name) || !util::is_printable_utf8(value))
      return fail(Category::corruption,
                  "fingerprint record field '{}' = '{}' holds control characters or invalid UTF-8", shown(name),
                  shown(value));
  }
  if (ns.backend == "spirv") {
    if (ns != spirv_namespace(ns.fingerprint))
      return fail(Category::corruption,
                  "fingerprint record does not match its short fingerprint '{}' (backend spirv expects exactly one "
                  "field target={})",
                  ns.fingerprint, ns.fingerprint);
    return {};
  }
  if (ns.backend == "vulkan") {
    auto derived = recorded_vulkan_id(ns.record);
    if (derived != ns.fingerprint)
      return fail(Category::corruption,
                  "short fingerprint '{}' is not derived from its fingerprint record (which gives '{}')",
                  shown(ns.fingerprint), derived);
    return {};
  }
  if (ns.backend == k_cuda_backend) return check_cuda_namespace(ns);
  return fail(Category::corruption, "unknown backend '{}' (known: spirv, vulkan, cuda)", shown(ns.backend));
}

Result<std::pair<std::string, std::string>> parse_namespace_name(std::string_view name) {
  auto slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == name.size())
    return fail(Category::invalid_argument,
                "namespace '{}' is not of the form BACKEND/FINGERPRINT (e.g. spirv/vulkan1.2)", name);
  return std::pair{std::string(name.substr(0, slash)), std::string(name.substr(slash + 1))};
}

std::string describe_differences(const std::vector<FieldDifference>& diffs, std::string_view ours_label,
                                 std::string_view theirs_label) {
  auto labelled = [](std::string_view label, const std::string& value) {
    return label.empty() ? value : fmt::format("{} {}", label, value);
  };
  std::string out;
  for (const auto& d : diffs)
    out += fmt::format("{}{}: {} ≠ {}", out.empty() ? "" : "; ", d.field, labelled(ours_label, d.ours),
                       labelled(theirs_label, d.theirs));
  return out;
}

}  // namespace kcache
