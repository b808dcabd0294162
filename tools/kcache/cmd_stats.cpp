// kcache stats: hit rate and time per phase over the store's run log, the
// store's size against its max_size setting; --zero resets the counters.
#include "cli.hpp"

#include "kcache/maintain/gc.hpp"
#include "kcache/report/lifecycle.hpp"
#include "kcache/settings/settings.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kcache::cli {
namespace {

struct StatsArgs {
  StoreOptions store;
  std::size_t last = 0;
  bool json = false;
  bool zero = false;
};

/// `stats --zero`: the run log is kept (it is the store's history, and a
/// concurrent build appends to it); the store's `stats_zeroed` setting says
/// from when on runs count. At least the newest run's time, so a run stamped
/// later than this machine's clock is left out too.
int run_zero(const StatsArgs& args, store::Store& store) {
  auto totals = maintain::run_totals(store, 0);
  if (!totals) return report_error(totals.error());
  const auto path = settings::store_settings_path(args.store.path());
  auto current = settings::read_settings(path);
  if (!current) return report_error(current.error());
  const std::uint64_t zeroed = std::max(clock().now(), totals->last);
  settings::set_setting(*current, "stats_zeroed", std::to_string(zeroed));
  if (auto written = settings::write_settings(path, *current); !written) return report_error(written.error());
  fmt::print("statistics zeroed at {} ({} runs stay in the log)\n", util::iso_time(zeroed), totals->logged);
  return k_exit_ok;
}

int run_stats(const StatsArgs& args) {
  if (args.zero && args.store.read_only)
    return report_error({Category::read_only, "--zero writes the store's settings; drop --read-only"});
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  if (args.zero) return run_zero(args, **store);
  auto zeroed = setting("stats_zeroed", "", args.store.path());
  if (!zeroed) return report_error(zeroed.error());
  auto totals = maintain::run_totals(**store, args.last, zeroed->value.empty() ? 0 : std::stoull(zeroed->value));
  if (!totals) return report_error(totals.error());
  auto bytes = maintain::stored_bytes(**store, toolchain());
  if (!bytes) return report_error(bytes.error());
  totals->stored_bytes = *bytes;
  auto limit = setting("max_size", "", args.store.path());
  if (!limit) return report_error(limit.error());
  if (limit->source != settings::Source::none) {
    totals->limit = *util::parse_size(limit->value);  // checked by setting()
    totals->limit_source = settings::source_name(limit->source);
  }
  fmt::print("{}", args.json ? report::stats_json(*totals) : report::stats_text(*totals));
  return k_exit_ok;
}

}  // namespace

void register_stats(CLI::App& app, Action& action) {
  auto args = std::make_shared<StatsArgs>();
  auto* cmd = app.add_subcommand("stats", "Size against the limit, hit rate, compiles and time over recent builds.");
  cmd->description(
      "The store's size (its entries' bytes) against its max_size setting (`kcache config`),\n"
      "then totals over the store's run log: every `kcache build` appends one record (kernels,\n"
      "hits, compiles, failures, wall time, bytes written, time per phase); the log keeps the\n"
      "last 1000 runs. --zero resets the counters: later stats count only the runs after it\n"
      "(the log itself is kept). Otherwise reads only: works on a read-only store.\n"
      "\n"
      "Examples:\n"
      "  kcache stats\n"
      "  kcache stats --last 20 --json\n"
      "  kcache stats --zero");
  args->store.add_to(*cmd);
  auto* last = cmd->add_option("--last", args->last, "only the newest N runs (default: the whole log)")
                   ->check(count_validator("runs"));
  auto* json = cmd->add_flag("--json", args->json, "print JSON on stdout");
  cmd->add_flag("--zero", args->zero, "reset the counters (the store's stats_zeroed setting); print nothing else")
      ->excludes(last)
      ->excludes(json);
  cmd->callback([args, &action] { action = [args] { return run_stats(*args); }; });
}

}  // namespace kcache::cli
