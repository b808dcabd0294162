// Reports of adoption (contracts in adopt_report.hpp).
#include "kcache/report/adopt_report.hpp"

#include "kcache/report/render_internal.hpp"
#include "kcache/report/report.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kcache::report {

std::string from_commands_text(const migrate::Migration& m, const std::string& written) {
  std::string out = fmt::format(
      "kcache: {} command{} -> {} kernel{} in {} [[kernel]] table{} ({} with variants), "
      "written to {}\n",
      m.commands.size(), m.commands.size() == 1 ? "" : "s", m.outputs.size(), m.outputs.size() == 1 ? "" : "s",
      m.kernel_tables, m.kernel_tables == 1 ? "" : "s", m.variant_tables, written == "-" ? "stdout" : written);
  for (const auto& note : m.notes) out += fmt::format("  note: {}\n", note);
  return terminal_text(out);
}

std::string from_commands_json(const migrate::Migration& m, const std::string& written) {
  nlohmann::ordered_json j;
  j["schema"] = "kcache.from-commands/1";
  j["written"] = written;
  j["commands"] = m.commands.size();
  j["kernel_tables"] = m.kernel_tables;
  j["variant_tables"] = m.variant_tables;
  j["notes"] = m.notes;
  auto outputs = nlohmann::ordered_json::array();
  for (const auto& [kernel, output] : m.outputs) outputs.push_back({{"output", output}, {"kernel", kernel}});
  j["outputs"] = std::move(outputs);
  return internal::json_text(j);
}

std::string emit_text(const embed::Sources& s, const std::string& dir) {
  return terminal_text(fmt::format("kcache: emitted {} kernels of {} ({}) to {}/{} and {}/{}\n", s.kernels, s.ns,
                                   util::human_bytes(s.spirv_bytes), dir, s.header_name, dir, s.source_name));
}

std::string emit_json(const embed::Sources& s, const std::string& dir) {
  nlohmann::ordered_json j;
  j["schema"] = "kcache.emit/1";
  j["namespace"] = s.ns;
  j["kernels"] = s.kernels;
  j["spirv_bytes"] = s.spirv_bytes;
  j["header"] = dir + "/" + s.header_name;
  j["source"] = dir + "/" + s.source_name;
  return internal::json_text(j);
}

}  // namespace kcache::report
