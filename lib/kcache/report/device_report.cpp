// Device backend reports (contracts in device_report.hpp).
#include "kcache/report/device_report.hpp"

#include "kcache/report/render_internal.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace kcache::report {
namespace {

// ordered: the fingerprint record keeps its persisted field order.
using ordered_json = nlohmann::ordered_json;
using maintain::VerifyStatus;

ordered_json record_json(const FingerprintRecord& record) {
  ordered_json out = ordered_json::object();
  for (const auto& [k, v] : record.fields) out[k] = v;
  return out;
}

struct Sums {
  double with_blob = 0, without_blob = 0;
  std::size_t with_n = 0, both_n = 0;
};

Sums sums(const maintain::DeviceVerify& v) {
  Sums s;
  for (const auto& r : v.rows) {
    if (r.create_ms >= 0) s.with_blob += r.create_ms, ++s.with_n;
    if (r.empty_cache_ms >= 0) s.without_blob += r.empty_cache_ms, ++s.both_n;
  }
  return s;
}

std::string device_line(const device::DeviceInfo& d) {
  return fmt::format("{} (driver {}, fingerprint {})", d.name, d.driver_version_text(), d.fingerprint());
}

}  // namespace

std::string devices_text(const std::vector<device::DeviceInfo>& devices, std::optional<std::uint32_t> chosen) {
  std::string out;
  for (const auto& d : devices) {
    out += fmt::format("{}: {}{}\n", d.index, d.name, chosen && *chosen == d.index ? "  (default)" : "");
    out += fmt::format("  type: {}, API {}, driver {} ({})\n", device::device_type_name(d.type), d.api_version_text(),
                       d.driver_version_text(), d.driver_name.empty() ? "driver name not reported" : d.driver_name);
    out += fmt::format("  fingerprint: {}  (namespace {})\n", d.fingerprint(), d.ns.name());
    out += fmt::format("  hit/miss verify: {}\n", d.fail_on_compile_required
                                                      ? "yes (pipelineCreationCacheControl)"
                                                      : "no (verify compares creation times instead)");
    for (const auto& [k, v] : d.record().fields) out += fmt::format("    {}: {}\n", k, v.empty() ? "-" : v);
    out += fmt::format(
        "  this card: deviceUUID {} (provenance: every card of this GPU model and driver shares the "
        "namespace)\n",
        device::uuid_text(d.device_uuid));
  }
  return terminal_text(out);
}

std::string devices_json(const std::vector<device::DeviceInfo>& devices, std::optional<std::uint32_t> chosen,
                         const cuda_device::Survey* cuda, const std::string* vulkan_error) {
  ordered_json list = ordered_json::array();
  for (const auto& d : devices) {
    list.push_back({{"index", d.index},
                    {"name", d.name},
                    {"type", device::device_type_name(d.type)},
                    {"api_version", d.api_version_text()},
                    {"driver_version", d.driver_version_text()},
                    {"driver_version_raw", d.driver_version},
                    {"driver_name", d.driver_name},
                    {"fingerprint", d.fingerprint()},
                    {"namespace", d.ns.name()},
                    {"default", chosen && *chosen == d.index},
                    {"fail_on_compile_required", d.fail_on_compile_required},
                    {"record", record_json(d.record())},
                    {"device_uuid", device::uuid_text(d.device_uuid)}});
  }
  ordered_json out = {{"schema", "kcache.devices/1"}, {"devices", std::move(list)}};
  if (vulkan_error) out["vulkan_error"] = *vulkan_error;
  if (cuda) {
    ordered_json c = {{"available", cuda->available()}, {"library", cuda->library}};
    if (!cuda->available()) c["reason"] = cuda->absent;
    if (cuda->cuda_version) c["cuda_version"] = cuda_device::cuda_version_text(cuda->cuda_version);
    ordered_json cl = ordered_json::array();
    for (const auto& d : cuda->devices)
      cl.push_back({{"ordinal", d.ordinal},
                    {"selector", fmt::format("cuda:{}", d.ordinal)},
                    {"name", d.name},
                    {"compute_capability", d.compute_capability()},
                    {"arch", d.native_arch()},
                    {"cuda_version", cuda_device::cuda_version_text(d.cuda_version)},
                    {"cuda_version_raw", d.cuda_version},
                    {"driver_version", d.driver_version},
                    {"total_memory_bytes", d.total_memory}});
    c["devices"] = std::move(cl);
    out["cuda"] = std::move(c);
  }
  return internal::json_text(out);
}

std::string cuda_devices_text(const cuda_device::Survey& cuda, bool verbose) {
  if (!cuda.available()) return verbose ? terminal_text(fmt::format("cuda: not available: {}\n", cuda.absent)) : "";
  std::string out;
  for (const auto& d : cuda.devices) {
    out += fmt::format("cuda:{}: {}\n", d.ordinal, d.name);
    out += fmt::format(
        "  compute capability {} (runs sm_{}x cubins up to {}, PTX up to compute_{}{}), "
        "CUDA {} driver API{}\n",
        d.compute_capability(), d.cc_major, d.native_arch(), d.cc_major, d.cc_minor,
        cuda_device::cuda_version_text(d.cuda_version),
        d.driver_version.empty() ? "" : fmt::format(", NVIDIA driver {}", d.driver_version));
    if (d.total_memory) out += fmt::format("  memory: {:.1f} GiB\n", static_cast<double>(d.total_memory) / (1u << 30));
  }
  return terminal_text(out);
}

std::string device_stage_summary(const engine::BuildResult& result, const device::DeviceInfo& device) {
  using engine::Outcome;
  const std::string ns = device.ns.name();
  std::size_t n = 0, hit = 0, remote = 0, built = 0, failed = 0;
  double create_ms = 0;
  for (const auto& r : result.receipts) {
    if (r.ns != ns) continue;
    ++n;
    if (r.outcome == Outcome::hit) ++hit;
    else if (r.outcome == Outcome::remote_hit) ++remote;
    else if (r.outcome == Outcome::compiled || r.outcome == Outcome::stale_replaced) ++built;
    else if (r.outcome == Outcome::failed) ++failed;
    create_ms += r.times[Phase::pipeline].wall_ms;
  }
  return terminal_text(fmt::format(
      "device {}: {} pipelines: {} hit{}, {} created, {} failed; pipeline creation {:.1f} ms in all\n",
      device_line(device), n, hit, remote ? fmt::format(", {} from remotes", remote) : "", built, failed, create_ms));
}

std::string store_check_text(const maintain::StoreCheck& check) {
  std::string out;
  for (const auto& p : check.problems) {
    if (p.kernel.empty()) out += fmt::format("PROBLEM namespace {}\n", p.ns);
    else out += fmt::format("PROBLEM {} (in {})\n", p.kernel, p.ns);
    out += fmt::format("  {}: {}\n", category_name(p.error.category), p.error.message);
  }
  for (const auto& w : check.weak)
    out += fmt::format("WEAK {} (in {}): stored under validate = \"{}\" (not spirv-val's strict check)\n", w.kernel,
                       w.ns, w.policy);
  out += fmt::format("{} namespaces, {} entries{} checked in {:.2f} s: {}\n", check.namespaces, check.entries,
                     check.failures ? fmt::format(" and {} failure records", check.failures) : "", check.wall_ms / 1000,
                     check.problems.empty() ? "no problems" : fmt::format("{} problems", check.problems.size()));
  return terminal_text(out);
}

std::string store_check_json(const maintain::StoreCheck& check) {
  ordered_json problems = ordered_json::array();
  for (const auto& p : check.problems)
    problems.push_back({{"namespace", p.ns},
                        {"kernel", p.kernel},
                        {"category", category_name(p.error.category)},
                        {"message", p.error.message}});
  ordered_json out = {{"schema", "kcache.verify/1"},     {"mode", "store"},
                      {"namespaces", check.namespaces},  {"entries", check.entries},
                      {"problems", std::move(problems)}, {"wall_ms", check.wall_ms}};
  out["failure_records"] = check.failures;
  ordered_json weak = ordered_json::array();
  for (const auto& w : check.weak) weak.push_back({{"namespace", w.ns}, {"kernel", w.kernel}, {"validate", w.policy}});
  out["weak_validation"] = std::move(weak);
  return internal::json_text(out);
}

std::string device_verify_text(const maintain::DeviceVerify& v, const device::DeviceInfo& device, bool all) {
  std::string out;
  for (const auto& r : v.rows) {
    const bool plain =
        (r.status == VerifyStatus::hit || r.status == VerifyStatus::timed || r.status == VerifyStatus::miss) &&
        !r.blob_refused;
    if (plain && !all) continue;
    std::string times;
    if (r.create_ms >= 0) times = fmt::format("  {:.3f} ms", r.create_ms);
    if (r.empty_cache_ms >= 0) times += fmt::format(" (empty cache {:.3f} ms)", r.empty_cache_ms);
    out += fmt::format("{:<7} {}{}\n", verify_status_name(r.status), r.kernel, times);
    if (!r.message.empty()) out += fmt::format("  {}\n", r.message);
  }
  out += fmt::format("device {}\n", device_line(device));
  const Sums s = sums(v);
  if (v.timed) {
    out += fmt::format("{} pipelines (timed: no hit/miss answers): {} created, {} refused, {} failed\n", v.rows.size(),
                       v.count(VerifyStatus::timed), v.count(VerifyStatus::refused), v.count(VerifyStatus::failure));
    if (s.both_n > 0)
      out += fmt::format("creation: {:.1f} ms with the blobs, {:.1f} ms with empty caches ({:.1f}x)\n", s.with_blob,
                         s.without_blob, s.with_blob > 0 ? s.without_blob / s.with_blob : 0.0);
  } else {
    out +=
        fmt::format("{} pipelines: {} hit, {} miss, {} refused, {} failed\n", v.rows.size(), v.count(VerifyStatus::hit),
                    v.count(VerifyStatus::miss), v.count(VerifyStatus::refused), v.count(VerifyStatus::failure));
    if (s.with_n > 0) out += fmt::format("creation from the blobs: {:.1f} ms in all\n", s.with_blob);
    if (const std::size_t misses = v.count(VerifyStatus::miss); misses > 0)
      out += fmt::format(
          "{} misses: the driver would compile these pipelines again (--all lists them); expected on\n"
          "software devices such as lavapipe, which keep no compiled code in pipeline caches\n",
          misses);
  }
  const auto refused_by_driver =
      std::count_if(v.rows.begin(), v.rows.end(), [](const auto& r) { return r.blob_refused; });
  if (refused_by_driver > 0)
    out += fmt::format("{} blobs refused by the driver after passing kcache's checks (empty caches used)\n",
                       refused_by_driver);
  out += fmt::format("{} blobs passed kcache's checks and went to the driver; {:.2f} s\n", v.sent_to_driver,
                     v.wall_ms / 1000);
  return terminal_text(out);
}

std::string device_verify_json(const maintain::DeviceVerify& v, const device::DeviceInfo& device) {
  ordered_json rows = ordered_json::array();
  for (const auto& r : v.rows) {
    ordered_json row = {{"kernel", r.kernel}, {"status", verify_status_name(r.status)}};
    if (r.create_ms >= 0) row["create_ms"] = r.create_ms;
    if (r.empty_cache_ms >= 0) row["empty_cache_ms"] = r.empty_cache_ms;
    if (r.blob_refused) row["blob_refused_by_driver"] = true;
    if (!r.message.empty()) row["message"] = r.message;
    if (r.category) row["category"] = category_name(*r.category);
    rows.push_back(std::move(row));
  }
  ordered_json counts = ordered_json::object();
  for (auto s :
       {VerifyStatus::hit, VerifyStatus::miss, VerifyStatus::timed, VerifyStatus::refused, VerifyStatus::failure})
    counts[std::string(verify_status_name(s))] = v.count(s);
  const Sums s = sums(v);
  ordered_json out = {{"schema", "kcache.verify/1"},
                      {"mode", "device"},
                      {"device",
                       {{"index", device.index},
                        {"name", device.name},
                        {"fingerprint", device.fingerprint()},
                        {"driver_version", device.driver_version_text()}}},
                      {"namespace", v.ns.name()},
                      {"timed", v.timed},
                      {"counts", std::move(counts)},
                      {"sent_to_driver", v.sent_to_driver},
                      {"create_ms_with_blob", s.with_blob},
                      {"wall_ms", v.wall_ms},
                      {"pipelines", std::move(rows)}};
  if (s.both_n > 0) out["create_ms_empty_cache"] = s.without_blob;
  return internal::json_text(out);
}

std::string cuda_verify_text(const maintain::CudaVerify& v, bool all) {
  using maintain::CudaLoadStatus;
  std::string out;
  for (const auto& r : v.rows) {
    if (r.status == CudaLoadStatus::loaded && !all) continue;
    std::string times;
    if (r.load_ms >= 0) times = fmt::format("  load {:.3f} ms, resolve {:.3f} ms", r.load_ms, r.resolve_ms);
    out += fmt::format("{:<8} {} ({}, {} {}){}\n", cuda_load_status_name(r.status), r.kernel, r.ns,
                       payload_kind_name(r.kind), r.symbol, times);
    if (!r.message.empty()) out += fmt::format("  {}\n", r.message);
  }
  const auto& d = v.device;
  out += fmt::format("CUDA device cuda:{} {} (compute capability {}, CUDA {}{})\n", d.ordinal, d.name,
                     d.compute_capability(), cuda_device::cuda_version_text(d.cuda_version),
                     d.driver_version.empty() ? "" : fmt::format(", driver {}", d.driver_version));
  for (const auto& n : v.namespaces)
    if (!n.runs) out += fmt::format("not run: {} ({} entries): {}\n", n.ns, n.entries, n.why_not);
  double cubin_ms = 0, ptx_ms = 0;
  for (const auto& r : v.rows)
    if (r.load_ms >= 0) (r.kind == PayloadKind::ptx ? ptx_ms : cubin_ms) += r.load_ms;
  out +=
      fmt::format("{} entries: {} loaded, {} refused, {} failed; load {:.1f} ms for cubins, {:.1f} ms for PTX (JIT)\n",
                  v.rows.size(), v.count(CudaLoadStatus::loaded), v.count(CudaLoadStatus::refused),
                  v.count(CudaLoadStatus::failed), cubin_ms, ptx_ms);
  if (v.pairs > 0)
    out += fmt::format("{} kernels stored as both: cubin load {:.1f} ms vs PTX JIT {:.1f} ms ({:.1f}x)\n", v.pairs,
                       v.pair_cubin_ms, v.pair_ptx_ms, v.pair_cubin_ms > 0 ? v.pair_ptx_ms / v.pair_cubin_ms : 0.0);
  out += fmt::format("{:.2f} s\n", v.wall_ms / 1000);
  return terminal_text(out);
}

std::string cuda_verify_json(const maintain::CudaVerify& v) {
  using maintain::CudaLoadStatus;
  ordered_json rows = ordered_json::array();
  for (const auto& r : v.rows) {
    ordered_json row = {{"namespace", r.ns},
                        {"kernel", r.kernel},
                        {"kind", payload_kind_name(r.kind)},
                        {"symbol", r.symbol},
                        {"status", cuda_load_status_name(r.status)}};
    if (r.load_ms >= 0) row["load_ms"] = r.load_ms, row["resolve_ms"] = r.resolve_ms;
    if (!r.message.empty()) row["message"] = r.message;
    if (r.category) row["category"] = category_name(*r.category);
    rows.push_back(std::move(row));
  }
  ordered_json namespaces = ordered_json::array();
  for (const auto& n : v.namespaces) {
    ordered_json j = {{"namespace", n.ns}, {"runs", n.runs}, {"entries", n.entries}};
    if (!n.runs) j["why_not"] = n.why_not;
    namespaces.push_back(std::move(j));
  }
  ordered_json counts = ordered_json::object();
  for (auto s : {CudaLoadStatus::loaded, CudaLoadStatus::refused, CudaLoadStatus::failed})
    counts[std::string(cuda_load_status_name(s))] = v.count(s);
  double cubin_ms = 0, ptx_ms = 0;
  for (const auto& r : v.rows)
    if (r.load_ms >= 0) (r.kind == PayloadKind::ptx ? ptx_ms : cubin_ms) += r.load_ms;
  const auto& d = v.device;
  ordered_json out = {{"schema", "kcache.verify/1"},
                      {"mode", "cuda_device"},
                      {"device",
                       {{"ordinal", d.ordinal},
                        {"name", d.name},
                        {"compute_capability", d.compute_capability()},
                        {"cuda_version", cuda_device::cuda_version_text(d.cuda_version)},
                        {"driver_version", d.driver_version}}},
                      {"namespaces", std::move(namespaces)},
                      {"counts", std::move(counts)},
                      {"load_ms_cubin", cubin_ms},
                      {"load_ms_ptx", ptx_ms},
                      {"pairs", v.pairs},
                      {"pair_cubin_load_ms", v.pair_cubin_ms},
                      {"pair_ptx_jit_ms", v.pair_ptx_ms},
                      {"wall_ms", v.wall_ms},
                      {"entries", std::move(rows)}};
  return internal::json_text(out);
}

}  // namespace kcache::report
