// kcache stats: hit rate and time per phase over the store's run log.
#include "cli.hpp"

#include "kcache/report/lifecycle.hpp"

#include <fmt/format.h>

namespace kcache::cli {
namespace {

struct StatsArgs {
  StoreOptions store;
  std::size_t last = 0;
  bool json = false;
};

int run_stats(const StatsArgs& args) {
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  auto totals = maintain::run_totals(**store, args.last);
  if (!totals) return report_error(totals.error());
  fmt::print("{}", args.json ? report::stats_json(*totals) : report::stats_text(*totals));
  return k_exit_ok;
}

}  // namespace

void register_stats(CLI::App& app, Action& action) {
  auto args = std::make_shared<StatsArgs>();
  auto* cmd = app.add_subcommand("stats", "Hit rate, compiles, failures and time per phase over recent builds.");
  cmd->description(
      "Totals over the store's run log: every `kcache build` appends one record (kernels, hits,\n"
      "compiles, failures, wall time, bytes written, time per phase); the log keeps the last\n"
      "1000 runs. Reads only: works on a read-only store.\n"
      "\n"
      "Examples:\n"
      "  kcache stats\n"
      "  kcache stats --last 20 --json");
  args->store.add_to(*cmd);
  cmd->add_option("--last", args->last, "only the newest N runs (default: the whole log)")
      ->check(count_validator("runs"));
  cmd->add_flag("--json", args->json, "print JSON on stdout");
  cmd->callback([args, &action] { action = [args] { return run_stats(*args); }; });
}

}  // namespace kcache::cli
