#include "kcache/freshness/freshness.hpp"

#include "kcache/util/hash.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kcache::freshness {

std::string_view freshness_name(Freshness f) {
  switch (f) {
    case Freshness::fresh: return "fresh";
    case Freshness::stale: return "stale";
    case Freshness::missing: return "missing";
  }
  return "?";
}

std::vector<Field> toolchain_part(const std::vector<Field>& ir_fields) {
  std::vector<Field> out;
  for (const auto& f : ir_fields)
    // expanded_source (GLSL) and inputs (CUDA) are content, checked through
    // the inputs; lowered_name (CUDA) is a recorded product, not an input.
    if (f.first != "expanded_source" && f.first != "inputs" && f.first != "lowered_name") out.push_back(f);
  return out;
}

Hash128 direct_key(const definition::HashedFields& id, const std::vector<Field>& toolchain) {
  util::Hasher h;
  h.field("direct", "kcache direct key v1");
  h.field("id", id.hash);
  h.field("key_schema", definition::k_key_schema);
  for (const auto& [name, value] : toolchain) h.field(name, value);
  return h.finish();
}

Recorded recorded(const Entry& e) { return {e.key, true, e.id_fields, e.ir_fields, e.inputs}; }
Recorded recorded(const EntryHead& h) { return {h.key, true, h.id_fields, h.ir_fields, h.inputs}; }
Recorded recorded(const Failure& f) { return {f.key, f.ir_known, f.id_fields, f.ir_fields, f.inputs}; }

Assessment check_direct(const definition::HashedFields& id, const std::vector<Field>& toolchain, const Recorded& stored,
                        definition::FileCache& files) {
  Assessment a;
  a.state = Freshness::fresh;
  if (stored.key.id != id.hash) a.changes = definition::diff_fields(stored.id_fields, id.fields);
  std::vector<Field> current_toolchain{{"key_schema", std::string(definition::k_key_schema)}};
  current_toolchain.insert(current_toolchain.end(), toolchain.begin(), toolchain.end());
  for (auto& c : definition::diff_fields(toolchain_part(stored.ir_fields), current_toolchain))
    a.changes.push_back(std::move(c));
  for (auto& c : input_changes(stored.inputs, files)) a.changes.push_back(std::move(c));
  if (stored.key.id != id.hash && a.changes.empty()) a.changes.push_back({"id", stored.key.id.hex(), id.hash.hex()});
  if (!a.changes.empty()) a.state = Freshness::stale;
  return a;
}

std::vector<Change> input_changes(const std::vector<InputFile>& inputs, definition::FileCache& files) {
  std::vector<Change> out;
  for (const auto& input : inputs) {
    auto file = files.get(input.path);
    if (input.absent()) {
      // Still nothing there is the one unchanged state; a file, or anything
      // the project gate refuses, would now be found (or refused) first.
      if (file) out.push_back({"input:" + input.path, std::string(k_absent), (*file)->hash.hex()});
      else if (file.error().category != Category::not_found)
        out.push_back({"input:" + input.path, std::string(k_absent), std::string(k_missing)});
    } else if (!file) {
      out.push_back({"input:" + input.path, input.hash.hex(), std::string(k_missing)});
    } else if ((*file)->hash != input.hash) {
      out.push_back({"input:" + input.path, input.hash.hex(), (*file)->hash.hex()});
    }
  }
  return out;
}

std::string describe_changes(const std::vector<Change>& changes, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < changes.size() && i < max; ++i) {
    const auto& c = changes[i];
    if (!out.empty()) out += "; ";
    if (c.name.starts_with("input:") && c.old_value == k_absent)
      out += fmt::format(
          "include candidate {} now exists (nothing was there when it was stored, so the include "
          "search now finds it first)",
          c.name.substr(6));
    else if (c.name.starts_with("input:"))
      out += c.new_value == k_missing
                 ? fmt::format("{} removed", c.name)
                 : fmt::format("{} changed ({}… → {}…)", c.name, c.old_value.substr(0, 8), c.new_value.substr(0, 8));
    else out += fmt::format("{} {} → {}", c.name, c.old_value, c.new_value);
  }
  if (changes.size() > max) out += fmt::format("; and {} more", changes.size() - max);
  return out;
}

}  // namespace kcache::freshness
