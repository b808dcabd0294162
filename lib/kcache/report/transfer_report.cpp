// Reports of export, import, merge and bundle inspection (contracts in
// transfer_report.hpp).
#include "kcache/report/transfer_report.hpp"

#include "kcache/report/render_internal.hpp"

#include "kcache/util/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kcache::report {
namespace {

using nlohmann::json;

using util::human_bytes;

std::string_view kind_name(PayloadKind k) { return payload_kind_name(k); }

json key_or_null(const std::optional<bundle::KeyId>& key) { return key ? json(key->hex()) : json(); }

}  // namespace

std::string export_text(const transfer::ExportResult& result, std::string_view output_label) {
  std::string out =
      fmt::format("exported {} entries of {} ({} of modules, {} of records) to {}", result.entries, result.ns.name(),
                  human_bytes(result.payload_bytes), human_bytes(result.record_bytes), output_label);
  if (result.bundle_bytes)
    out += fmt::format(": {} (records/bundle {:.1f}x)", human_bytes(result.bundle_bytes),
                       static_cast<double>(result.record_bytes) / static_cast<double>(result.bundle_bytes));
  if (result.kept)
    out += fmt::format("; a delta: {} entries added or replaced, {} kept (not shipped), {} removed", result.entries,
                       *result.kept, result.removed.value_or(0));
  out += fmt::format("\n{}\n", result.signer ? "signed by key " + result.signer->hex() : std::string("unsigned"));
  return terminal_text(out);
}

namespace {

json export_object(const transfer::ExportResult& result, std::string_view output) {
  json j = {{"namespace", result.ns.name()},
            {"entries", result.entries},
            {"record_bytes", result.record_bytes},
            {"payload_bytes", result.payload_bytes},
            {"output", std::string(output)},
            {"bundle_bytes", result.bundle_bytes},
            {"signed", result.signer.has_value()},
            {"signer", key_or_null(result.signer)},
            {"damaged", json::array()}};
  if (result.kept) j["delta"] = {{"kept", *result.kept}, {"removed", result.removed.value_or(0)}};
  for (const auto& d : result.damaged)
    j["damaged"].push_back({{"namespace", d.ns},
                            {"kernel", d.kernel},
                            {"category", category_name(d.error.category)},
                            {"message", d.error.message}});
  return j;
}

}  // namespace

std::string export_json(const transfer::ExportResult& result, std::string_view output) {
  return internal::json_text(export_object(result, output));
}

std::string export_damaged_text(const transfer::ExportResult& result) {
  if (result.damaged.empty()) return {};
  std::string names;
  for (const auto& d : result.damaged) names += (names.empty() ? "" : ", ") + d.kernel;
  return terminal_text(
      fmt::format("kcache: warning: {} damaged entries not exported: {} (run kcache verify; rebuild them)\n",
                  result.damaged.size(), names));
}

std::string deploy_text(const transfer::DeployResult& result, std::string_view output) {
  std::string out = fmt::format(
      "wrote {}: {} kernels ({} with a pipeline-cache blob, {} CUDA), {}{}, {}\n", output, result.kernels, result.blobs,
      result.cuda, human_bytes(result.bytes),
      result.class_cache_bytes ? fmt::format(" (a merged class cache of {})", human_bytes(result.class_cache_bytes))
                               : std::string(),
      result.signer ? "signed by key " + result.signer->hex() : std::string("unsigned"));
  for (const auto& r : result.refused) out += fmt::format("left out: {}\n", r);
  return terminal_text(out);
}

std::string deploy_json(const transfer::DeployResult& result, std::string_view output) {
  json j = {{"schema", "kcache.deploy/1"},
            {"output", std::string(output)},
            {"kernels", result.kernels},
            {"blobs", result.blobs},
            {"cuda", result.cuda},
            {"bytes", result.bytes},
            {"class_cache_bytes", result.class_cache_bytes},
            {"signed", result.signer.has_value()},
            {"signer", key_or_null(result.signer)},
            {"refused", result.refused}};
  return internal::json_text(j);
}

std::string release_export_text(const transfer::ReleaseExportResult& result, std::string_view output_label) {
  std::string out;
  for (auto section : result.sections) {
    section.bundle_bytes = 0;
    out += export_text(section, output_label);
  }
  out += fmt::format("release of {} namespaces", result.sections.size());
  if (result.bundle_bytes) out += ": " + human_bytes(result.bundle_bytes);
  return out + "\n";
}

std::string release_export_json(const transfer::ReleaseExportResult& result, std::string_view output) {
  json j = {{"output", std::string(output)}, {"bundle_bytes", result.bundle_bytes}, {"sections", json::array()}};
  for (const auto& section : result.sections) j["sections"].push_back(export_object(section, output));
  return internal::json_text(j);
}

std::string oci_push_text(const remote::OciPushResult& r, std::string_view file, std::string_view ref) {
  return terminal_text(
      fmt::format("pushed {} to {}: {} layers ({} blobs sent, {} already there), {} sent\nmanifest {}\n", file, ref,
                  r.layers, r.uploaded, r.present, human_bytes(r.bytes_sent), r.manifest_digest));
}

std::string oci_push_json(const remote::OciPushResult& r, std::string_view file, std::string_view ref) {
  return internal::json_text(json{{"reference", std::string(ref)},
                                  {"file", std::string(file)},
                                  {"manifest_digest", r.manifest_digest},
                                  {"layers", r.layers},
                                  {"uploaded", r.uploaded},
                                  {"present", r.present},
                                  {"bytes_sent", r.bytes_sent}});
}

std::string oci_pull_text(const remote::OciPullResult& r, std::string_view ref, std::string_view file) {
  return terminal_text(fmt::format("pulled {} to {}: {} layers, {}; manifest {}\n", ref, file, r.layers,
                                   human_bytes(r.bytes), r.manifest_digest));
}

std::string import_text(const transfer::ImportResult& result, std::string_view bundle_label) {
  const auto& r = result;
  std::string out;
  for (const auto& s : r.sections)
    out += fmt::format("{} {}: {} entries of {}, {}; fingerprint matches {}\n", r.dry_run ? "checked" : "imported",
                       bundle_label, s.entries, s.ns.name(),
                       s.signer ? "signed by trusted key " + s.signer->hex()
                       : s.signed_by
                           ? "signed by key " + s.signed_by->hex() + " (no --trust given: not checked against any)"
                           : std::string("unsigned"),
                       s.target);
  out += fmt::format("{}imported {}, already present {}, replaced (stale) {}, refused {}{}{}\n",
                     r.dry_run ? "dry run, would have: " : "", r.imported, r.already_present, r.replaced,
                     r.refused.size(), r.removed ? fmt::format(", removed (delta) {}", r.removed) : "",
                     r.dry_run ? " — nothing written" : "");
  if (!r.not_removed.empty()) {
    std::string names;
    for (std::size_t i = 0; i < r.not_removed.size() && i < 10; ++i)
      names += fmt::format("{}'{}'", i ? ", " : "", r.not_removed[i]);
    if (r.not_removed.size() > 10) names += fmt::format(" and {} more", r.not_removed.size() - 10);
    out += fmt::format(
        "kept {} kernels the delta removes: the store's entry is not the build its base had (another key, or built "
        "after the delta was written): {}\n",
        r.not_removed.size(), names);
  }
  return terminal_text(out);
}

std::string import_json(const transfer::ImportResult& result, std::string_view bundle) {
  const auto& r = result;
  const auto& h = r.header;
  json j = {{"bundle", std::string(bundle)},
            {"namespace", h.ns.name()},
            {"entries", r.total_entries()},
            {"target", r.target},
            {"signed", h.signature.has_value()},
            {"signer", key_or_null(r.signer)},
            {"dry_run", r.dry_run},
            {"written", r.written},
            {"counts",
             {{"imported", r.imported},
              {"already_present", r.already_present},
              {"replaced", r.replaced},
              {"removed", r.removed},
              {"refused", r.refused.size()}}},
            {"refused", json::array()},
            {"not_removed", r.not_removed}};
  for (const auto& x : r.refused)
    j["refused"].push_back(
        {{"kernel", x.kernel}, {"category", category_name(x.error.category)}, {"message", x.error.message}});
  j["sections"] = json::array();
  for (const auto& s : r.sections)
    j["sections"].push_back({{"namespace", s.ns.name()},
                             {"entries", s.entries},
                             {"target", s.target},
                             {"signed", s.signed_by.has_value()},
                             {"signer", key_or_null(s.signer)}});
  return internal::json_text(j);
}

std::string import_refusals_text(const transfer::ImportResult& result) {
  std::string out;
  for (const auto& x : result.refused)
    out += fmt::format("kcache: refused entry '{}': {}\n", x.kernel, x.error.message);
  return terminal_text(out);
}

std::string merge_text(const bundle::MergeResult& result, std::string_view output_label) {
  const auto& r = result;
  if (!r.conflicts.empty()) return {};
  return terminal_text(fmt::format("merged {} bundles of {}: {} entries, {} duplicates dropped → {}{}\n", r.inputs,
                                   r.ns.name(), r.entries, r.duplicates, output_label,
                                   r.bundle_bytes ? fmt::format(" ({})", human_bytes(r.bundle_bytes)) : ""));
}

std::string merge_json(const bundle::MergeResult& result, std::string_view output) {
  const auto& r = result;
  json j = {{"namespace", r.ns.name()},       {"inputs", r.inputs},
            {"entries", r.entries},           {"duplicates", r.duplicates},
            {"written", r.conflicts.empty()}, {"output", std::string(output)},
            {"bundle_bytes", r.bundle_bytes}, {"signer", key_or_null(r.signer)},
            {"conflicts", json::array()}};
  for (const auto& c : r.conflicts)
    j["conflicts"].push_back({{"kernel", c.kernel},
                              {"first", c.first_bundle},
                              {"second", c.second_bundle},
                              {"first_key", c.first_key.id.hex() + "/" + c.first_key.ir.hex()},
                              {"second_key", c.second_key.id.hex() + "/" + c.second_key.ir.hex()},
                              {"same_key", c.same_key},
                              {"difference", c.difference}});
  return internal::json_text(j);
}

std::string merge_conflicts_text(const bundle::MergeResult& result) {
  if (result.conflicts.empty()) return {};
  std::string out;
  for (const auto& c : result.conflicts) {
    if (c.same_key)
      out += fmt::format(
          "kcache: conflict: kernel '{}' has the same key (id {}, ir {}) in both {} and {}, but {} (a "
          "non-reproducible build? `kcache build --check-reproducible` names such kernels)\n",
          c.kernel, c.first_key.id.hex().substr(0, 16), c.first_key.ir.hex().substr(0, 16), c.first_bundle,
          c.second_bundle, c.difference);
    else out += fmt::format("kcache: conflict: kernel '{}' was built differently: {}\n", c.kernel, c.difference);
  }
  out += fmt::format(
      "kcache: error: {} conflicting kernels; nothing written. Rebuild them from one source, or leave "
      "out the stale bundle\n",
      result.conflicts.size());
  return terminal_text(out);
}

std::string bundle_text(const bundle::BundleSummary& summary, std::string_view bundle_label) {
  const auto& h = summary.header;
  std::string text = fmt::format("{}: kcache bundle, format version {}, created {}\n", bundle_label, h.format_version,
                                 util::iso_time(h.created));
  text += fmt::format("  namespace {}\n  fingerprint record:\n", h.ns.name());
  for (const auto& [k, v] : h.ns.record.fields) text += fmt::format("    {} = {}\n", k, v);
  text += "  tools:";
  for (const auto& [k, v] : h.tool_versions) text += fmt::format(" {} {};", k, v);
  text +=
      fmt::format("\n  compression: zstd level {}, window 2^{}, long-distance {}, {} block(s)\n", h.compression.level,
                  h.compression.window_log, h.compression.long_distance ? "on" : "off", h.block_entry_counts.size());
  text += h.signature ? fmt::format(
                            "  signed by key {} (valid for that key; `import --trust KEY.pub` decides "
                            "whether it is trusted)\n",
                            h.signature->key_id.hex())
                      : std::string("  unsigned\n");
  if (h.delta)
    text += fmt::format(
        "  a delta on the bundle {}with BLAKE2b {} ({} entries): {} kept, {} removed{}, the entries "
        "below added or replaced\n",
        h.delta->base_name.empty() ? std::string() : fmt::format("'{}' ", h.delta->base_name),
        h.delta->base_digest.hex(), h.delta->base_entries, h.delta->kept.size(), h.delta->removed.size(),
        h.format_version >= 6 ? " (with their keys in it)" : " (by name only: format 5)");
  text += fmt::format("  {} entries: {} of modules, {} of records, {} bundle\n", h.index.size(),
                      human_bytes(h.total_payload_bytes()), human_bytes(h.total_record_bytes()),
                      human_bytes(summary.bundle_bytes));
  for (const auto& e : h.index)
    text += fmt::format("    {:<14} {:>9}  {}  {}\n", kind_name(e.payload_kind), e.payload_size,
                        e.key.ir.hex().substr(0, 16), e.kernel);
  if (!summary.error) text += "  integrity: ok (every entry and the whole-file digest check out)\n";
  return terminal_text(text);
}

namespace {

json bundle_object(const bundle::BundleSummary& summary, std::string_view bundle) {
  const auto& h = summary.header;
  json j = {{"bundle", std::string(bundle)},
            {"format_version", h.format_version},
            {"created", h.created},
            {"namespace", h.ns.name()},
            {"backend", h.ns.backend},
            {"fingerprint", h.ns.fingerprint},
            {"fingerprint_record", json::object()},
            {"tool_versions", json::object()},
            {"compression",
             {{"codec", "zstd"},
              {"level", h.compression.level},
              {"window_log", h.compression.window_log},
              {"long_distance", h.compression.long_distance},
              {"block_bytes", h.compression.block_bytes},
              {"blocks", h.block_entry_counts.size()}}},
            {"signed", h.signature.has_value()},
            {"signer", h.signature ? json(h.signature->key_id.hex()) : json()},
            {"record_bytes", h.total_record_bytes()},
            {"payload_bytes", h.total_payload_bytes()},
            {"bundle_bytes", summary.bundle_bytes},
            {"entries", json::array()},
            {"ok", !summary.error.has_value()}};
  for (const auto& [k, v] : h.ns.record.fields) j["fingerprint_record"][k] = v;
  for (const auto& [k, v] : h.tool_versions) j["tool_versions"][k] = v;
  for (const auto& e : h.index)
    j["entries"].push_back({{"kernel", e.kernel},
                            {"id", e.key.id.hex()},
                            {"ir", e.key.ir.hex()},
                            {"kind", kind_name(e.payload_kind)},
                            {"bytes", e.payload_size},
                            {"record_bytes", e.record_size},
                            {"digest", e.digest.hex()}});
  if (h.delta)
    j["delta"] = {{"base_digest", h.delta->base_digest.hex()},
                  {"base_name", h.delta->base_name},
                  {"base_entries", h.delta->base_entries},
                  {"kept", h.delta->kept.size()},
                  {"removed", h.delta->removed}};
  if (summary.error) j["error"] = summary.error->message;
  return j;
}

}  // namespace

std::string bundle_json(const bundle::BundleSummary& summary, std::string_view bundle) {
  return internal::json_text(bundle_object(summary, bundle));
}

std::string release_text(const bundle::ReleaseSummary& summary, std::string_view bundle_label) {
  if (!summary.release)
    return summary.sections.empty() ? std::string() : bundle_text(summary.sections[0], bundle_label);
  const auto& r = *summary.release;
  std::string text =
      terminal_text(fmt::format("{}: release bundle (format version {}), created {}, {} sections:\n", bundle_label,
                                bundle::k_release_format_version, util::iso_time(r.created), r.sections.size()));
  for (std::size_t i = 0; i < r.sections.size(); ++i) {
    const auto& s = r.sections[i];
    text += terminal_text(fmt::format("  section {}: {} ({} entries, {}, BLAKE2b {})\n", i + 1, s.ns.name(), s.entries,
                                      human_bytes(s.size), s.digest.hex().substr(0, 16)));
  }
  for (std::size_t i = 0; i < summary.sections.size(); ++i)
    text +=
        bundle_text(summary.sections[i], fmt::format("{}, section {} of {}", bundle_label, i + 1, r.sections.size()));
  return text;
}

std::string release_json(const bundle::ReleaseSummary& summary, std::string_view bundle) {
  if (!summary.release) return summary.sections.empty() ? std::string() : bundle_json(summary.sections[0], bundle);
  const auto& r = *summary.release;
  bool ok = !summary.error && summary.sections.size() == r.sections.size();
  json j = {{"bundle", std::string(bundle)},
            {"format_version", bundle::k_release_format_version},
            {"created", r.created},
            {"sections", json::array()}};
  for (std::size_t i = 0; i < r.sections.size(); ++i) {
    json s = i < summary.sections.size() ? bundle_object(summary.sections[i], bundle) : json::object();
    s["section_bytes"] = r.sections[i].size;
    s["section_digest"] = r.sections[i].digest.hex();
    if (i < summary.sections.size() && summary.sections[i].error) ok = false;
    j["sections"].push_back(std::move(s));
  }
  j["ok"] = ok;
  if (summary.error) j["error"] = summary.error->message;
  return internal::json_text(j);
}

}  // namespace kcache::report
