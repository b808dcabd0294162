// kcache get: write a stored module to a file or stdout.
#include "cli.hpp"

#include "kcache/util/file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace kcache::cli {
namespace {

struct GetArgs {
  std::string kernel;
  StoreOptions store;
  std::string output;
  std::string ns;
};

int run_get(const GetArgs& args) {
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  std::vector<Entry> found;
  std::vector<std::string> found_in;  ///< each found entry's namespace
  auto read = (*store)->read([&](store::Reader& reader) -> Result<void> {
    auto namespaces = KCACHE_TRY(reader.namespace_records());
    for (const auto& info : namespaces) {
      if (!args.ns.empty() && info.ns.name() != args.ns) continue;
      auto e = KCACHE_TRY(reader.get(info.ns.name(), args.kernel));
      if (e) found.push_back(std::move(*e)), found_in.push_back(info.ns.name());
    }
    return {};
  });
  if (!read) return report_error(read.error());
  if (found.empty())
    return report_error({Category::not_found,
                         fmt::format("no kernel '{}' in store {}{} — `kcache inspect` lists "
                                     "what it holds",
                                     args.kernel, args.store.path(), args.ns.empty() ? "" : " namespace " + args.ns)});
  if (found.size() > 1 && args.ns.empty()) {
    // The `namespace` setting chooses among several (cli::setting).
    auto chosen = setting("namespace", "", args.store.path());
    if (!chosen) return report_error(chosen.error());
    for (std::size_t i = 0; i < found.size() && chosen->source != settings::Source::none; ++i)
      if (found_in[i] == chosen->value) {
        found = {std::move(found[i])};
        break;
      }
  }
  if (found.size() > 1)
    return report_error(
        {Category::invalid_argument,
         fmt::format(
             "kernel '{}' is in {} namespaces; choose one with --namespace (or the namespace setting, `kcache config`)",
             args.kernel, found.size())});
  const auto& payload = found.front().payload;
  if (args.output.empty() || args.output == "-") {
    if (args.output.empty() && ::isatty(STDOUT_FILENO))
      return report_error(
          {Category::invalid_argument, "refusing to write a binary module to a terminal; use -o FILE or -o -"});
    if (std::fwrite(payload.data(), 1, payload.size(), stdout) != payload.size() || std::fflush(stdout) != 0)
      return report_error({Category::io_error, "cannot write to stdout"});
    return k_exit_ok;
  }
  auto written = util::write_file_atomic(args.output, payload);
  if (!written) return report_error(written.error());
  return k_exit_ok;
}

}  // namespace

void register_get(CLI::App& app, Action& action) {
  auto args = std::make_shared<GetArgs>();
  auto* cmd = app.add_subcommand("get", "Write a stored module (SPIR-V or pipeline-cache blob) to a file or stdout.");
  cmd->add_option("kernel", args->kernel, "kernel name, e.g. 'matmul[T=float,TILE=16]'")->required();
  args->store.add_to(*cmd);
  cmd->add_option("-o,--output", args->output, "output file, or - for stdout (default: stdout unless a terminal)");
  cmd->add_option("--namespace", args->ns,
                  "namespace when the kernel is in several, e.g. spirv/vulkan1.2 (default: the\n"
                  "namespace setting, `kcache config`)");
  cmd->callback([args, &action] { action = [args] { return run_get(*args); }; });
}

}  // namespace kcache::cli
