// Planning a command (launcher.hpp): migrate's grammar, the tools' default
// output names, and the project root keys are relative to.
#include "kcache/launcher/launcher.hpp"

#include "kcache/core/entry.hpp"
#include "kcache/util/hash.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kcache::launcher {
namespace {

namespace fs = std::filesystem;

/// An error message cut to its first clause: "glslc -g: kcache cannot
/// express it — kcache does not ..." → "glslc -g: kcache cannot express it".
std::string short_reason(std::string message) {
  if (auto dash = message.find(" — "); dash != std::string::npos) message.resize(dash);
  return message;
}

/// The deepest folder holding both.
fs::path common_ancestor(const fs::path& a, const fs::path& b) {
  fs::path out;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end() && ib != b.end() && *ia == *ib; ++ia, ++ib) out /= *ia;
  return out.empty() ? fs::path("/") : out;
}

bool is_under(const fs::path& path, const fs::path& folder) {
  auto rel = path.lexically_relative(folder);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

std::optional<std::string> tool_named(std::string_view program) {
  const std::string name = fs::path(program).filename().string();
  if (name == "glslc") return "glslc";
  if (name == "glslangValidator" || name == "glslang") return "glslangValidator";
  return std::nullopt;
}

std::variant<Plan, NotCacheable> plan(std::string_view tool, const std::vector<std::string>& args,
                                      const fs::path& directory) {
  std::vector<std::string> words{std::string(tool)};
  words.insert(words.end(), args.begin(), args.end());
  migrate::Options options;
  options.root = "/";
  options.cwd = directory;
  options.require_output = false;
  options.sources_must_exist = false;
  auto command = migrate::parse_command(words, directory, options);
  if (!command) return NotCacheable{short_reason(command.error().message)};
  Plan p;
  p.directory = directory;
  p.source = (fs::path("/") / command->source).lexically_normal();
  for (const auto& dir : command->include_dirs) p.include_dirs.push_back((fs::path("/") / dir).lexically_normal());
  std::error_code ec;
  if (!fs::is_regular_file(p.source, ec))
    return NotCacheable{fmt::format("source '{}' is not a regular file", command->source_as_given)};
  // "-o -" is standard output to glslc; glslangValidator writes a file
  // named "-" (and its own messages to standard output).
  if (command->output_as_given == "-" && command->tool == "glslc") {
    p.output_as_given = "-";
  } else {
    // The tools' names when -o is missing: glslc -c writes SOURCE_NAME.spv
    // in the working folder, glslc without -c a.spv; glslangValidator names
    // the file after the stage, which is not worth imitating.
    if (command->output.empty()) {
      if (command->tool != "glslc") return NotCacheable{"glslangValidator without -o"};
      p.output_as_given = command->compile_only ? fs::path(command->source_as_given).filename().string() + ".spv"
                                                : std::string("a.spv");
    } else {
      p.output_as_given = command->output_as_given;
    }
    p.output = (directory / p.output_as_given).lexically_normal();
  }
  if (command->write_depfile) {
    if (!p.output) return NotCacheable{"-MD with the module on standard output"};
    p.depfile = command->depfile.empty() ? fs::path(p.output->string() + ".d")
                                         : (fs::path("/") / command->depfile).lexically_normal();
  }
  p.command = std::move(*command);
  return p;
}

fs::path keys_root(const Plan& plan, const std::optional<fs::path>& base_dir) {
  fs::path root;
  if (base_dir) {
    root = base_dir->lexically_normal();
  } else {
    std::error_code ec;
    for (fs::path dir = plan.source.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      if (fs::exists(dir / ".git", ec)) {
        root = dir;
        break;
      }
      if (dir == dir.parent_path()) break;
    }
    if (root.empty()) root = plan.source.parent_path();
  }
  if (!is_under(plan.source, root)) root = common_ancestor(root, plan.source.parent_path());
  for (const auto& dir : plan.include_dirs)
    if (dir != root && !is_under(dir, root)) root = common_ancestor(root, dir);
  return root;
}

}  // namespace kcache::launcher
