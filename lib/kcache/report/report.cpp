#include "kcache/report/report.hpp"

#include "kcache/definition/definition.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <map>
#include <set>

namespace kcache::report {
namespace {

using nlohmann::json;

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u]) : fmt::format("{:.1f} {}", bytes, units[u]);
}

std::string iso_time(std::uint64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", tm);
}

json phases_json(const PhaseTimes& times) {
  json out = json::object();
  for (std::size_t i = 0; i < k_phase_count; ++i) {
    const auto& t = times.times[i];
    out[std::string(phase_name(static_cast<Phase>(i)))] = {{"wall_ms", t.wall_ms}, {"cpu_ms", t.cpu_ms}};
  }
  return out;
}

json changes_json(const std::vector<pipeline::Change>& changes) {
  json out = json::array();
  for (const auto& c : changes) out.push_back({{"field", c.name}, {"stored", c.old_value}, {"current", c.new_value}});
  return out;
}

}  // namespace

std::string build_summary(const pipeline::BuildResult& result, bool explain) {
  using pipeline::Outcome;
  std::string out;
  std::size_t failed = result.count(Outcome::failed);
  for (const auto& r : result.receipts) {
    if (r.outcome == Outcome::failed) {
      out += fmt::format("FAILED {}{}\n", r.kernel, r.kept_stale ? " (previous entry kept, stale)" : "");
      if (r.error) out += fmt::format("  {}: {}\n", category_name(r.error->category), r.error->message);
    } else if (r.outcome == Outcome::refused_write) {
      out += fmt::format("warning: {}: compiled but not stored: {}\n", r.kernel, r.error ? r.error->message : "");
    }
    if (explain && r.outcome != Outcome::hit && r.outcome != Outcome::failed)
      out += fmt::format("rebuilt {}: {}\n", r.kernel, r.reason);
  }
  out += fmt::format("{} kernels: {} hit, {} compiled, {} stale replaced, {} failed, {} not stored\n",
                     result.receipts.size(), result.count(Outcome::hit), result.count(Outcome::compiled),
                     result.count(Outcome::stale_replaced), failed, result.count(Outcome::refused_write));
  std::string phases;
  for (std::size_t i = 0; i < k_phase_count; ++i) {
    const auto& t = result.totals.times[i];
    if (t.cpu_ms < 0.05 && t.wall_ms < 0.05) continue;
    phases += fmt::format("{}{} {:.0f} ms", phases.empty() ? "" : ", ", phase_name(static_cast<Phase>(i)), t.cpu_ms);
  }
  out += fmt::format("time: {:.2f} s wall; cpu by phase: {}\n", result.wall_ms / 1000, phases.empty() ? "-" : phases);
  out += fmt::format("written: {}\n", human_bytes(static_cast<double>(result.bytes_written)));
  return out;
}

std::string build_json(const pipeline::BuildResult& result) {
  json kernels = json::array();
  for (const auto& r : result.receipts) {
    json k = {{"kernel", r.kernel},
              {"namespace", r.ns},
              {"outcome", pipeline::outcome_name(r.outcome)},
              {"id", r.key.id.hex()},
              {"ir", r.key.ir.hex()},
              {"bytes", r.bytes},
              {"phases", phases_json(r.times)}};
    if (!r.reason.empty()) k["reason"] = r.reason;
    if (r.error) k["error"] = {{"category", category_name(r.error->category)}, {"message", r.error->message}};
    if (!r.warnings.empty()) k["warnings"] = r.warnings;
    if (r.kept_stale) k["kept_stale"] = true;
    if (r.shared_compile) k["shared_compile"] = true;
    kernels.push_back(std::move(k));
  }
  json counts = json::object();
  for (auto o : {pipeline::Outcome::hit, pipeline::Outcome::compiled, pipeline::Outcome::stale_replaced,
                 pipeline::Outcome::failed, pipeline::Outcome::refused_write})
    counts[std::string(pipeline::outcome_name(o))] = result.count(o);
  json out = {{"schema", "kcache.build/1"},
              {"kernels", std::move(kernels)},
              {"counts", std::move(counts)},
              {"wall_ms", result.wall_ms},
              {"bytes_written", result.bytes_written},
              {"phases", phases_json(result.totals)}};
  return out.dump(2) + "\n";
}

std::string_view entry_state_name(EntryState s) {
  switch (s) {
    case EntryState::unknown: return "-";
    case EntryState::fresh: return "fresh";
    case EntryState::stale: return "stale";
    case EntryState::orphan: return "orphan";
  }
  return "?";
}

Result<StoreReport> inspect_store(store::Store& store, const manifest::Manifest* manifest) {
  StoreReport report;
  report.with_manifest = manifest != nullptr;
  std::map<std::pair<std::string, std::string>, const definition::KernelSpec*> wanted;
  if (manifest)
    for (const auto& k : manifest->kernels) wanted[{spirv_namespace(k.target).name(), k.name}] = &k;
  std::optional<definition::FileCache> files;
  if (manifest) files.emplace(manifest->root);
  std::set<std::pair<std::string, std::string>> seen;

  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    report.namespaces = KCACHE_TRY(reader.namespaces());
    for (const auto& info : report.namespaces) {
      std::string ns = info.ns.name();
      std::optional<Error> scan_error;
      KCACHE_CHECK(reader.scan(ns, [&](Entry&& e) {
        EntryRow row{ns, e.kernel, e.key, e.payload.size(), e.created, e.origin_kind, e.origin_detail};
        if (manifest) {
          auto it = wanted.find({ns, e.kernel});
          if (it == wanted.end()) {
            row.state = EntryState::orphan;
          } else {
            seen.insert(it->first);
            auto a = pipeline::assess(*it->second, e, *files);
            row.state = a.state == pipeline::Freshness::fresh ? EntryState::fresh : EntryState::stale;
            row.changes = std::move(a.changes);
          }
        }
        report.entries.push_back(std::move(row));
        return true;
      }));
    }
    return {};
  }));
  for (const auto& [key, spec] : wanted)
    if (!seen.count(key)) report.missing.push_back(key);
  return report;
}

std::string store_text(const StoreReport& report) {
  std::string out;
  if (report.namespaces.empty()) out += "store is empty\n";
  for (const auto& info : report.namespaces) {
    out += fmt::format("namespace {}  ({} entries, {})\n", info.ns.name(), info.entries,
                       human_bytes(static_cast<double>(info.payload_bytes)));
    for (const auto& [k, v] : info.ns.record.fields) out += fmt::format("  {}: {}\n", k, v);
  }
  if (!report.entries.empty()) {
    std::size_t width = 6;
    for (const auto& e : report.entries) width = std::max(width, e.kernel.size());
    width = std::min<std::size_t>(width, 60);
    out += fmt::format("\n{:<{}}  {:<16}  {:>9}  {:<20}  {:<6}  {}\n", "kernel", width, "key", "size", "created",
                       "state", "origin");
    for (const auto& e : report.entries) {
      out += fmt::format("{:<{}}  {:<16}  {:>9}  {:<20}  {:<6}  {}\n", e.kernel, width, e.key.id.hex().substr(0, 16),
                         human_bytes(static_cast<double>(e.bytes)), iso_time(e.created), entry_state_name(e.state),
                         e.origin_kind == OriginKind::built ? "built" : "imported: " + e.origin_detail);
      if (e.state == EntryState::stale) out += fmt::format("    why: {}\n", pipeline::describe_changes(e.changes, 4));
    }
  }
  for (const auto& [ns, kernel] : report.missing) out += fmt::format("missing {} (in {})\n", kernel, ns);
  if (report.with_manifest) {
    std::map<EntryState, std::size_t> n;
    for (const auto& e : report.entries) ++n[e.state];
    out += fmt::format("\n{} fresh, {} stale, {} orphan, {} missing\n", n[EntryState::fresh], n[EntryState::stale],
                       n[EntryState::orphan], report.missing.size());
  }
  return out;
}

std::string store_json(const StoreReport& report) {
  json namespaces = json::array();
  for (const auto& info : report.namespaces) {
    json record = json::object();
    for (const auto& [k, v] : info.ns.record.fields) record[k] = v;
    namespaces.push_back({{"name", info.ns.name()},
                          {"backend", info.ns.backend},
                          {"fingerprint", info.ns.fingerprint},
                          {"record", std::move(record)},
                          {"entries", info.entries},
                          {"bytes", info.payload_bytes}});
  }
  json entries = json::array();
  for (const auto& e : report.entries) {
    json row = {{"namespace", e.ns},
                {"kernel", e.kernel},
                {"id", e.key.id.hex()},
                {"ir", e.key.ir.hex()},
                {"bytes", e.bytes},
                {"created", iso_time(e.created)},
                {"origin", e.origin_kind == OriginKind::built ? "built" : "imported"},
                {"origin_detail", e.origin_detail}};
    if (report.with_manifest) row["state"] = entry_state_name(e.state);
    if (!e.changes.empty()) row["changes"] = changes_json(e.changes);
    entries.push_back(std::move(row));
  }
  json missing = json::array();
  for (const auto& [ns, kernel] : report.missing) missing.push_back({{"namespace", ns}, {"kernel", kernel}});
  json out = {{"schema", "kcache.inspect/1"}, {"namespaces", namespaces}, {"entries", entries}};
  if (report.with_manifest) out["missing"] = missing;
  return out.dump(2) + "\n";
}

}  // namespace kcache::report
