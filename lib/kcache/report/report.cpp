#include "kcache/report/report.hpp"

#include "kcache/definition/definition.hpp"
#include "kcache/pipeline/explain.hpp"
#include "kcache/report/format_internal.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

namespace kcache::report {
namespace {

using nlohmann::json;

using internal::human_bytes;
using internal::iso_time;

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
  for (const auto& c : changes)
    out.push_back({{"field", c.name},
                   {"kind", pipeline::change_kind_name(pipeline::change_kind(c.name))},
                   {"stored", c.old_value},
                   {"current", c.new_value}});
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
    if (explain && r.outcome != Outcome::hit && !r.reason.empty())
      out += fmt::format("{} {}: {}\n", r.outcome == Outcome::failed ? "tried to rebuild" : "rebuilt", r.kernel,
                         r.reason);
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
  std::set<std::string> names;
  if (manifest)
    for (const auto& k : manifest->kernels) names.insert(k.name);

  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    report.namespaces = KCACHE_TRY(reader.namespaces());
    for (const auto& info : report.namespaces) {
      std::string ns = info.ns.name();
      NamespaceSummary summary;
      summary.ns = ns;
      KCACHE_CHECK(reader.scan_facts(ns, [&](Entry&& e, const store::EntryFacts& facts) {
        EntryRow row{ns, e.kernel, e.key, e.payload.size(), e.created, e.origin_kind, e.origin_detail};
        row.record_bytes = facts.record_bytes;
        if (facts.usage) row.written = facts.usage->written, row.last_used = facts.usage->last_used;
        ++summary.entries;
        summary.record_bytes += facts.record_bytes;
        summary.payload_bytes += e.payload.size();
        summary.oldest = summary.entries == 1 ? e.created : std::min(summary.oldest, e.created);
        summary.newest = std::max(summary.newest, e.created);
        summary.last_used = std::max(summary.last_used, row.last_used);
        auto origin = std::find_if(summary.origins.begin(), summary.origins.end(), [&](const OriginSummary& o) {
          return o.kind == e.origin_kind && o.detail == e.origin_detail;
        });
        if (origin == summary.origins.end())
          origin = summary.origins.insert(summary.origins.end(), OriginSummary{e.origin_kind, e.origin_detail});
        ++origin->entries;
        origin->latest_written = std::max(origin->latest_written, row.written);
        if (!manifest) {
          row.changes = pipeline::toolchain_changes(e);
          if (!row.changes.empty()) row.state = EntryState::stale;
        } else if (info.ns.backend != "spirv") {
          // A device namespace: the manifest names its kernels but not the
          // device, so only a kernel it no longer has is known to be an orphan.
          if (!names.count(e.kernel)) row.state = EntryState::orphan;
        } else {
          auto it = wanted.find({ns, e.kernel});
          if (it == wanted.end()) {
            row.state = EntryState::orphan;
          } else {
            seen.insert(it->first);
            auto a = pipeline::assess(*it->second, e, *files);
            row.state = a.state == pipeline::Freshness::fresh ? EntryState::fresh : EntryState::stale;
            row.changes = pipeline::essential_changes(std::move(a.changes));
          }
        }
        report.entries.push_back(std::move(row));
        return true;
      }));
      report.summaries.push_back(std::move(summary));
    }
    return {};
  }));
  for (const auto& [key, spec] : wanted)
    if (!seen.count(key)) report.missing.push_back(key);
  return report;
}

void mark_foreign(StoreReport& report, const manifest::Manifest* manifest,
                  const Result<std::vector<FingerprintRecord>>& local_devices) {
  std::set<std::string> targets;
  if (manifest)
    for (const auto& k : manifest->kernels) targets.insert(spirv_namespace(k.target).name());
  for (std::size_t i = 0; i < report.namespaces.size() && i < report.summaries.size(); ++i) {
    const Namespace& ns = report.namespaces[i].ns;
    NamespaceSummary& summary = report.summaries[i];
    if (ns.backend == "spirv") {
      if (manifest && !targets.count(ns.name())) {
        summary.foreign = true;
        summary.foreign_reason = fmt::format("no kernel of {} targets {}", manifest->path.string(), ns.fingerprint);
      }
    } else if (!local_devices) {
      summary.foreign = true;
      summary.foreign_reason = "no local device to match: " + local_devices.error().message;
    } else if (std::find(local_devices->begin(), local_devices->end(), ns.record) == local_devices->end()) {
      summary.foreign = true;
      summary.foreign_reason = "its fingerprint matches none of this machine's devices";
    }
  }
}

namespace {

/// "built here (built by kcache 0.1.0 on ci-7)", "imported from x.kcb at …".
std::string origin_text(const OriginSummary& o) {
  if (o.kind == OriginKind::built) return fmt::format("{} built here ({})", o.entries, o.detail);
  return fmt::format("{} imported from {}{}", o.entries, o.detail,
                     o.latest_written ? " at " + iso_time(o.latest_written) : "");
}

std::string time_or_never(std::uint64_t t) { return t ? iso_time(t) : "never recorded"; }

}  // namespace

std::string store_text(const StoreReport& report) {
  std::string out;
  if (report.namespaces.empty()) out += "store is empty\n";
  for (std::size_t i = 0; i < report.namespaces.size(); ++i) {
    const auto& info = report.namespaces[i];
    out += fmt::format("namespace {}  ({} entries, {})\n", info.ns.name(), info.entries,
                       human_bytes(static_cast<double>(info.payload_bytes)));
    for (const auto& [k, v] : info.ns.record.fields) out += fmt::format("  {}: {}\n", k, v);
    if (i >= report.summaries.size()) continue;
    const auto& s = report.summaries[i];
    if (s.entries)
      out += fmt::format("  stored: {} in records; created {} .. {}; last used {}\n",
                         human_bytes(static_cast<double>(s.record_bytes)), iso_time(s.oldest), iso_time(s.newest),
                         time_or_never(s.last_used));
    for (const auto& o : s.origins) out += fmt::format("  origin: {}\n", origin_text(o));
    if (s.foreign) out += fmt::format("  FOREIGN: {}\n", s.foreign_reason);
  }
  if (!report.entries.empty()) {
    std::size_t width = 6;
    for (const auto& e : report.entries) width = std::max(width, e.kernel.size());
    width = std::min<std::size_t>(width, 60);
    out += fmt::format("\n{:<{}}  {:<16}  {:>9}  {:<20}  {:<20}  {:<6}  {}\n", "kernel", width, "key", "size",
                       "created", "last used", "state", "origin");
    const std::string* group = nullptr;
    for (const auto& e : report.entries) {
      if (report.namespaces.size() > 1 && (!group || *group != e.ns)) out += fmt::format("[{}]\n", e.ns);
      group = &e.ns;
      out += fmt::format("{:<{}}  {:<16}  {:>9}  {:<20}  {:<20}  {:<6}  {}\n", e.kernel, width,
                         e.key.id.hex().substr(0, 16), human_bytes(static_cast<double>(e.bytes)), iso_time(e.created),
                         e.last_used ? iso_time(e.last_used) : "-", entry_state_name(e.state),
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
  for (std::size_t i = 0; i < report.namespaces.size(); ++i) {
    const auto& info = report.namespaces[i];
    json record = json::object();
    for (const auto& [k, v] : info.ns.record.fields) record[k] = v;
    json row = {{"name", info.ns.name()},
                {"backend", info.ns.backend},
                {"fingerprint", info.ns.fingerprint},
                {"record", std::move(record)},
                {"entries", info.entries},
                {"bytes", info.payload_bytes}};
    if (i < report.summaries.size()) {
      const auto& s = report.summaries[i];
      auto when = [](std::uint64_t t) { return t ? json(iso_time(t)) : json(nullptr); };
      row["record_bytes"] = s.record_bytes;
      row["oldest"] = when(s.oldest);
      row["newest"] = when(s.newest);
      row["last_used"] = when(s.last_used);
      json origins = json::array();
      for (const auto& o : s.origins)
        origins.push_back({{"origin", o.kind == OriginKind::built ? "built" : "imported"},
                           {"detail", o.detail},
                           {"entries", o.entries},
                           {"latest_written", when(o.latest_written)}});
      row["origins"] = std::move(origins);
      row["foreign"] = s.foreign;
      if (s.foreign) row["foreign_reason"] = s.foreign_reason;
    }
    namespaces.push_back(std::move(row));
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
                {"origin_detail", e.origin_detail},
                {"record_bytes", e.record_bytes},
                {"written", e.written ? json(iso_time(e.written)) : json(nullptr)},
                {"last_used", e.last_used ? json(iso_time(e.last_used)) : json(nullptr)}};
    if (report.with_manifest || e.state != EntryState::unknown) row["state"] = entry_state_name(e.state);
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
