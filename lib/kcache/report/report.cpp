#include "kcache/report/report.hpp"

#include "kcache/report/remote_report.hpp"
#include "kcache/report/render_internal.hpp"

#include "kcache/definition/definition.hpp"
#include "kcache/engine/explain.hpp"
#include "kcache/util/text.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <map>
#include <regex>
#include <set>

namespace kcache::report {
namespace {

using nlohmann::json;

using util::human_bytes;
using util::iso_time;

json phases_json(const PhaseTimes& times) {
  json out = json::object();
  for (std::size_t i = 0; i < k_phase_count; ++i) {
    const auto& t = times.times[i];
    out[std::string(phase_name(static_cast<Phase>(i)))] = {{"wall_ms", t.wall_ms}, {"cpu_ms", t.cpu_ms}};
  }
  return out;
}

using internal::changes_json;

}  // namespace

namespace internal {

namespace {

/// nlohmann escapes C0 controls but writes DEL and the C1 controls (U+0080 to
/// U+009F; U+009B is a one-character CSI to some terminals) as they are. In
/// dumped JSON they can only be inside strings, so "\u00NN" is the same
/// value, and `kcache ... --json` on a terminal stays inert.
std::string escape_c1(std::string dumped) {
  std::string out;
  out.reserve(dumped.size());
  for (std::size_t i = 0; i < dumped.size(); ++i) {
    const auto c = static_cast<unsigned char>(dumped[i]);
    const auto next = i + 1 < dumped.size() ? static_cast<unsigned char>(dumped[i + 1]) : 0;
    if (c == 0x7f) out += "\\u007f";
    else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) out += fmt::format("\\u{:04x}", next), ++i;
    else out += dumped[i];
  }
  return out;
}

}  // namespace

// error_handler_t::replace: invalid UTF-8 becomes U+FFFD instead of a
// type_error that would end the command after it acted (gc removes first).
std::string json_text(const nlohmann::json& j) {
  return escape_c1(j.dump(2, ' ', false, json::error_handler_t::replace)) + "\n";
}

std::string json_text(const nlohmann::ordered_json& j) {
  return escape_c1(j.dump(2, ' ', false, json::error_handler_t::replace)) + "\n";
}

}  // namespace internal

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool first = true;
  for (std::string_view line : util::split_lines(text)) {
    if (!first) out += '\n';
    first = false;
    out += util::printable_text(line);
  }
  return out;
}

namespace {

/// Failed kernels that share one error (the same problem in every variant of
/// a kernel): reported once, naming them all.
struct FailureGroup {
  std::vector<const engine::Receipt*> receipts;
};

/// Failed receipts grouped by what would be printed for them, in first-seen
/// order.
std::vector<FailureGroup> failure_groups(const engine::BuildResult& result) {
  std::vector<FailureGroup> groups;
  auto same = [](const engine::Receipt& a, const engine::Receipt& b) {
    return a.remembered == b.remembered && a.kept_stale == b.kept_stale && a.failed_phase == b.failed_phase &&
           a.failed_at == b.failed_at && a.error.has_value() == b.error.has_value() &&
           (!a.error || (a.error->category == b.error->category && a.error->message == b.error->message));
  };
  for (const auto& r : result.receipts) {
    if (r.outcome != engine::Outcome::failed) continue;
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const FailureGroup& g) { return same(*g.receipts[0], r); });
    if (it == groups.end()) groups.push_back({{&r}});
    else it->receipts.push_back(&r);
  }
  return groups;
}

/// The kernels a group's first line names after the first receipt's:
/// "; the same in N more: A, B, ... and M more".
std::string others(const std::vector<const engine::Receipt*>& receipts) {
  constexpr std::size_t k_named = 8;
  if (receipts.size() < 2) return {};
  std::string names;
  for (std::size_t i = 1; i < receipts.size() && i <= k_named; ++i)
    names += fmt::format("{}{}", i == 1 ? "" : ", ", receipts[i]->kernel);
  if (receipts.size() > k_named + 1) names += fmt::format(", and {} more", receipts.size() - k_named - 1);
  return fmt::format("{} more: {}", receipts.size() - 1, names);
}

/// `text` with each line's leading "FILE:LINE:" path, relative to
/// paths->root, shown relative to paths->cwd (absolute outside it); lines
/// without one, and absolute paths, as they are.
std::string with_paths(std::string_view text, const DiagnosticPaths* paths) {
  if (!paths) return std::string(text);
  static const std::regex placed(R"(^([^:\s][^:]*):([0-9]+):(.*)$)");
  std::string out;
  for (std::string_view line_view : util::split_lines(text)) {
    std::string line(line_view);
    std::smatch m;
    if (std::regex_match(line, m, placed) && !std::filesystem::path(m[1].str()).is_absolute()) {
      const auto abs = (paths->root / m[1].str()).lexically_normal();
      const auto rel = abs.lexically_relative(paths->cwd);
      const bool outside = rel.empty() || *rel.begin() == "..";
      line = fmt::format("{}:{}:{}", outside ? abs.string() : rel.generic_string(), m[2].str(), m[3].str());
    }
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

/// "WARNED K" and the compiler's warnings (FILE:LINE: warning: TEXT), for
/// the kernels compiled in this build; kernels with the same warnings (the
/// variants of one source) are named on one line.
std::string warning_text(const engine::BuildResult& result, const DiagnosticPaths* paths) {
  std::vector<std::vector<const engine::Receipt*>> groups;
  for (const auto& r : result.receipts) {
    if (r.warnings.empty() || r.outcome == engine::Outcome::failed) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g[0]->warnings == r.warnings; });
    if (it == groups.end()) groups.push_back({&r});
    else it->push_back(&r);
  }
  std::string out;
  for (const auto& g : groups) {
    const std::string more = others(g);
    out += fmt::format("WARNED {}{}\n{}\n", g[0]->kernel, more.empty() ? "" : "; the same warnings in " + more,
                       with_paths(g[0]->warnings, paths));
  }
  return out;
}

/// "FAILED K (...)" and the error, its lines as the compiler wrote them
/// (FILE:LINE: error: TEXT) so that editors and CI problem matchers find
/// them; several kernels with the same error are named on the first line.
std::string failure_text(const FailureGroup& g, const DiagnosticPaths* paths) {
  const engine::Receipt& r = *g.receipts[0];
  const std::string more = others(g.receipts);
  std::string out = fmt::format(
      "FAILED {}{}{}{}{}\n", r.kernel,
      r.remembered ? fmt::format(" (remembered from {}; --retry-failed to compile again)", util::iso_time(r.failed_at))
                   : "",
      r.kept_stale ? " (previous entry kept, stale)" : "",
      r.error ? fmt::format(" ({}{})", category_name(r.error->category),
                            r.failed_phase.empty() ? "" : " in " + r.failed_phase)
              : "",
      more.empty() ? "" : "; the same error in " + more);
  if (r.error) out += with_paths(r.error->message, paths) + "\n";
  return out;
}

}  // namespace

std::string build_summary(const engine::BuildResult& result, bool explain, const DiagnosticPaths* paths) {
  using engine::Outcome;
  std::string out;
  std::size_t failed = result.count(Outcome::failed);
  out += warning_text(result, paths);
  for (const auto& g : failure_groups(result)) out += failure_text(g, paths);
  for (const auto& r : result.receipts) {
    if (r.outcome == Outcome::refused_write) {
      out +=
          fmt::format("kcache: warning: {}: compiled but not stored: {}\n", r.kernel, r.error ? r.error->message : "");
    }
    if (explain && r.outcome != Outcome::hit && !r.reason.empty() && !r.remembered)
      out +=
          fmt::format("{} {}: {}\n", r.outcome == Outcome::failed ? "tried to rebuild" : "rebuilt", r.kernel, r.reason);
  }
  const std::size_t remembered = result.remembered();
  // A vulkan build's receipts are its kernels and their pipelines (device
  // namespaces): both are named, not summed into one count of "kernels".
  const std::size_t pipelines =
      static_cast<std::size_t>(std::count_if(result.receipts.begin(), result.receipts.end(),
                                             [](const engine::Receipt& r) { return r.ns.starts_with("vulkan/"); }));
  // A remote hit is a hit (nothing compiled here) and a stale entry
  // rebuilt was compiled: the counts say what happened, their parts follow.
  const std::size_t remote = result.count(Outcome::remote_hit);
  const std::size_t stale = result.count(Outcome::stale_replaced);
  out += fmt::format(
      "{}: {} hit{}, {} compiled{}, {} failed{}, {} not stored\n",
      pipelines ? fmt::format("{} kernels and {} pipelines", result.receipts.size() - pipelines, pipelines)
                : fmt::format("{} kernels", result.receipts.size()),
      result.count(Outcome::hit) + remote,
      remote || !result.secondary.empty() ? fmt::format(" ({} from remotes)", remote) : "",
      result.count(Outcome::compiled) + stale, stale ? fmt::format(" ({} replacing stale entries)", stale) : "", failed,
      remembered ? fmt::format(" ({} remembered, not compiled)", remembered) : "",
      result.count(Outcome::refused_write));
  std::string phases;
  for (std::size_t i = 0; i < k_phase_count; ++i) {
    const auto& t = result.totals.times[i];
    if (t.cpu_ms < 0.05 && t.wall_ms < 0.05) continue;
    phases += fmt::format("{}{} {:.0f} ms", phases.empty() ? "" : ", ", phase_name(static_cast<Phase>(i)), t.cpu_ms);
  }
  out += fmt::format("time: {:.2f} s wall; cpu by phase: {}\n", result.wall_ms / 1000, phases.empty() ? "-" : phases);
  out += fmt::format("written: {}\n", human_bytes(result.bytes_written));
  if (remote || !result.secondary.empty())
    out += fmt::format("from remotes: {} kernels (checked and stored)\n", remote);
  out += remotes_text(result.secondary);
  return terminal_text(out);
}

std::string build_json(const engine::BuildResult& result) {
  json kernels = json::array();
  for (const auto& r : result.receipts) {
    json k = {{"kernel", r.kernel},
              {"namespace", r.ns},
              {"outcome", engine::outcome_name(r.outcome)},
              {"id", r.key.id.hex()},
              {"ir", r.key.ir.hex()},
              {"bytes", r.bytes},
              {"phases", phases_json(r.times)}};
    if (!r.reason.empty()) k["reason"] = r.reason;
    if (r.error) k["error"] = {{"category", category_name(r.error->category)}, {"message", r.error->message}};
    if (!r.warnings.empty()) k["warnings"] = r.warnings;
    if (r.kept_stale) k["kept_stale"] = true;
    if (r.shared_compile) k["shared_compile"] = true;
    if (!r.failed_phase.empty()) k["failed_phase"] = r.failed_phase;
    if (r.remembered) {
      k["remembered"] = true;
      k["failed_at"] = r.failed_at;
    }
    kernels.push_back(std::move(k));
  }
  json counts = json::object();
  for (auto o : {engine::Outcome::hit, engine::Outcome::compiled, engine::Outcome::stale_replaced,
                 engine::Outcome::failed, engine::Outcome::refused_write, engine::Outcome::remote_hit})
    counts[std::string(engine::outcome_name(o))] = result.count(o);
  json out = {
      {"schema", "kcache.build/1"}, {"kernels", std::move(kernels)},         {"counts", std::move(counts)},
      {"wall_ms", result.wall_ms},  {"bytes_written", result.bytes_written}, {"phases", phases_json(result.totals)}};
  if (!result.secondary.empty()) out["remotes"] = internal::remotes_value(result.secondary);
  out["remembered_failures"] = result.remembered();  // failed kernels reported without compiling
  return internal::json_text(out);
}

namespace {

/// "built here (built by kcache 0.1.0 on ci-7)", "imported from x.kcb at …".
std::string origin_text(const maintain::OriginSummary& o) {
  if (o.kind == OriginKind::built) return fmt::format("{} built here ({})", o.entries, o.detail);
  return fmt::format("{} imported from {}{}", o.entries, o.detail,
                     o.latest_written ? " at " + iso_time(o.latest_written) : "");
}

std::string time_or_never(std::uint64_t t) { return t ? iso_time(t) : "never recorded"; }

}  // namespace

std::string store_text(const maintain::StoreReport& report) {
  std::string out;
  if (report.namespaces.empty()) out += "store is empty\n";
  for (std::size_t i = 0; i < report.namespaces.size(); ++i) {
    const auto& info = report.namespaces[i];
    out +=
        fmt::format("namespace {}  ({} entries, {})\n", info.ns.name(), info.entries, human_bytes(info.payload_bytes));
    for (const auto& [k, v] : info.ns.record.fields) out += fmt::format("  {}: {}\n", k, v);
    if (i >= report.summaries.size()) continue;
    const auto& s = report.summaries[i];
    if (s.entries)
      out += fmt::format("  stored: {} in records; created {} .. {}; last used {}\n", human_bytes(s.record_bytes),
                         iso_time(s.oldest), iso_time(s.newest), time_or_never(s.last_used));
    for (const auto& o : s.origins) out += fmt::format("  origin: {}\n", origin_text(o));
    if (s.failure_records)
      out += fmt::format("  failure records: {} (kernels whose last build failed; `kcache inspect --why` says why)\n",
                         s.failure_records);
    if (s.foreign) out += fmt::format("  FOREIGN: {}\n", s.foreign_reason);
  }
  if (!report.entries.empty()) {
    std::size_t width = 6;
    for (const auto& e : report.entries) width = std::max(width, e.kernel.size());
    width = std::min<std::size_t>(width, 60);
    out += fmt::format("\n{:<{}}  {:<16}  {:>9}  {:<20}  {:<20}  {:<6}  {}\n", "kernel", width, "id", "size", "created",
                       "last used", "state", "origin");
    const std::string* group = nullptr;
    for (const auto& e : report.entries) {
      if (report.namespaces.size() > 1 && (!group || *group != e.ns)) out += fmt::format("[{}]\n", e.ns);
      group = &e.ns;
      out += fmt::format("{:<{}}  {:<16}  {:>9}  {:<20}  {:<20}  {:<6}  {}\n", e.kernel, width,
                         e.key.id.hex().substr(0, 16), human_bytes(e.bytes), iso_time(e.created),
                         e.last_used ? iso_time(e.last_used) : "-", maintain::entry_state_name(e.state),
                         e.origin_kind == OriginKind::built ? "built" : "imported: " + e.origin_detail);
      if (e.state == maintain::EntryState::stale)
        out += fmt::format("    why: {}\n", engine::describe_changes(e.changes, 4));
    }
  }
  for (const auto& [ns, kernel] : report.missing) out += fmt::format("missing {} (in {})\n", kernel, ns);
  if (report.with_manifest) {
    // The whole store's counts, also when a filter shows only some rows.
    auto n = [&](maintain::EntryState s) {
      auto it = report.state_counts.find(s);
      return it == report.state_counts.end() ? std::size_t{0} : it->second;
    };
    out += fmt::format("\n{}{} fresh, {} stale, {} orphan, {} missing{}\n", report.filtered ? "in the store: " : "",
                       n(maintain::EntryState::fresh), n(maintain::EntryState::stale), n(maintain::EntryState::orphan),
                       report.missing_count,
                       report.filtered ? fmt::format("; {} entr{} shown", report.entries.size(),
                                                     report.entries.size() == 1 ? "y" : "ies")
                                       : "");
  }
  for (const auto& d : report.damaged) out += fmt::format("DAMAGED {} {}: {}\n", d.ns, d.kernel, d.error.message);
  if (!report.damaged.empty())
    out += fmt::format(
        "{} damaged entries skipped (in no count above): run kcache verify; rebuild them (kcache build) or "
        "re-import them\n",
        report.damaged.size());
  return terminal_text(out);
}

std::string store_json(const maintain::StoreReport& report) {
  json namespaces = json::array();
  for (std::size_t i = 0; i < report.namespaces.size(); ++i) {
    const auto& info = report.namespaces[i];
    json record = json::object();
    for (const auto& [k, v] : info.ns.record.fields) record[k] = v;
    json row = {{"name", info.ns.name()},      {"backend", info.ns.backend}, {"fingerprint", info.ns.fingerprint},
                {"record", std::move(record)}, {"entries", info.entries},    {"bytes", info.payload_bytes}};
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
      row["failure_records"] = s.failure_records;
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
    if (report.with_manifest || e.state != maintain::EntryState::unknown)
      row["state"] = maintain::entry_state_name(e.state);
    if (!e.changes.empty()) row["changes"] = changes_json(e.changes);
    entries.push_back(std::move(row));
  }
  json missing = json::array();
  for (const auto& [ns, kernel] : report.missing) missing.push_back({{"namespace", ns}, {"kernel", kernel}});
  json damaged = json::array();
  for (const auto& d : report.damaged)
    damaged.push_back({{"namespace", d.ns},
                       {"kernel", d.kernel},
                       {"category", category_name(d.error.category)},
                       {"message", d.error.message}});
  json out = {{"schema", "kcache.inspect/1"}, {"namespaces", namespaces}, {"entries", entries}, {"damaged", damaged}};
  if (report.with_manifest) out["missing"] = missing;
  return internal::json_text(out);
}

std::string depfile_text(const std::string& depfile, std::string target, const std::vector<std::string>& deps) {
  auto escape = [](const std::string& path) {
    std::string out;
    for (char c : path) {
      if (c == ' ' || c == '#' || c == '\\') out += '\\';
      if (c == '$') out += '$';
      out += c;
    }
    return out;
  };
  if (target.empty()) {
    target = depfile;
    if (target.ends_with(".d")) target.resize(target.size() - 2);
  }
  std::string text = escape(target) + ":";
  for (const auto& d : deps) text += " \\\n  " + escape(d);
  return text + "\n";
}

std::string manifest_text(const manifest::Manifest& manifest) {
  std::string out;
  for (const auto& k : manifest.kernels) {
    std::string defines;
    for (const auto& [name, value] : k.defines) defines += fmt::format(" -D{}={}", name, value);
    out += fmt::format("{}  {} {} {}{}\n", k.name, definition::stage_name(k.stage), k.target, k.source, defines);
  }
  return terminal_text(out + fmt::format("{} kernels in {}\n", manifest.kernels.size(), manifest.path.string()));
}

std::string manifest_json(const manifest::Manifest& manifest) {
  json kernels = json::array();
  for (const auto& k : manifest.kernels) {
    json defines = json::object();
    for (const auto& [name, value] : k.defines) defines[name] = value;
    json variant = json::object();
    for (const auto& [name, value] : k.variant) variant[name] = value;
    json spec = json::array();
    for (const auto& c : k.spec_constants)
      spec.push_back({{"id", c.id}, {"type", c.type}, {"value", c.text}, {"bits", c.bits}});
    kernels.push_back({{"name", k.name},
                       {"base_name", k.base_name},
                       {"variant", std::move(variant)},
                       {"source", k.source},
                       {"entry", k.entry},
                       {"stage", definition::stage_name(k.stage)},
                       {"language", definition::language_name(k.language)},
                       {"defines", std::move(defines)},
                       {"include_dirs", k.include_dirs},
                       {"target", k.target},
                       {"optimize", definition::optimize_name(k.optimize)},
                       {"spec_constants", std::move(spec)},
                       {"line", k.manifest_line}});
  }
  json out = {{"schema", "kcache.manifest/1"},
              {"manifest", manifest.path.string()},
              {"root", manifest.root.string()},
              {"kernels", std::move(kernels)}};
  return internal::json_text(out);
}

}  // namespace kcache::report
