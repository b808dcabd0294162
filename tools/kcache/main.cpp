// kcache: prebuild GPU kernels offline and ship them. main() only parses and
// forwards to the subcommand; it is the one place that catches exceptions.
#include "allocator.hpp"
#include "cli.hpp"

#include "kcache/device/device.hpp"
#include "kcache/launcher/launcher.hpp"
#include "kcache/report/report.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

/// A command line CLI11 refused, as every other kcache error: "kcache:
/// error: ..." and which --help to read. A word that names no subcommand
/// where one is needed is named with the nearest known one.
int report_usage_error(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  using namespace kcache::cli;
  std::string message = e.what();
  const CLI::App* level = &app;
  std::string help = "kcache";
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.starts_with('-')) break;  // options follow: the level is known
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : level->get_subcommands({}))
      if (sub->get_name() == word) next = sub;
    if (next) {
      level = next;
      help += " " + next->get_name();
      continue;
    }
    // A positional (of a leaf command, or `kcache manifest FILE`) unless the
    // error is about this word or about a missing subcommand.
    if (level->get_subcommands({}).empty() ||
        !(message.find(word) != std::string::npos || message.starts_with("A subcommand is required")))
      break;
    std::string nearest;
    std::size_t best = 3;  // at most two edits away: a typo, not another word
    for (const CLI::App* sub : level->get_subcommands({})) {
      if (sub->get_group().empty()) continue;  // hidden
      const std::size_t d = kcache::util::edit_distance(word, sub->get_name());
      if (d < best) best = d, nearest = sub->get_name();
    }
    message = fmt::format("'{}' is not a{} command", kcache::util::shown_untrusted(word, 60),
                          level == &app ? " kcache" : fmt::format(" `{}`", help));
    if (!nearest.empty()) message += fmt::format(" — did you mean '{}'?", nearest);
    break;
  }
  while (!message.empty() && message.back() == '\n') message.pop_back();
  return report_error(kcache::Error{kcache::Category::invalid_argument,
                                    fmt::format("{} (`{} --help` shows what it takes)", message, help)});
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kcache::cli;
  tune_allocator();
  // The library reads no environment: the CLI names the loader its users
  // chose (tests name a missing one to simulate a machine without Vulkan).
  if (const char* loader = std::getenv("KCACHE_VULKAN_LOADER")) kcache::device::use_vulkan_loader(loader);
  // The launcher first: a link named glslc, or `kcache glslc ARGS`, takes
  // the tool's options, which CLI11 must not see (and a compile command
  // should not pay for building the whole command line).
  if (auto tool = kcache::launcher::tool_named(argv[0]))
    return run_launcher(*tool, std::vector<std::string>(argv + 1, argv + argc));
  if (argc >= 2 && (std::string_view(argv[1]) == "glslc" || std::string_view(argv[1]) == "glslangValidator"))
    return run_launcher(argv[1], std::vector<std::string>(argv + 2, argv + argc));
  CLI::App app{
      "kcache — prebuild GPU kernels offline and ship them.\n\n"
      "A CI step runs `kcache build` over a kernel manifest (kcache.toml): each kernel is\n"
      "compiled in-process (glslang → spirv-opt → spirv-val) and stored in an LMDB store\n"
      "keyed by what it is and what it is made of, so an unchanged kernel is never\n"
      "compiled twice. `kcache inspect` shows what a store holds and why an entry is stale.",
      "kcache"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", [] { return version_text(); }, "print kcache's and its libraries' versions");
  app.footer("Run `kcache SUBCOMMAND --help` for a subcommand's options. Exit codes: see README.");
  Action action;
  register_build(app, action);
  register_inspect(app, action);
  register_get(app, action);
  register_gc(app, action);
  register_compact(app, action);
  register_stats(app, action);
  register_devices(app, action);
  register_verify(app, action);
  register_export(app, action);
  register_deploy(app, action);
  register_import(app, action);
  register_merge(app, action);
  register_push(app, action);
  register_pull(app, action);
  register_keygen(app, action);
  register_manifest(app, action);
  register_emit(app, action);
  register_remote(app, action);
  register_launcher(app, action);
  register_config(app, action);
  register_pipeline_worker(app, action);
  register_complete(app, action);
  bound_thread_counts(app);
  // Set after the subcommands are registered: they keep the short footer.
  app.footer(top_level_footer());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return report_usage_error(app, e, argc, argv);
  }
  try {
    return action ? action() : k_exit_usage;
  } catch (const std::exception& e) {
    // what() may quote bytes of a stored name (a library's message).
    fmt::print(stderr, "kcache: internal error: {}\n", kcache::report::terminal_text(e.what()));
    return k_exit_internal;
  }
}
