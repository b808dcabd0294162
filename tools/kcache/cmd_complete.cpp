// kcache __complete kernels|namespaces [--store DIR]: the hidden subcommand
// the bash and zsh completions run to offer the names a store holds (one a
// line, sorted, each once). Quiet by design: a missing or unreadable store
// completes nothing and exits 0, so a TAB never prints an error into the
// command line being typed.
#include "cli.hpp"

#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <set>

namespace kcache::cli {
namespace {

struct CompleteArgs {
  std::string what;
  StoreOptions store;
};

int run_complete(const CompleteArgs& args) {
  auto store = args.store.open(false);
  if (!store) return k_exit_ok;
  std::set<std::string> names;
  constexpr std::size_t k_max_names = 10000;  // a TAB must stay quick on a huge store
  auto read = (*store)->read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespace_records())) {
      const std::string ns = info.ns.name();
      if (args.what == "namespaces") {
        names.insert(ns);
        continue;
      }
      KCACHE_CHECK(reader.scan(ns, [&](Entry&& e) {
        names.insert(e.kernel);
        return names.size() < k_max_names;
      }));
    }
    return {};
  });
  if (!read) return k_exit_ok;
  // Names from a store are untrusted: only printable ones, without spaces
  // (a completion word list splits on them).
  for (const auto& n : names)
    if (util::is_printable_utf8(n) && n.find_first_of(" \t") == std::string::npos) fmt::print("{}\n", n);
  return k_exit_ok;
}

}  // namespace

void register_complete(CLI::App& app, Action& action) {
  auto args = std::make_shared<CompleteArgs>();
  auto* cmd = app.add_subcommand("__complete", "internal: names a store holds, for shell completion");
  cmd->group("");  // hidden
  cmd->add_option("what", args->what, "kernels or namespaces")
      ->required()
      ->check(CLI::IsMember({"kernels", "namespaces"}));
  args->store.add_to(*cmd);
  cmd->callback([args, &action] { action = [args] { return run_complete(*args); }; });
}

}  // namespace kcache::cli
