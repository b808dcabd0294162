// Vulkan namespaces name a compatibility class (GPU model + driver build), not
// one card: records that differ only in per-card fields share a namespace,
// records that differ in any compatibility field do not, and records written
// under fingerprint schema 1 (deviceUUID in them) keep their recorded id.
#include "kcache/core/namespace.hpp"

#include <doctest/doctest.h>

using namespace kcache;

namespace {

/// An H200 record as `kcache devices` reports one (fingerprint schema 2).
FingerprintRecord h200() {
  return {{{"vendorID", "0x10de"},
           {"deviceID", "0x2335"},
           {"driverID", "4"},
           {"driverVersion", "580.159.4.0"},
           {"driverInfo", "580.159.04"},
           {"driverUUID", "c7d8a05e-be16-5883-a818-6d61bf0812b6"},
           {"pipelineCacheUUID", "dd417e4b-11b1-aba9-49b5-77eed4fbe38d"},
           {"pointerSize", "8"},
           {"deviceProfile", "1"}}};
}

/// The same card as kcache 0.1.0 recorded it: deviceUUID after driverInfo.
FingerprintRecord h200_schema1(const std::string& device_uuid) {
  auto r = h200();
  r.fields.insert(r.fields.begin() + 5, {"deviceUUID", device_uuid});
  return r;
}

}  // namespace

TEST_CASE("fingerprint: two cards of one model and driver share one namespace") {
  auto a = vulkan_namespace(h200_schema1("1f224b44-48f8-70ee-2ddd-0bbe1ad15afe"));
  auto b = vulkan_namespace(h200_schema1("c26116c0-0000-0000-0000-000000000000"));
  auto now = vulkan_namespace(h200());
  CHECK(a == b);
  CHECK(a == now);
  CHECK(a.record == h200());  // the per-card field is not kept in the namespace
  CHECK(a.fingerprint.size() == 16);
}

TEST_CASE("fingerprint: every compatibility field alone makes another namespace, named in the diff") {
  const auto base = vulkan_namespace(h200());
  for (std::size_t i = 0; i < h200().fields.size(); ++i) {
    auto changed = h200();
    changed.fields[i].second += "x";
    CAPTURE(changed.fields[i].first);
    auto ns = vulkan_namespace(changed);
    CHECK(ns.fingerprint != base.fingerprint);
    auto diffs = diff_fingerprints(ns.record, base.record);
    REQUIRE(diffs.size() == 1);
    CHECK(diffs[0].field == changed.fields[i].first);
    CHECK(describe_differences(diffs, "bundle", "target").find(changed.fields[i].first) == 0);
  }
}

TEST_CASE("fingerprint: per-card fields are provenance") {
  for (const char* f : {"deviceUUID", "deviceLUID", "pciBus"}) CHECK(is_per_card_field(f));
  for (const auto& [name, value] : h200().fields) CHECK_FALSE(is_per_card_field(name));
  CHECK(has_per_card_fields(h200_schema1("x")));
  CHECK_FALSE(has_per_card_fields(h200()));
  CHECK(compatible_record(h200_schema1("x")) == h200());
}

TEST_CASE("fingerprint: a schema-1 record keeps the id it was stored under") {
  // kcache 0.1.0 hashed every field, deviceUUID included: the id seen on an
  // H200 (card 1f224b44…) before this change. Stored names and bundle heads
  // are checked against recorded_vulkan_id, so they still read.
  auto old = h200_schema1("1f224b44-48f8-70ee-2ddd-0bbe1ad15afe");
  CHECK(recorded_vulkan_id(old) == "b26b75c9563346ec");
  CHECK(recorded_vulkan_id(h200()) == vulkan_namespace(h200()).fingerprint);
  CHECK(vulkan_namespace(old).fingerprint == "8740c22bd9de6f22");
}
