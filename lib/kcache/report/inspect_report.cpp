#include "kcache/report/inspect_report.hpp"

#include "kcache/report/render_internal.hpp"
#include "kcache/report/report.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace kcache::report {

namespace internal {

nlohmann::json changes_json(const std::vector<engine::Change>& changes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : changes)
    out.push_back({{"field", c.name},
                   {"kind", engine::change_kind_name(engine::change_kind(c.name))},
                   {"stored", c.old_value},
                   {"current", c.new_value}});
  return out;
}

}  // namespace internal

namespace {

using internal::changes_json;
using nlohmann::json;

std::string changes_text(const std::vector<engine::Change>& changes, std::string_view indent) {
  std::string out;
  for (const auto& c : changes)
    if (c.name.starts_with("input:") && c.old_value == engine::k_absent)
      out += fmt::format(
          "{}{}: include candidate {} now exists (nothing was there when stored; an #include now "
          "finds it first)\n",
          indent, c.name, c.name.substr(6));
    else out += fmt::format("{}{}: stored {} → current {}\n", indent, c.name, c.old_value, c.new_value);
  return out;
}

json explanation_json(const engine::Explanation& e) {
  json j = {{"kernel", e.kernel},
            {"namespace", e.ns},
            {"state", engine::freshness_name(e.state)},
            {"summary", engine::describe(e, 1000)},
            {"changes", changes_json(e.changes)},
            {"elsewhere", e.elsewhere}};
  j["compared"] =
      e.compared_ns.empty() ? json(nullptr) : json{{"namespace", e.compared_ns}, {"kernel", e.compared_kernel}};
  if (e.failure) {
    const Failure& f = e.failure->failure;
    j["failure"] = {{"phase", failure_phase_name(f.phase)},
                    {"category", category_name(f.category)},
                    {"message", f.message},
                    {"created", f.created},
                    {"origin", f.origin_detail},
                    {"current", e.failure->current},
                    {"remembered", engine::remembered_failure(e)},
                    {"changes", changes_json(e.failure->changes)}};
  }
  return j;
}

/// The stored failure of an explanation: what failed, where and when, and
/// whether a build would still report it without compiling.
std::string failure_text(const engine::Explanation& e) {
  if (!e.failure) return {};
  const Failure& f = e.failure->failure;
  std::string out;
  if (e.failure->current)
    out += fmt::format(
        "  failed in {} at {} ({}); remembered: a build reports it without compiling until an input "
        "changes (`kcache build --retry-failed` compiles it again):\n",
        failure_phase_name(f.phase), util::iso_time(f.created), f.origin_detail);
  else
    out += fmt::format("  failed in {} at {}; no longer current (the next build compiles it), since:\n",
                       failure_phase_name(f.phase), util::iso_time(f.created));
  if (!e.failure->current) out += changes_text(e.failure->changes, "    ");
  std::string_view message = f.message;
  out += fmt::format("    {}: ", category_name(f.category));
  for (std::size_t nl; (nl = message.find('\n')) != std::string_view::npos; message.remove_prefix(nl + 1))
    out += fmt::format("{}\n      ", message.substr(0, nl));
  out += fmt::format("{}\n", message);
  return out;
}

std::string explanation_text(const engine::Explanation& e) {
  std::string out;
  if (engine::remembered_failure(e) && e.state == engine::Freshness::missing) {
    out += fmt::format("{}: failed, not in store (namespace {})\n", e.kernel, e.ns);
    out += failure_text(e);
    return out;
  }
  switch (e.state) {
    case engine::Freshness::fresh: out += fmt::format("{}: fresh in {}\n", e.kernel, e.ns); break;
    case engine::Freshness::stale:
      out += fmt::format("{}: stale in {}; these inputs differ from the stored entry:\n", e.kernel, e.ns);
      break;
    case engine::Freshness::missing:
      out += fmt::format("{}: not in store (namespace {})\n", e.kernel, e.ns);
      if (e.compared_ns.empty())
        out += "  the store has no entry of this kernel or of its variants in any namespace: it was never built here\n";
      else if (e.compared_kernel == e.kernel)
        out += fmt::format("  {} has an entry of this kernel; it differs in:\n", e.compared_ns);
      else
        out += fmt::format("  nearest stored variant: {}{}; it differs in:\n", e.compared_kernel,
                           e.compared_ns == e.ns ? "" : " in " + e.compared_ns);
      break;
  }
  out += changes_text(e.changes, "    ");
  if (e.state != engine::Freshness::missing && !e.elsewhere.empty())
    out += fmt::format("  also stored in: {}\n", fmt::join(e.elsewhere, ", "));
  if (e.state != engine::Freshness::fresh) out += failure_text(e);
  return out;
}

/// The entry's validation flag, one line: a module stored under
/// validate = "known" or "off" says so wherever it is shown.
std::string validation_text(const Entry& e) {
  switch (e.validation) {
    case Validation::validated: return "  validation: spirv-val accepted it\n";
    case Validation::validator_unsupported:
      return fmt::format(
          "  validation: spirv-val did not know something it uses (stored under validate = \"known\"): {}\n",
          e.validation_note);
    case Validation::not_validated: return "  validation: not validated (validate = \"off\"; structure checked only)\n";
  }
  return "";
}

std::string_view origin_name(OriginKind k) { return k == OriginKind::built ? "built" : "imported"; }

}  // namespace

std::string kernel_text(const maintain::KernelReport& report, bool why_only) {
  std::string text;
  for (const auto& [ns, e, toolchain] : report.stored) {
    if (!why_only) {
      text +=
          fmt::format("{} in {}\n  id {}\n  ir {}\n  {} bytes, origin: {} ({})\n", report.kernel, ns, e.key.id.hex(),
                      e.key.ir.hex(), e.payload.size(), origin_name(e.origin_kind), e.origin_detail);
      if (e.payload_kind == PayloadKind::spirv) text += validation_text(e);
      if (!e.diagnostics.empty()) {
        text += "  compiler warnings:\n";
        for (std::string_view line : util::split_lines(e.diagnostics)) text += fmt::format("    {}\n", line);
      }
      text += "  inputs:\n";
      for (const auto& in : e.inputs)
        text += in.absent() ? fmt::format("    {:16}  {} (include candidate, nothing there)\n", "absent", in.path)
                            : fmt::format("    {}  {}\n", in.hash.hex().substr(0, 16), in.path);
      text += "  identity:\n";
      for (const auto& [k, v] : e.id_fields) text += fmt::format("    {} = {}\n", k, v);
      text += "  toolchain:\n";
      for (const auto& [k, v] : e.ir_fields) text += fmt::format("    {} = {}\n", k, v);
    } else if (!report.in_manifest) {
      // Without the kernel in a manifest, an entry can still be known stale:
      // another toolchain built it, so it can never hit here again.
      if (!toolchain.empty())
        text += fmt::format("{} in {}: stale: built by another toolchain; it can never hit here again:\n{}",
                            report.kernel, ns, changes_text(toolchain, "    "));
      else
        text += fmt::format("{} in {}: the toolchain matches; pass --manifest to compare its inputs and options\n",
                            report.kernel, ns);
    }
  }
  if (!report.manifest_path.empty() && !report.in_manifest)
    text += fmt::format("{} is not in {}: its entries are orphans (kcache gc --orphans removes them)\n", report.kernel,
                        report.manifest_path);
  if (report.explanation) {
    if (!why_only) text += "\n";
    text += explanation_text(*report.explanation);
  }
  return terminal_text(text);
}

std::string kernel_json(const maintain::KernelReport& report, bool why_only) {
  json out = {{"schema", "kcache.inspect-kernel/1"}, {"kernel", report.kernel}, {"entries", json::array()}};
  for (const auto& [ns, e, toolchain] : report.stored) {
    if (!why_only) {
      json j = {{"namespace", ns},
                {"id", e.key.id.hex()},
                {"ir", e.key.ir.hex()},
                {"bytes", e.payload.size()},
                {"created", e.created},
                {"origin", origin_name(e.origin_kind)},
                {"origin_detail", e.origin_detail}};
      if (e.payload_kind == PayloadKind::spirv) {
        j["validation"] = validation_name(e.validation);
        if (!e.validation_note.empty()) j["validation_note"] = e.validation_note;
      }
      if (!e.diagnostics.empty()) j["warnings"] = e.diagnostics;
      j["identity"] = json::object();
      for (const auto& [k, v] : e.id_fields) j["identity"][k] = v;
      j["toolchain"] = json::object();
      for (const auto& [k, v] : e.ir_fields) j["toolchain"][k] = v;
      j["inputs"] = json::array();
      for (const auto& in : e.inputs)
        j["inputs"].push_back(in.absent() ? json{{"path", in.path}, {"absent", true}}
                                          : json{{"path", in.path}, {"hash", in.hash.hex()}});
      out["entries"].push_back(std::move(j));
    } else if (!report.in_manifest) {
      out["entries"].push_back({{"namespace", ns},
                                {"state", toolchain.empty() ? "unknown" : "stale"},
                                {"changes", changes_json(toolchain)}});
    }
  }
  if (!report.manifest_path.empty() && !report.in_manifest) out["state"] = "orphan";
  if (report.explanation) out["why"] = explanation_json(*report.explanation);
  return internal::json_text(out);
}

std::string why_text(const std::vector<engine::Explanation>& all) {
  std::string text;
  std::size_t fresh = 0, remembered = 0;
  for (const auto& e : all) {
    if (e.state == engine::Freshness::fresh) ++fresh;
    else text += fmt::format("{}: {}\n", e.kernel, engine::describe(e));
    if (engine::remembered_failure(e)) ++remembered;
  }
  return terminal_text(text +
                       fmt::format("{} of {} kernels fresh; {}{} would be rebuilt\n", fresh, all.size(),
                                   remembered ? fmt::format("{} failed (remembered, not rebuilt); ", remembered) : "",
                                   all.size() - fresh - remembered));
}

std::string why_json(const std::vector<engine::Explanation>& all) {
  json out = {{"schema", "kcache.why/1"}, {"kernels", json::array()}};
  std::size_t fresh = 0, remembered = 0;
  for (const auto& e : all) {
    if (e.state == engine::Freshness::fresh) ++fresh;
    else out["kernels"].push_back(explanation_json(e));
    if (engine::remembered_failure(e)) ++remembered;
  }
  out["fresh"] = fresh;
  out["remembered_failures"] = remembered;
  out["total"] = all.size();
  return internal::json_text(out);
}

std::string no_foreign_text(bool with_manifest) {
  return terminal_text(
      fmt::format("no foreign namespaces: every namespace matches a local device{}\n",
                  with_manifest ? " or a target the manifest uses" : " (spirv namespaces are portable)"));
}

}  // namespace kcache::report
