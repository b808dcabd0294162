// A store written before vulkan namespaces named a GPU model and driver (its
// vulkan namespace id still names one card): inspect says why it is foreign,
// and its entries are stale, so `gc --stale` removes them and nothing is lost
// silently. A cuda namespace is foreign by the rule `verify --device cuda:N`
// uses (cuda_device::check_runs) against the CUDA devices passed in.
#include "kcache/maintain/gc.hpp"
#include "kcache/maintain/inspect.hpp"

#include "cuda_test_entries.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace kcache;

namespace {

FingerprintRecord schema1_record() {
  return {{{"vendorID", "0x10de"},
           {"deviceID", "0x2335"},
           {"driverID", "4"},
           {"driverVersion", "580.159.4.0"},
           {"driverInfo", "580.159.04"},
           {"deviceUUID", "1f224b44-48f8-70ee-2ddd-0bbe1ad15afe"},
           {"driverUUID", "c7d8a05e-be16-5883-a818-6d61bf0812b6"},
           {"pipelineCacheUUID", "dd417e4b-11b1-aba9-49b5-77eed4fbe38d"},
           {"pointerSize", "8"},
           {"deviceProfile", "1"}}};
}

Entry blob_entry(const std::string& kernel) {
  Entry e;
  e.kernel = kernel;
  e.key = {util::hash_string(kernel), util::hash_string(kernel + "/recipe")};
  e.payload_kind = PayloadKind::pipeline_cache;
  e.payload.assign(64, 0x5a);
  seal_payload(e);
  e.created = 1'700'000'000;
  return e;
}

}  // namespace

TEST_CASE("fleet: a fingerprint-schema-1 namespace is foreign and its entries stale") {
  auto store = store::make_memory_store();
  const Namespace old{"vulkan", recorded_vulkan_id(schema1_record()), schema1_record()};
  REQUIRE(old.fingerprint == "b26b75c9563346ec");
  std::vector<Entry> entries{blob_entry("a"), blob_entry("b")};
  REQUIRE(store->put(old, entries).has_value());

  auto report = maintain::inspect_store(*store, nullptr, compile::Toolchain::installed());
  REQUIRE(report.has_value());
  // Matching local devices does not matter: the id can never be looked up again.
  maintain::mark_foreign(*report, nullptr, std::vector<FingerprintRecord>{compatible_record(schema1_record())},
                         std::vector<cuda_device::DeviceInfo>{});
  REQUIRE(report->summaries.size() == 1);
  CHECK(report->summaries[0].foreign);
  CHECK(report->summaries[0].foreign_reason.find("fingerprint schema changed") == 0);
  CHECK(report->summaries[0].foreign_reason.find("vulkan/8740c22bd9de6f22") != std::string::npos);
  REQUIRE(report->entries.size() == 2);
  for (const auto& row : report->entries) {
    CHECK(row.state == maintain::EntryState::stale);
    REQUIRE(row.changes.size() == 1);
    CHECK(row.changes[0].name == "fingerprint");
  }

  auto candidates = maintain::gc_candidates(*store, nullptr, compile::Toolchain::installed());
  REQUIRE(candidates.has_value());
  REQUIRE(candidates->size() == 2);
  for (const auto& c : *candidates) CHECK(c.stale);
}

TEST_CASE("fleet: a current namespace of a local device is neither foreign nor stale") {
  auto store = store::make_memory_store();
  const Namespace now = vulkan_namespace(schema1_record());
  std::vector<Entry> entries{blob_entry("a")};
  REQUIRE(store->put(now, entries).has_value());
  auto report = maintain::inspect_store(*store, nullptr, compile::Toolchain::installed());
  REQUIRE(report.has_value());
  maintain::mark_foreign(*report, nullptr, std::vector<FingerprintRecord>{now.record},
                         std::vector<cuda_device::DeviceInfo>{});
  CHECK_FALSE(report->summaries.at(0).foreign);
  CHECK(report->entries.at(0).state == maintain::EntryState::unknown);
}

namespace {

/// Whether each namespace of `report` is foreign, with its reason ("" when not).
std::map<std::string, std::string> foreign_of(const maintain::StoreReport& report) {
  std::map<std::string, std::string> out;
  for (const auto& s : report.summaries) out[s.ns] = s.foreign ? s.foreign_reason : "";
  return out;
}

}  // namespace

TEST_CASE("fleet: a cuda namespace is foreign only when no local CUDA device runs it, whatever Vulkan says") {
  auto store = store::make_memory_store();
  auto put = [&](std::string_view arch, std::string_view cuda_version) {
    REQUIRE(store->put(cuda_namespace(arch, cuda_version, cuda_version),
                       std::vector<Entry>{test::cuda_entry("saxpy", std::string(arch))}));
  };
  put("sm_90", "13.0");
  put("sm_80", "12.4");       // another major: no cubin of it runs on 9.0
  put("compute_80", "12.4");  // PTX: JIT-compiled for 9.0
  put("sm_90a", "13.1");      // needs a newer driver than 13.0
  auto report = maintain::inspect_store(*store, nullptr, compile::Toolchain::installed());
  REQUIRE(report.has_value());

  cuda_device::DeviceInfo h200;
  h200.name = "H200";
  h200.cc_major = 9;
  h200.cc_minor = 0;
  h200.cuda_version = 13000;
  // No Vulkan here: that says nothing about CUDA namespaces.
  const Result<std::vector<FingerprintRecord>> no_vulkan = fail(Category::device_unavailable, "no Vulkan loader");
  maintain::mark_foreign(*report, nullptr, no_vulkan, std::vector{h200});
  auto marked = foreign_of(*report);
  CHECK(marked["cuda/sm_90"] == "");
  CHECK(marked["cuda/compute_80"] == "");
  CHECK(
      marked["cuda/sm_80"].starts_with("runs on none of this machine's CUDA devices: cuda/sm_80 cannot run on CUDA "
                                       "device 0 (H200): arch sm_80 vs device compute capability 9.0"));
  CHECK(marked["cuda/sm_80"].find("sm_80") != std::string::npos);
  CHECK(marked["cuda/sm_90a"].starts_with("runs on none of this machine's CUDA devices"));
  CHECK(marked["cuda/sm_90a"].find("13.1") != std::string::npos);

  // An A100 (8.0, CUDA 12.4) beside it runs sm_80 too.
  cuda_device::DeviceInfo a100 = h200;
  a100.ordinal = 1;
  a100.name = "A100";
  a100.cc_major = 8;
  a100.cuda_version = 12040;
  maintain::mark_foreign(*report, nullptr, no_vulkan, std::vector{h200, a100});
  marked = foreign_of(*report);
  CHECK(marked["cuda/sm_80"] == "");
  CHECK(marked["cuda/sm_90a"].find("device 0 (H200)") != std::string::npos);
  CHECK(marked["cuda/sm_90a"].find("device 1 (A100)") != std::string::npos);

  // No CUDA at all: every cuda namespace is foreign, for that reason.
  const Result<std::vector<cuda_device::DeviceInfo>> no_cuda =
      fail(Category::device_unavailable, "no CUDA driver: libcuda.so.1: cannot open shared object file");
  maintain::mark_foreign(*report, nullptr, std::vector<FingerprintRecord>{}, no_cuda);
  for (const auto& item : foreign_of(*report))  // item, not [ns, why]: clang 14 cannot capture a binding
    CHECK_MESSAGE(
        item.second == "no local CUDA device to match: no CUDA driver: libcuda.so.1: cannot open shared object file",
        item.first);
}
