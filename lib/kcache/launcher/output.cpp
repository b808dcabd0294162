// What the tools write besides a binary module (launcher.hpp).
#include "kcache/launcher/launcher.hpp"

#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <cstring>
#include <regex>
#include <unordered_set>

namespace kcache::launcher {
namespace {

namespace fs = std::filesystem;

/// A file the compile read (`rel`, relative to `root`) as the tool names
/// it: the source as given; another file in the style the source was given
/// (relative to the working folder, or absolute). nullopt for the source.
std::optional<std::string> shown_input(const Plan& plan, const fs::path& root, std::string_view rel) {
  const fs::path abs = (root / rel).lexically_normal();
  if (abs == plan.source) return std::nullopt;
  const bool relative = !fs::path(plan.command.source_as_given).is_absolute();
  return relative ? abs.lexically_relative(plan.directory).generic_string() : abs.generic_string();
}

/// The files a depfile lists after the source, as glslc lists them: paths
/// in the style the source was given (shown_input), in the order of an
/// unordered set of the inclusion order — glslc keeps its requested files
/// in one (libstdc++'s, as kcache's), so the same files come out in the
/// same order.
std::vector<std::string> depfile_inputs(const Plan& plan, const fs::path& root, const std::vector<InputFile>& inputs) {
  std::unordered_set<std::string> includes;
  for (const auto& input : inputs)
    if (input.absent()) continue;  // glslc lists files it read, not places it looked
    else if (auto shown = shown_input(plan, root, input.path)) includes.insert(std::move(*shown));
  std::vector<std::string> out{plan.command.source_as_given};
  for (const auto& s : includes) out.push_back(s);
  return out;
}

/// Outputs as the tools write them: replaced atomically, not forced to disk
/// (a build remakes what a power loss costs it).
Result<void> write_text(const fs::path& path, std::string_view text) {
  return util::write_file_atomic(
      path, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()), 0666,
      util::Flush::none);
}

}  // namespace

std::string format_module(std::span<const std::uint8_t> module, migrate::OutputFormat format) {
  if (format == migrate::OutputFormat::bin) return std::string(module.begin(), module.end());
  std::string out = format == migrate::OutputFormat::c ? "{" : "";
  const std::size_t words = module.size() / 4;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint32_t word = 0;
    std::memcpy(&word, module.data() + 4 * i, 4);  // SPIR-V in the host's order, as glslc reads it
    out += fmt::format("0x{:08x}", word);
    if (i + 1 < words) out += (i % 4 == 3) ? ",\n" : ",";
  }
  out += format == migrate::OutputFormat::c ? "}\n" : "\n";
  return out;
}

std::string depfile_text(const std::vector<std::string>& targets, const std::vector<std::string>& inputs) {
  return fmt::format("{}: {}\n", fmt::join(targets, " "), fmt::join(inputs, " "));
}

ToolMessages tool_messages(const Plan& plan, const fs::path& root, std::string_view diagnostics) {
  ToolMessages out;
  const bool glslc = plan.command.tool == "glslc";
  if (!glslc) out.out = plan.command.source_as_given + "\n";
  if (plan.command.suppress_warnings || diagnostics.empty()) return out;
  static const std::regex placed(R"(^(.*?):([0-9]+): warning: (.*)$)");
  std::size_t warnings = 0;
  std::string& text = glslc ? out.err : out.out;
  for (std::string_view text_line : util::split_lines(diagnostics)) {
    std::string line(text_line);
    if (!util::is_printable_utf8(line)) line = util::escape_untrusted(line);
    std::smatch m;
    if (std::regex_match(line, m, placed)) {
      ++warnings;
      const std::string file = shown_input(plan, root, m[1].str()).value_or(plan.command.source_as_given);
      line = glslc ? fmt::format("{}:{}: warning: {}", file, m[2].str(), m[3].str())
                   : fmt::format("WARNING: {}:{}: {}", file, m[2].str(), m[3].str());
    } else if (line.starts_with("warning: ")) {
      ++warnings;
      if (!glslc) line = "WARNING: " + line.substr(9);
    }
    text += line + "\n";
  }
  if (glslc && warnings > 0) text += fmt::format("{} warning{} generated.\n", warnings, warnings == 1 ? "" : "s");
  if (!glslc) text += "\n";
  return out;
}

Result<ToolMessages> deliver_hit(const Plan& plan, const Hit& hit) {
  KCACHE_CHECK(write_outputs(plan, hit.root, hit.entry.payload, hit.entry.inputs));
  ToolMessages messages = tool_messages(plan, hit.root, hit.entry.diagnostics);
  if (!plan.output) messages.out += format_module(hit.entry.payload, plan.command.format);
  return messages;
}

Result<void> write_outputs(const Plan& plan, const fs::path& root, std::span<const std::uint8_t> module,
                           const std::vector<InputFile>& inputs) {
  if (plan.output) {
    if (plan.command.format == migrate::OutputFormat::bin)
      KCACHE_CHECK(util::write_file_atomic(*plan.output, module, 0666, util::Flush::none));
    else KCACHE_CHECK(write_text(*plan.output, format_module(module, plan.command.format)));
  }
  if (plan.depfile) {
    std::vector<std::string> targets = plan.command.dep_targets;
    if (targets.empty()) targets.push_back(plan.output_as_given);
    KCACHE_CHECK(write_text(*plan.depfile, depfile_text(targets, depfile_inputs(plan, root, inputs))));
  }
  return {};
}

}  // namespace kcache::launcher
