// kcache gc: remove entries by rule; kcache compact: give freed space back.
#include "cli.hpp"

#include "kcache/maintain/gc.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/report/lifecycle.hpp"
#include "kcache/store/gc.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

namespace kcache::cli {
namespace {

struct GcArgs {
  StoreOptions store;
  std::string manifest;
  bool stale = false;
  bool orphans = false;
  std::string older_than;
  std::string unused_for;
  std::string max_size;
  std::string ns;
  bool include_fresh = false;
  bool dry_run = false;
  bool json = false;
};

int run_gc(const GcArgs& args) {
  store::GcRules rules;
  rules.stale = args.stale;
  rules.orphans = args.orphans;
  rules.include_fresh = args.include_fresh;
  if (!args.ns.empty()) rules.ns = args.ns;
  auto parse = [](const std::string& text, auto parser, std::optional<std::uint64_t>& into,
                  std::string_view option) -> std::optional<int> {
    if (text.empty()) return std::nullopt;
    auto v = parser(text);
    if (!v) return report_error(std::move(v).error().context(option));
    into = *v;
    return std::nullopt;
  };
  if (auto bad = parse(args.older_than, util::parse_duration, rules.older_than, "--older-than")) return *bad;
  if (auto bad = parse(args.unused_for, util::parse_duration, rules.unused_for, "--unused-for")) return *bad;
  if (auto bad = parse(args.max_size, util::parse_size, rules.max_size, "--max-size")) return *bad;
  if (!rules.stale && !rules.orphans && !rules.older_than && !rules.unused_for && !rules.max_size)
    return report_error({Category::invalid_argument,
                         "say what to remove: --stale, --orphans --manifest M, --older-than D, --unused-for D "
                         "or --max-size S (see kcache gc --help)"});
  if (rules.orphans && args.manifest.empty())
    return report_error(
        {Category::invalid_argument, "--orphans removes entries a manifest no longer has: add --manifest kcache.toml"});

  std::optional<manifest::Manifest> manifest;
  if (!args.manifest.empty()) {
    auto m = manifest::load_manifest(args.manifest);
    if (!m) return report_error(m.error());
    manifest = std::move(*m);
  }
  auto store = args.store.open(!args.dry_run);
  if (!store) return report_error(store.error());

  report::GcReport report;
  report.dry_run = args.dry_run;
  report.max_size = rules.max_size;
  auto candidates = maintain::gc_candidates(**store, manifest ? &*manifest : nullptr, toolchain());
  if (!candidates) return report_error(candidates.error());
  if (rules.ns && std::none_of(candidates->begin(), candidates->end(),
                               [&](const store::GcCandidate& c) { return c.ns == *rules.ns; }))
    return report_error({Category::not_found, fmt::format("the store has no entries in namespace '{}' "
                                                          "(kcache inspect lists the namespaces)",
                                                          *rules.ns)});
  report.candidates = std::move(*candidates);
  rules.now = clock().now();
  // After the scan, so that a build that wrote what the scan saw is counted.
  auto leased_since = maintain::running_builds_since(**store, nullptr);
  if (!leased_since) return report_error(leased_since.error());
  rules.leased_since = *leased_since;
  report.plan = store::plan_gc(report.candidates, rules);
  auto before = (*store)->space();
  if (!before) return report_error(before.error());
  report.space_before = *before;
  if (!args.dry_run) {
    auto removed = maintain::apply_gc(**store, report.candidates, report.plan);
    if (!removed) return report_error(removed.error());
    report.removed = *removed;
    auto after = (*store)->space();
    if (!after) return report_error(after.error());
    report.space_after = *after;
  }
  fmt::print("{}", args.json ? report::gc_json(report) : report::gc_text(report));
  return k_exit_ok;
}

struct CompactArgs {
  StoreOptions store;
  bool json = false;
};

int run_compact(const CompactArgs& args) {
  if (args.store.read_only)
    return report_error({Category::read_only, "compact rewrites the store's file; drop --read-only"});
  auto result = store::compact_lmdb_store(args.store.path());
  if (!result) return report_error(result.error());
  fmt::print("{}", args.json ? report::compact_json(*result) : report::compact_text(*result));
  return k_exit_ok;
}

}  // namespace

void register_gc(CLI::App& app, Action& action) {
  auto args = std::make_shared<GcArgs>();
  auto* cmd = app.add_subcommand("gc", "Remove entries by age, use, staleness or size (LRU).");
  cmd->description(
      "Remove store entries by rule; an entry goes when any given rule matches it:\n"
      "  --stale          it can never hit again: built by another toolchain, or (with\n"
      "                   --manifest) its inputs or options differ from the manifest's\n"
      "  --orphans        the manifest (--manifest, required) no longer has it\n"
      "  --older-than D   written more than D ago (90m, 12h, 30d, 2w)\n"
      "  --unused-for D   no build found it fresh for D\n"
      "  --max-size S     then evict least recently used entries until the entries in scope\n"
      "                   take at most S bytes (500M, 2G)\n"
      "--namespace limits every rule to one namespace. An entry the given manifest still uses\n"
      "fresh is never removed unless --include-fresh says so. An entry rewritten by another\n"
      "build after gc looked at it is kept, and so is one written or used since a build that is\n"
      "still running started (its lease, STORE/leases/). Freed pages are reused by later writes; the file\n"
      "only shrinks with `kcache compact`, which gc suggests when it would help.\n"
      "\n"
      "Examples:\n"
      "  kcache gc --stale --orphans --manifest kcache.toml\n"
      "  kcache gc --unused-for 30d --dry-run\n"
      "  kcache gc --max-size 2G --manifest kcache.toml && kcache compact");
  args->store.add_to(*cmd);
  cmd->add_option("--manifest", args->manifest, "judge entries against this manifest (protects its fresh entries)");
  cmd->add_flag("--stale", args->stale, "remove entries that can never hit again");
  cmd->add_flag("--orphans", args->orphans, "remove entries the manifest no longer has");
  cmd->add_option("--older-than", args->older_than, "remove entries written more than DURATION ago");
  cmd->add_option("--unused-for", args->unused_for, "remove entries no build used for DURATION");
  cmd->add_option("--max-size", args->max_size, "evict least recently used entries down to SIZE");
  cmd->add_option("--namespace", args->ns, "only entries of this namespace (e.g. spirv/vulkan1.2)");
  cmd->add_flag("--include-fresh", args->include_fresh, "also remove entries the manifest still uses fresh");
  cmd->add_flag("--dry-run", args->dry_run, "list what would be removed; change nothing (works read-only)");
  cmd->add_flag("--json", args->json, "print the result as JSON on stdout");
  cmd->callback([args, &action] { action = [args] { return run_gc(*args); }; });
}

void register_compact(CLI::App& app, Action& action) {
  auto args = std::make_shared<CompactArgs>();
  auto* cmd = app.add_subcommand("compact", "Shrink the store file to what its entries use.");
  cmd->description(
      "Copy the store without its free pages and swap the copy in, so data.mdb shrinks to what\n"
      "the entries use (after `kcache gc`, freed pages are only reused, never returned). Needs\n"
      "the store to itself: it refuses (exit 4) while another process has it open, and kcache\n"
      "processes that start meanwhile wait until it is done.");
  args->store.add_to(*cmd);
  cmd->add_flag("--json", args->json, "print the sizes before and after as JSON on stdout");
  cmd->callback([args, &action] { action = [args] { return run_compact(*args); }; });
}

}  // namespace kcache::cli
