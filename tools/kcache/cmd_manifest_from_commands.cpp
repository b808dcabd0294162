// kcache manifest from-commands: a kcache.toml from a glslc / glslangValidator
// command log (lib/kcache/migrate).
#include "cli.hpp"

#include "kcache/launcher/launcher.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/migrate/migrate.hpp"
#include "kcache/report/adopt_report.hpp"
#include "kcache/util/file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace kcache::cli {
namespace {

struct FromCommandsArgs {
  std::string input;
  std::string output = "-";
  std::string root;
  std::string cwd;
  std::vector<std::string> set;
  std::vector<std::string> for_globs;
  bool from_store = false;
  StoreOptions store;
  bool no_variants = false;
  bool force = false;
  bool json = false;
};

struct LauncherCommands {
  std::vector<migrate::CommandLine> lines;
  /// The outputs whose last command the real program ran, by reason:
  /// "N outputs left out (REASON): OUTPUT, ...".
  std::vector<std::string> left_out;
};

/// The commands the launcher served from this store (its run log), the
/// last one of each output, in the order those ran. An output whose last
/// command the real program ran is left out (kcache did not build it, and
/// the manifest could not either), and listed with the reason.
Result<LauncherCommands> launcher_commands(const StoreOptions& store_options) {
  auto store = KCACHE_TRY(store_options.open(false));
  std::vector<store::Invocation> invocations;
  std::vector<bool> served;  // the module was written (not a failed compile)
  KCACHE_CHECK(store->read([&](store::Reader& reader) -> Result<void> {
    return reader.runs([&](store::RunRecord&& run) {
      if (run.invocation) {
        served.push_back(run.invocation->not_cacheable.empty() && run.kernels == 1 && run.failed == 0 &&
                         run.refused_write == 0);
        invocations.push_back(std::move(*run.invocation));
      }
      return true;
    });
  }));
  std::map<std::string, std::size_t> last_of_output;  // output → index of its last command
  for (std::size_t i = 0; i < invocations.size(); ++i) {
    const auto& inv = invocations[i];
    auto planned = launcher::plan(inv.tool, inv.args, inv.directory);
    if (const auto* p = std::get_if<launcher::Plan>(&planned))
      last_of_output[p->output ? p->output->string() : "-"] = i;
  }
  std::vector<std::size_t> order;
  std::map<std::string, std::vector<std::string>> left_out;  // reason → outputs
  for (const auto& [output, i] : last_of_output) {
    if (served[i]) order.push_back(i);
    else left_out[invocations[i].not_cacheable.empty() ? "not stored" : invocations[i].not_cacheable].push_back(output);
  }
  std::sort(order.begin(), order.end());
  LauncherCommands out;
  for (std::size_t i : order) {
    migrate::CommandLine line{{invocations[i].tool}, invocations[i].directory};
    line.words.insert(line.words.end(), invocations[i].args.begin(), invocations[i].args.end());
    out.lines.push_back(std::move(line));
  }
  for (const auto& [why, outputs] : left_out) {
    constexpr std::size_t k_shown = 5;
    std::string shown;
    for (std::size_t i = 0; i < outputs.size() && i < k_shown; ++i) shown += (i ? ", " : "") + outputs[i];
    if (outputs.size() > k_shown) shown += fmt::format(", and {} more", outputs.size() - k_shown);
    out.left_out.push_back(fmt::format("{} output{} left out, the real program built {} ({}): {}", outputs.size(),
                                       outputs.size() == 1 ? "" : "s", outputs.size() == 1 ? "it" : "them", why,
                                       shown));
  }
  if (out.lines.empty())
    return fail(Category::not_found,
                "the run log of {} holds no command served by `kcache glslc` or `kcache glslangValidator` — run the "
                "build through the launcher first",
                store_options.path());
  return out;
}

int run_from_commands(const FromCommandsArgs& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path here = fs::current_path(ec);
  if (ec) return report_error(Error{Category::io_error, "cannot read the current directory: " + ec.message()});
  migrate::Options options;
  options.variants = !args.no_variants;
  options.cwd = args.cwd.empty() ? here : fs::absolute(args.cwd).lexically_normal();
  // A manifest's paths start at its own folder, so a manifest written to a
  // file has that file's folder as its root; --root names it for stdout.
  if (args.output != "-") {
    options.root = fs::absolute(args.output).parent_path().lexically_normal();
    if (!args.root.empty() && fs::absolute(args.root).lexically_normal() != options.root)
      return report_error(Error{Category::invalid_argument,
                                fmt::format("--root {} is not the folder of -o {}: a manifest's paths start at its "
                                            "own folder — write it where its root is (-o {}/kcache.toml) or leave "
                                            "--root out",
                                            args.root, args.output, args.root)});
  } else {
    options.root = args.root.empty() ? here : fs::absolute(args.root).lexically_normal();
  }
  if (!args.for_globs.empty() && args.for_globs.size() != args.set.size())
    return report_error(Error{Category::invalid_argument,
                              fmt::format("{} --set and {} --for: give one --for after each --set (or none: every "
                                          "kernel)",
                                          args.set.size(), args.for_globs.size())});
  for (std::size_t i = 0; i < args.set.size(); ++i) {
    const auto eq = args.set[i].find('=');
    if (eq == std::string::npos)
      return report_error(Error{Category::invalid_argument, fmt::format("--set {}: expected KEY=VALUE", args.set[i])});
    options.settings.push_back(
        {args.for_globs.empty() ? "*" : args.for_globs[i], args.set[i].substr(0, eq), args.set[i].substr(eq + 1)});
  }
  if (args.output != "-" && !args.force && fs::exists(args.output, ec))
    return report_error(
        Error{Category::invalid_argument, fmt::format("{} exists — pass --force to replace it", args.output)});

  if (args.from_store == !args.input.empty())
    return report_error(Error{Category::invalid_argument,
                              "give a file of compile commands (or - for stdin), or --from-store — one of the two"});
  Result<migrate::Migration> result;
  if (args.from_store) {
    auto commands = launcher_commands(args.store);
    if (!commands) return report_error(commands.error());
    result = migrate::from_command_lines(commands->lines, fmt::format("the run log of {}", args.store.path()), options);
    if (result) result->notes.insert(result->notes.end(), commands->left_out.begin(), commands->left_out.end());
  } else {
    const bool from_stdin = args.input == "-";
    auto text = util::read_file(from_stdin ? fs::path("/dev/stdin") : fs::path(args.input),
                                {options.limits.max_input_bytes, !from_stdin});
    if (!text) return report_error(text.error());
    result = migrate::from_commands(*text, from_stdin ? "stdin" : args.input, options);
  }
  if (!result) return report_error(result.error());
  if (args.output == "-") {
    fmt::print("{}", result->manifest);
  } else {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(result->manifest.data());
    auto written = util::write_file_atomic(args.output, std::span<const std::uint8_t>(bytes, result->manifest.size()));
    if (!written) return report_error(written.error());
    // Checked where it lies: loaded as `kcache build` will load it.
    auto loaded = manifest::load_manifest(args.output);
    if (!loaded || loaded->kernels.size() != result->commands.size()) {
      fs::remove(args.output, ec);
      return report_error(Error{
          Category::invalid_argument,
          fmt::format("the manifest written to {} does not load as written (a kcache bug; please report it with the "
                      "input), so it was removed: {}",
                      args.output,
                      loaded
                          ? fmt::format("{} kernels for {} commands", loaded->kernels.size(), result->commands.size())
                          : loaded.error().message)});
    }
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
      "-fentry-point= -fauto-map-locations (compute) -w -Werror -MD -MF -MT -mfmt=;\n"
      "glslangValidator -V --target-env -S -e --entry-point --source-entrypoint -D -I -o -Od\n"
      "--aml --spirv-val -s -w -l. Options kcache cannot express (-g, -Os of glslangValidator,\n"
      "-fauto-bind-uniforms, OpenGL targets, a --target-spv unlike the target's, ...) and\n"
      "unknown ones are refused, naming the line. Kernels are named after their outputs;\n"
      "options every command shares go to [defaults]; commands that differ only in define\n"
      "values forming a Cartesian product become one kernel with [kernel.variants]\n"
      "(names base[KEY=value,...]; --json lists every output's kernel). A line may leave the\n"
      "program out when its options fit only one of the two. The manifest is expanded and\n"
      "checked against the commands before it is written, and loaded again from where it\n"
      "was written.\n"
      "Examples:\n"
      "  ./gen_shaders.sh --dry-run | kcache manifest from-commands - -o kcache.toml\n"
      "  kcache manifest from-commands build/compile_commands.json -o shaders/kcache.toml\n"
      "  kcache manifest from-commands log.txt -o kcache.toml --set validate=known --for '*_dot2*'\n"
      "  kcache manifest from-commands --from-store -o kcache.toml   (what `kcache glslc` compiled)");
  cmd->add_option("commands", args->input, "file of compile commands (text or JSON), or - for stdin");
  cmd->add_flag("--from-store", args->from_store,
                "read the commands `kcache glslc` / `kcache glslangValidator` served from the store's run log "
                "instead (the last command of each output)");
  args->store.add_to(*cmd);
  cmd->add_option("-o,--output", args->output, "manifest to write (atomically), or - for stdout")
      ->capture_default_str();
  cmd->add_option("--root", args->root,
                  "the manifest's folder when it goes to stdout: sources and include dirs are written "
                  "relative to it and must lie inside it (default: the current directory; with -o FILE "
                  "the root is FILE's folder). Outputs may be anywhere: they only name kernels");
  cmd->add_option("--set", args->set,
                  "KEY=VALUE: a manifest key the commands cannot express, set on the kernels of the "
                  "matching --for (or on every kernel); repeatable. Keys: validate (strict, known, off)");
  cmd->add_option("--for", args->for_globs,
                  "GLOB: the kernels (by [[kernel]] name, * and ?) the --set before it applies to; "
                  "repeatable, one per --set");
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
