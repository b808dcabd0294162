#include "kcache/report/lifecycle.hpp"

#include "kcache/report/render_internal.hpp"

#include "kcache/util/text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>

namespace kcache::report {
namespace {

using nlohmann::json;
using util::human_bytes;
using util::iso_time;

double percent(std::uint64_t part, std::uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

json space_json(const store::SpaceInfo& s) {
  return {{"file_bytes", s.file_bytes},
          {"page_size", s.page_size},
          {"pages_used", s.pages_used},
          {"pages_free", s.pages_free},
          {"free_bytes", s.pages_free * s.page_size}};
}

}  // namespace

std::string stats_text(const maintain::RunTotals& t, std::size_t rows) {
  std::string size;
  if (t.stored_bytes)
    size = t.limit ? fmt::format("size: {} / {} limit ({:.0f}%, max_size from {})\n", human_bytes(*t.stored_bytes),
                                 human_bytes(*t.limit), percent(*t.stored_bytes, *t.limit), t.limit_source)
                   : fmt::format("size: {} (no limit: `kcache config set max_size 10G` sets one)\n",
                                 human_bytes(*t.stored_bytes));
  const std::string zeroed = t.zeroed ? fmt::format(" since the counters were zeroed ({})", iso_time(t.zeroed)) : "";
  if (t.runs == 0)
    return size + (t.zeroed ? fmt::format("no builds recorded{}\n", zeroed)
                            : "no builds recorded in this store yet (the run log is written by `kcache build`)\n");
  std::string out = size + fmt::format("{} runs ({} in the log){}, {} .. {}\n", t.runs, t.logged, zeroed,
                                       iso_time(t.first), iso_time(t.last));
  // Remote hits are hits and stale entries rebuilt were compiled; the
  // parts follow in parentheses.
  const std::uint64_t hits = t.hits + t.remote_hit, compiled = t.compiled + t.stale_replaced;
  out += fmt::format("kernels: {}  hits: {} ({:.1f}%{})  misses: {}  compiled: {}{}  failed: {}  not stored: {}\n",
                     t.kernels, hits, percent(hits, t.kernels),
                     t.remote_hit ? fmt::format(", {} from remotes", t.remote_hit) : "", t.misses(), compiled,
                     t.stale_replaced ? fmt::format(" ({} replacing stale entries)", t.stale_replaced) : "", t.failed,
                     t.refused_write);
  out += fmt::format("wall: {:.2f} s total, {:.2f} s per run; written: {}\n", static_cast<double>(t.wall_us) / 1e6,
                     static_cast<double>(t.wall_us) / 1e6 / static_cast<double>(t.runs), human_bytes(t.bytes_written));
  if (t.remote_hit || t.remote_misses || t.remote_refused || t.remote_errors || t.remote_bytes_written)
    out += fmt::format(
        "remote caches: {} kernels from remotes, {} misses, {} refused, {} failed requests; {} read, "
        "{} written\n",
        t.remote_hit, t.remote_misses, t.remote_refused, t.remote_errors, human_bytes(t.remote_bytes_read),
        human_bytes(t.remote_bytes_written));
  if (t.launcher_commands) {
    std::uint64_t passed = 0;
    for (const auto& [why, n] : t.not_cacheable) passed += n;
    out += fmt::format("launcher: {} compile commands, {} served by kcache, {} run by the real program\n",
                       t.launcher_commands, t.launcher_commands - passed, passed);
    for (const auto& [why, n] : t.not_cacheable) out += fmt::format("  not cacheable: {}: {}\n", why, n);
  }
  if (t.evicted)
    out += fmt::format("evicted by max_size: {} entries, {} (in {} evictions)\n", t.evicted,
                       human_bytes(t.evicted_bytes), t.evictions);
  out += "time per phase (cpu, summed over kernels):\n";
  for (const auto& p : t.phases)
    if (p.cpu_us || p.wall_us)
      out += fmt::format("  {:<10} {:>10.1f} ms cpu  {:>10.1f} ms wall\n", p.name, static_cast<double>(p.cpu_us) / 1e3,
                         static_cast<double>(p.wall_us) / 1e3);
  std::size_t from = t.recent.size() > rows ? t.recent.size() - rows : 0;
  out += fmt::format("\n{:<20}  {:>7}  {:>7}  {:>8}  {:>6}  {:>9}\n", "run ended", "kernels", "hits", "compiled",
                     "failed", "wall");
  for (std::size_t i = from; i < t.recent.size(); ++i) {
    const auto& r = t.recent[i];
    out += fmt::format("{:<20}  {:>7}  {:>7}  {:>8}  {:>6}  {:>7.2f} s\n", iso_time(r.time), r.kernels,
                       r.hits + r.remote_hit, r.compiled + r.stale_replaced, r.failed,
                       static_cast<double>(r.wall_us) / 1e6);
  }
  return terminal_text(out);
}

namespace {

json launcher_json(const maintain::RunTotals& t) {
  json reasons = json::object();
  for (const auto& [why, n] : t.not_cacheable) reasons[why] = n;
  return {{"commands", t.launcher_commands}, {"not_cacheable", std::move(reasons)}};
}

}  // namespace

std::string stats_json(const maintain::RunTotals& t) {
  json phases = json::object();
  for (const auto& p : t.phases)
    phases[p.name] = {{"wall_ms", static_cast<double>(p.wall_us) / 1e3},
                      {"cpu_ms", static_cast<double>(p.cpu_us) / 1e3}};
  json runs = json::array();
  for (const auto& r : t.recent) {
    json rp = json::object();
    for (const auto& p : r.phases)
      rp[p.name] = {{"wall_ms", static_cast<double>(p.wall_us) / 1e3}, {"cpu_ms", static_cast<double>(p.cpu_us) / 1e3}};
    runs.push_back({{"time", iso_time(r.time)},
                    {"command", r.command},
                    {"kernels", r.kernels},
                    {"hit", r.hits},
                    {"compiled", r.compiled},
                    {"stale_replaced", r.stale_replaced},
                    {"failed", r.failed},
                    {"refused_write", r.refused_write},
                    {"wall_ms", static_cast<double>(r.wall_us) / 1e3},
                    {"bytes_written", r.bytes_written},
                    {"phases", std::move(rp)}});
  }
  json out = {
      {"schema", "kcache.stats/1"},
      {"runs", t.runs},
      {"logged", t.logged},
      {"first", t.runs ? json(iso_time(t.first)) : json(nullptr)},
      {"last", t.runs ? json(iso_time(t.last)) : json(nullptr)},
      {"totals",
       {{"kernels", t.kernels},
        {"hit", t.hits + t.remote_hit},
        {"miss", t.misses()},
        {"compiled", t.compiled},
        {"stale_replaced", t.stale_replaced},
        {"failed", t.failed},
        {"refused_write", t.refused_write},
        {"wall_ms", static_cast<double>(t.wall_us) / 1e3},
        {"bytes_written", t.bytes_written},
        {"launcher", launcher_json(t)},
        {"evicted", {{"entries", t.evicted}, {"bytes", t.evicted_bytes}, {"evictions", t.evictions}}},
        {"remote",
         {{"remote_hit", t.remote_hit},
          {"misses", t.remote_misses},
          {"refused", t.remote_refused},
          {"errors", t.remote_errors},
          {"bytes_read", t.remote_bytes_read},
          {"bytes_written", t.remote_bytes_written}}}}},
      {"hit_rate", t.kernels ? static_cast<double>(t.hits + t.remote_hit) / static_cast<double>(t.kernels) : 0.0},
      {"phases", std::move(phases)},
      {"recent", std::move(runs)}};
  // Fields appended: the store's size against its limit, the zeroing time.
  out["stored_bytes"] = t.stored_bytes ? json(*t.stored_bytes) : json(nullptr);
  out["max_size"] = t.limit ? json(*t.limit) : json(nullptr);
  out["zeroed"] = t.zeroed ? json(iso_time(t.zeroed)) : json(nullptr);
  return internal::json_text(out);
}

namespace {

/// What happened to the space the removed entries held.
std::string space_verdict(const GcReport& r) {
  if (!r.space_after) return "";
  const auto &b = r.space_before, &a = *r.space_after;
  if (a.file_bytes < b.file_bytes)
    return fmt::format("data.mdb shrank from {} to {}\n", human_bytes(b.file_bytes), human_bytes(a.file_bytes));
  if (a.page_size == 0) return "";
  return fmt::format(
      "data.mdb stays {} ({} free pages, {}, are reused by later writes); run `kcache compact` to give the "
      "space back to the file system\n",
      human_bytes(a.file_bytes), a.pages_free, human_bytes(a.pages_free * a.page_size));
}

}  // namespace

std::string gc_text(const GcReport& r) {
  std::string out;
  const char* verb = r.dry_run ? "would remove" : "removed";
  for (const auto& v : r.plan.remove) {
    const auto& c = r.candidates[v.index];
    out += fmt::format("{} {} {}{}  ({}, {})\n", verb, c.ns, c.kernel, c.failure ? " (failure record)" : "",
                       store::gc_reason_name(v.reason), human_bytes(c.bytes));
  }
  std::size_t count = r.removed ? r.removed->removed : r.plan.remove.size();
  std::uint64_t bytes = 0;
  if (r.removed) bytes = r.removed->record_bytes;
  else
    for (const auto& v : r.plan.remove) bytes += r.candidates[v.index].bytes;
  out += fmt::format("{} {} of {} entries, {} of {}", r.dry_run ? "would remove" : "removed", count,
                     r.plan.scope_entries, human_bytes(bytes), human_bytes(r.plan.scope_bytes_before));
  out += fmt::format("; {} left\n", human_bytes(r.plan.scope_bytes_before - bytes));
  if (r.plan.kept_fresh)
    out += fmt::format(
        "kept {} entries a rule matched because the manifest uses them fresh (--include-fresh "
        "removes them too)\n",
        r.plan.kept_fresh);
  if (r.plan.kept_leased)
    out += fmt::format(
        "kept {} entries a rule matched because they are in use by a running build (written or used since it "
        "started)\n",
        r.plan.kept_leased);
  if (r.removed && r.removed->changed)
    out += fmt::format("kept {} entries rewritten by another process since the scan\n", r.removed->changed);
  if (r.max_size && !r.plan.max_size_reached)
    out += fmt::format("kcache: warning: could not get under --max-size {} without removing fresh entries{}\n",
                       human_bytes(*r.max_size), r.plan.kept_leased ? " or those in use by a running build" : "");
  out += space_verdict(r);
  return terminal_text(out);
}

std::string gc_json(const GcReport& r) {
  json removed = json::array();
  std::uint64_t bytes = 0;
  for (const auto& v : r.plan.remove) {
    const auto& c = r.candidates[v.index];
    bytes += c.bytes;
    removed.push_back({{"namespace", c.ns},
                       {"kernel", c.kernel},
                       {"reason", store::gc_reason_name(v.reason)},
                       {"bytes", c.bytes},
                       {"created", iso_time(c.created)},
                       {"last_used", iso_time(c.last_used)},
                       {"failure_record", c.failure}});
  }
  json out = {{"schema", "kcache.gc/1"},
              {"dry_run", r.dry_run},
              {"planned", std::move(removed)},
              {"removed_entries", r.removed ? r.removed->removed : 0},
              {"removed_bytes", r.removed ? r.removed->record_bytes : 0},
              {"planned_bytes", bytes},
              {"kept_changed", r.removed ? r.removed->changed : 0},
              {"kept_fresh", r.plan.kept_fresh},
              {"kept_leased", r.plan.kept_leased},
              {"scope_entries", r.plan.scope_entries},
              {"scope_bytes_before", r.plan.scope_bytes_before},
              {"scope_bytes_after", r.plan.scope_bytes_after},
              {"max_size_reached", r.plan.max_size_reached},
              {"space_before", space_json(r.space_before)}};
  if (r.space_after) {
    out["space_after"] = space_json(*r.space_after);
    out["file_shrank"] = r.space_after->file_bytes < r.space_before.file_bytes;
    out["compact_suggested"] = r.space_after->file_bytes >= r.space_before.file_bytes && r.space_after->pages_free > 0;
  }
  return internal::json_text(out);
}

std::string eviction_text(const maintain::Eviction& e, std::string_view source) {
  const std::uint64_t after = e.plan.scope_bytes_before - std::min(e.plan.scope_bytes_before, e.removed.record_bytes);
  std::string out;
  if (e.removed.removed)
    out = fmt::format(
        "kcache: store over its max_size {} ({} setting): evicted {} least recently used entries, {} -> {}\n",
        human_bytes(e.limit), source, e.removed.removed, human_bytes(e.plan.scope_bytes_before), human_bytes(after));
  if (e.plan.kept_leased)
    out += fmt::format(
        "kcache: kept {} entries in use by a running build (written or used since it started): evicted later\n",
        e.plan.kept_leased);
  if (!e.plan.max_size_reached)
    out += fmt::format(
        "kcache: warning: store still over its max_size {} ({} setting) with {}: the rest is what this build's "
        "manifest uses{}; raise max_size (`kcache config set max_size SIZE`)\n",
        human_bytes(e.limit), source, human_bytes(after),
        e.plan.kept_leased ? " or a running build wrote or used" : "");
  return terminal_text(out);
}

std::string compact_json(const store::CompactResult& result) {
  return internal::json_text(
      json{{"schema", "kcache.compact/1"}, {"bytes_before", result.bytes_before}, {"bytes_after", result.bytes_after}});
}

std::string compact_text(const store::CompactResult& result) {
  return terminal_text(
      fmt::format("compacted data.mdb: {} → {}\n", human_bytes(result.bytes_before), human_bytes(result.bytes_after)));
}

}  // namespace kcache::report
