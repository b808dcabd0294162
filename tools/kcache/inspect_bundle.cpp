// `kcache inspect FILE.kcb`: a bundle's header, fingerprint, signature and
// entries, without importing it; then every entry and the whole-file digest
// are checked, so "ok" means `import` would accept the bytes.
#include "bundle_cli.hpp"
#include "cli.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kcache::cli {
namespace {

std::string_view kind_name(PayloadKind k) { return k == PayloadKind::spirv ? "spirv" : "pipeline-cache"; }

}  // namespace

int run_inspect_bundle(const std::string& path, bool json) {
  auto in = bundle_stream(path, false);
  auto opened = in.fd >= 0 ? bundle::BundleReader::open(in.fd) : bundle::BundleReader::open_file(in.path);
  if (!opened) return report_error(in.fd < 0 ? opened.error() : std::move(opened).error().context(in.label()));
  auto& reader = *opened;
  const auto& h = reader.header();
  // The entries are checked after the head is shown, so a damaged payload
  // still lets the user see what the bundle claims to be.
  auto next = [&]() -> Result<void> {
    while (KCACHE_TRY(reader.next())) {}
    return reader.finish();
  };
  auto checked = next();
  if (json) {
    nlohmann::json j = {{"bundle", path}, {"format_version", h.format_version}, {"created", h.created},
                        {"namespace", h.ns.name()}, {"backend", h.ns.backend}, {"fingerprint", h.ns.fingerprint},
                        {"fingerprint_record", nlohmann::json::object()}, {"tool_versions", nlohmann::json::object()},
                        {"compression", {{"codec", "zstd"}, {"level", h.compression.level},
                                         {"window_log", h.compression.window_log},
                                         {"long_distance", h.compression.long_distance},
                                         {"block_bytes", h.compression.block_bytes},
                                         {"blocks", h.block_entry_counts.size()}}},
                        {"signed", h.signature.has_value()},
                        {"signer", h.signature ? nlohmann::json(h.signature->key_id.hex()) : nlohmann::json()},
                        {"record_bytes", h.total_record_bytes()}, {"payload_bytes", h.total_payload_bytes()},
                        {"bundle_bytes", reader.bytes_read()}, {"entries", nlohmann::json::array()},
                        {"ok", checked.has_value()}};
    for (const auto& [k, v] : h.ns.record.fields) j["fingerprint_record"][k] = v;
    for (const auto& [k, v] : h.tool_versions) j["tool_versions"][k] = v;
    for (const auto& e : h.index)
      j["entries"].push_back({{"kernel", e.kernel}, {"id", e.key.id.hex()}, {"ir", e.key.ir.hex()},
                              {"kind", kind_name(e.payload_kind)}, {"bytes", e.payload_size},
                              {"record_bytes", e.record_size}, {"digest", e.digest.hex()}});
    if (!checked) j["error"] = checked.error().message;
    fmt::print("{}\n", j.dump(2));
  } else {
    std::string text = fmt::format("{}: kcache bundle, format version {}, created {} (unix)\n", in.label(),
                                   h.format_version, h.created);
    text += fmt::format("  namespace {}\n  fingerprint record:\n", h.ns.name());
    for (const auto& [k, v] : h.ns.record.fields) text += fmt::format("    {} = {}\n", k, v);
    text += "  tools:";
    for (const auto& [k, v] : h.tool_versions) text += fmt::format(" {} {};", k, v);
    text += fmt::format("\n  compression: zstd level {}, window 2^{}, long-distance {}, {} block(s)\n",
                        h.compression.level, h.compression.window_log, h.compression.long_distance ? "on" : "off",
                        h.block_entry_counts.size());
    text += h.signature ? fmt::format("  signed by key {} (valid for that key; `import --trust KEY.pub` decides "
                                      "whether it is trusted)\n",
                                      h.signature->key_id.hex())
                        : std::string("  unsigned\n");
    text += fmt::format("  {} entries: {} of modules, {} of records, {} bundle\n", h.index.size(),
                        human_bytes(h.total_payload_bytes()), human_bytes(h.total_record_bytes()),
                        human_bytes(reader.bytes_read()));
    for (const auto& e : h.index)
      text += fmt::format("    {:<14} {:>9}  {}  {}\n", kind_name(e.payload_kind), e.payload_size,
                          e.key.ir.hex().substr(0, 16), e.kernel);
    text += checked ? "  integrity: ok (every entry and the whole-file digest check out)\n" : "";
    fmt::print("{}", text);
  }
  if (!checked) return report_error(std::move(checked).error().context(in.label()));
  return k_exit_ok;
}

}  // namespace kcache::cli
