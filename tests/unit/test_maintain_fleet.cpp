// A store written before vulkan namespaces named a GPU model and driver (its
// vulkan namespace id still names one card): inspect says why it is foreign,
// and its entries are stale, so `gc --stale` removes them and nothing is lost
// silently.
#include "kcache/maintain/gc.hpp"
#include "kcache/maintain/inspect.hpp"

#include <doctest/doctest.h>

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
  maintain::mark_foreign(*report, nullptr, std::vector<FingerprintRecord>{compatible_record(schema1_record())});
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
  maintain::mark_foreign(*report, nullptr, std::vector<FingerprintRecord>{now.record});
  CHECK_FALSE(report->summaries.at(0).foreign);
  CHECK(report->entries.at(0).state == maintain::EntryState::unknown);
}
