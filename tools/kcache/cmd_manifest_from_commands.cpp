// kcache manifest from-commands: a kcache.toml from a glslc / glslangValidator
// command log (lib/kcache/migrate).
#include "cli.hpp"

#include "kcache/migrate/migrate.hpp"
#include "kcache/report/adopt_report.hpp"
#include "kcache/util/file.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace kcache::cli {
namespace {

struct FromCommandsArgs {
  std::string input;
  std::string output = "-";
  std::string root;
  std::string cwd;
  bool no_variants = false;
  bool force = false;
  bool json = false;
};

int run_from_commands(const FromCommandsArgs& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path here = fs::current_path(ec);
  if (ec) return report_error(Error{Category::io_error, "cannot read the current directory: " + ec.message()});
  migrate::Options options;
  options.variants = !args.no_variants;
  options.cwd = args.cwd.empty() ? here : fs::absolute(args.cwd).lexically_normal();
  if (!args.root.empty()) options.root = fs::absolute(args.root).lexically_normal();
  else if (args.output != "-") options.root = fs::absolute(args.output).parent_path().lexically_normal();
  else options.root = here;
  if (args.output != "-" && !args.force && fs::exists(args.output, ec))
    return report_error(
        Error{Category::invalid_argument, fmt::format("{} exists — pass --force to replace it", args.output)});

  const bool from_stdin = args.input == "-";
  auto text = util::read_file(from_stdin ? fs::path("/dev/stdin") : fs::path(args.input),
                              {options.limits.max_input_bytes, !from_stdin});
  if (!text) return report_error(text.error());
  auto result = migrate::from_commands(*text, from_stdin ? "stdin" : args.input, options);
  if (!result) return report_error(result.error());
  if (args.output == "-") {
    fmt::print("{}", result->manifest);
  } else {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(result->manifest.data());
    auto written = util::write_file_atomic(args.output, std::span<const std::uint8_t>(bytes, result->manifest.size()));
    if (!written) return report_error(written.error());
  }
  // The manifest owns stdout when it goes there; the report then goes to stderr.
  fmt::print(
      args.output == "-" ? stderr : stdout, "{}",
      args.json ? report::from_commands_json(*result, args.output) : report::from_commands_text(*result, args.output));
  return k_exit_ok;
}

}  // namespace

void register_manifest_from_commands(CLI::App& manifest, Action& action) {
  auto args = std::make_shared<FromCommandsArgs>();
  auto* cmd =
      manifest.add_subcommand("from-commands", "Write a kcache.toml from glslc / glslangValidator command lines.");
  cmd->description(
      "Read compile commands — one per line as a generator's log or --dry-run prints them\n"
      "(shell quoting; '#' comments), or a compile_commands.json array (\"command\" or\n"
      "\"arguments\", \"directory\") — and write a manifest that builds the same modules.\n"
      "Understood: glslc -D -I -O -Os -O0 -c -o -x --target-env= --target-spv= -fshader-stage=\n"
      "-fentry-point= -fauto-map-locations (compute) -w -Werror -MD -MF -mfmt=bin;\n"
      "glslangValidator -V --target-env -S -e --entry-point --source-entrypoint -D -I -o -Od\n"
      "--aml --spirv-val -s -w -l. Options kcache cannot express (-g, -Os of glslangValidator,\n"
      "-fauto-bind-uniforms, OpenGL targets, a --target-spv unlike the target's, ...) and\n"
      "unknown ones are refused, naming the line. Kernels are named after their outputs;\n"
      "options every command shares go to [defaults]; commands that differ only in define\n"
      "values forming a Cartesian product become one kernel with [kernel.variants]\n"
      "(names base[KEY=value,...]; --json lists every output's kernel). The manifest is\n"
      "expanded and checked against the commands before it is written.\n"
      "Examples:\n"
      "  ./gen_shaders.sh --dry-run | kcache manifest from-commands - -o kcache.toml\n"
      "  kcache manifest from-commands build/compile_commands.json -o shaders/kcache.toml");
  cmd->add_option("commands", args->input, "file of compile commands (text or JSON), or - for stdin")->required();
  cmd->add_option("-o,--output", args->output, "manifest to write (atomically), or - for stdout")
      ->capture_default_str();
  cmd->add_option("--root", args->root,
                  "the manifest's folder: paths are written relative to it and must lie inside it "
                  "(default: the folder of -o, or the current directory)");
  cmd->add_option("--cwd", args->cwd,
                  "where the commands ran: their relative paths start here unless a JSON entry gives "
                  "\"directory\" (default: the current directory)");
  cmd->add_flag("--no-variants", args->no_variants, "one [[kernel]] per command, each named after its output");
  cmd->add_flag("--force", args->force, "replace the -o file if it exists");
  cmd->add_flag("--json", args->json,
                "print the summary as JSON (schema kcache.from-commands/1, with every output's kernel name)");
  cmd->callback([args, &action] { action = [args] { return run_from_commands(*args); }; });
}

}  // namespace kcache::cli
