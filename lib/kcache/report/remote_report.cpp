// Reports of remote caches (contracts in remote_report.hpp).
#include "kcache/report/remote_report.hpp"

#include "kcache/report/render_internal.hpp"
#include "kcache/report/report.hpp"

#include "kcache/util/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace kcache::report {
namespace {

using nlohmann::json;
using util::human_bytes;

json error_json(const std::optional<Error>& e) {
  if (!e) return json();
  return {{"category", category_name(e->category)}, {"message", e->message}};
}

json remote_json(const engine::SecondaryStats& s) {
  return {{"remote", s.name},
          {"writable", s.writable},
          {"authenticated", s.authenticated},
          {"hits", s.hits},
          {"misses", s.misses},
          {"refused", s.refused},
          {"errors", s.errors},
          {"writes", s.writes},
          {"bytes_read", s.bytes_read},
          {"bytes_written", s.bytes_written},
          {"skipped", s.skipped.empty() ? json() : json(s.skipped)},
          {"refusals", s.refusals},
          {"warnings", s.warnings}};
}

}  // namespace

std::string remotes_text(const std::vector<engine::SecondaryStats>& remotes) {
  std::string out;
  for (const auto& s : remotes) {
    out += fmt::format(
        "remote {}: {} hits, {} misses, {} refused, {} failed requests, {} written; {} read, {} written{}\n", s.name,
        s.hits, s.misses, s.refused, s.errors, s.writes, human_bytes(s.bytes_read), human_bytes(s.bytes_written),
        s.writable ? "" : " (read-only)");
    if (!s.authenticated && s.hits)
      out += fmt::format(
          "  note: values from {} were not authenticated (give --trust KEY.pub to accept only signed "
          "ones)\n",
          s.name);
    for (const auto& r : s.refusals) out += fmt::format("  refused {}\n", r);
    if (s.refused > s.refusals.size()) out += fmt::format("  ... and {} more refused\n", s.refused - s.refusals.size());
    for (const auto& w : s.warnings) out += fmt::format("  warning: {}\n", w);
    if (s.errors > s.warnings.size())
      out += fmt::format("  ... and {} more failed requests\n", s.errors - s.warnings.size());
    if (!s.skipped.empty()) out += fmt::format("  warning: skipped for the rest of the run after {}\n", s.skipped);
  }
  return terminal_text(out);
}

namespace internal {
json remotes_value(const std::vector<engine::SecondaryStats>& remotes) {
  json out = json::array();
  for (const auto& s : remotes) out.push_back(remote_json(s));
  return out;
}
}  // namespace internal

std::string remote_check_text(const remote::CheckResult& r) {
  std::string out = fmt::format("remote {}\n", r.name);
  out += r.reachable ? "  reachable: yes\n"
                     : fmt::format("  reachable: no: {}\n", r.reach_error ? r.reach_error->message : "");
  if (r.reachable) {
    if (r.read_only) out += "  writable: not tried (read-only)\n";
    else if (r.writable) out += "  writable: yes\n";
    else out += fmt::format("  writable: no: {}\n", r.write_error ? r.write_error->message : "");
    if (r.values) {
      std::uint64_t total = 0;
      for (const auto& [ns, n] : *r.values) total += n;
      out += fmt::format("  values: {}\n", total);
      for (const auto& [ns, n] : *r.values) out += fmt::format("    {}: {}\n", ns, n);
    } else if (r.count_error) {
      out += fmt::format("  values: cannot count: {}\n", r.count_error->message);
    } else {
      out += "  values: the server cannot list its keys (HTTP)\n";
    }
  }
  return terminal_text(out);
}

std::string remote_check_json(const remote::CheckResult& r) {
  json values;
  if (r.values) {
    values = json::object();
    for (const auto& [ns, n] : *r.values) values[ns] = n;
  }
  json j = {{"schema", "kcache.remote-check/1"},
            {"remote", r.name},
            {"reachable", r.reachable},
            {"reach_error", error_json(r.reach_error)},
            {"read_only", r.read_only},
            {"writable", r.writable},
            {"write_error", error_json(r.write_error)},
            {"values", values},
            {"count_error", error_json(r.count_error)}};
  return internal::json_text(j);
}

std::string remote_setting_text(const std::string& file, const std::vector<remote::RemoteUrl>& remotes) {
  if (remotes.empty())
    return terminal_text(
        fmt::format("no remotes of its own (`kcache remote add URL` adds one; {} holds them)\n", file));
  std::string out;
  for (const auto& u : remotes) {
    std::vector<std::string> notes;
    if (u.read_only) notes.push_back("read-only");
    if (!u.trust.empty())
      notes.push_back(
          fmt::format("signed values only: {} trusted key{}", u.trust.size(), u.trust.size() == 1 ? "" : "s"));
    out += fmt::format("{}{}\n", u.shown(), notes.empty() ? "" : fmt::format("  ({})", fmt::join(notes, "; ")));
  }
  return terminal_text(out);
}

std::string remote_setting_json(const std::string& file, const std::vector<remote::RemoteUrl>& remotes) {
  json list = json::array();
  for (const auto& u : remotes) {
    json trust = json::array();
    for (const auto& k : u.trust) trust.push_back(util::to_hex(k));
    list.push_back({{"url", u.shown()}, {"read_only", u.read_only}, {"trust", trust}});
  }
  json j = {{"schema", "kcache.remote-list/1"}, {"file", file}, {"remotes", list}};
  return internal::json_text(j);
}

}  // namespace kcache::report
