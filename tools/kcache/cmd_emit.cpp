// kcache emit: a store's SPIR-V namespace as C or C++ sources to compile into
// a program (lib/kcache/embed).
#include "cli.hpp"

#include "kcache/embed/embed.hpp"
#include "kcache/report/adopt_report.hpp"

#include <fmt/format.h>

namespace kcache::cli {
namespace {

struct EmitArgs {
  StoreOptions store;
  std::string lang = "cpp";
  std::string ns;
  std::string name = "kcache_kernels";
  std::string dir;
  bool json = false;
};

int run_emit(const EmitArgs& args) {
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  embed::EmitOptions options;
  options.language = args.lang == "c" ? embed::Language::c : embed::Language::cpp;
  options.ns = args.ns;
  options.name = args.name;
  auto sources = embed::emit_sources(**store, options);
  if (!sources) return report_error(sources.error());
  if (auto written = embed::write_sources(*sources, args.dir); !written) return report_error(written.error());
  fmt::print("{}", args.json ? report::emit_json(*sources, args.dir) : report::emit_text(*sources, args.dir));
  return k_exit_ok;
}

}  // namespace

void register_emit(CLI::App& app, Action& action) {
  auto args = std::make_shared<EmitArgs>();
  auto* cmd =
      app.add_subcommand("emit", "Write a store namespace's kernels as C/C++ sources to compile into a program.");
  cmd->description(
      "Write one SPIR-V namespace of the store as a header + source pair (NAME.hpp/.cpp with\n"
      "--lang cpp, NAME.h/.c with --lang c): per kernel its SPIR-V as a uint32_t array, name,\n"
      "key (which build it is), stage, entry point and spec constants, in one table sorted by\n"
      "name (types: kcache/runtime/kcache_embedded.h), with a find-by-name function. The files\n"
      "are byte-identical for the same store contents. Open the table with\n"
      "kcache_store_open_embedded() to look kernels up exactly as in a store, with no store\n"
      "at run time. CMake: kcache_add_kernels(... EMIT cpp).\n"
      "Examples:\n"
      "  kcache emit --namespace spirv/vulkan1.2 --lang cpp --name app_kernels -o generated\n"
      "  kcache emit --lang c -o src/kernels");
  args->store.add_to(*cmd);
  cmd->add_option("--lang", args->lang, "cpp or c")->check(CLI::IsMember({"cpp", "c"}))->capture_default_str();
  cmd->add_option("--namespace", args->ns,
                  "the SPIR-V namespace, e.g. spirv/vulkan1.2 (default: the store's only one)");
  cmd->add_option("--name", args->name, "file base name and symbol prefix (C) / namespace (C++); a C identifier")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->dir, "folder to write the two files into (created if missing)")->required();
  cmd->add_flag("--json", args->json, "print the result as JSON (schema kcache.emit/1)");
  cmd->callback([args, &action] { action = [args] { return run_emit(*args); }; });
}

}  // namespace kcache::cli
