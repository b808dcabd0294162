// Catalog lookups against a real LMDB store: SPIR-V served with the pipeline
// interface kcache built with, a blob served only when every check passes
// for the application's device, and a refusal (with its reason) otherwise.
#include "kcache/core/key_binding.hpp"
#include "kcache/runtime/catalog.hpp"

#include "raw_lmdb.hpp"
#include "test_runtime_support.hpp"

#include <lmdb.h>

#include <algorithm>
#include <fstream>

using namespace kcache;
using namespace kcache::test;
using runtime::detail::BlobStatus;
using runtime::detail::Catalog;
using runtime::detail::LookupOptions;

namespace {

constexpr std::uint32_t k_storage_buffer = 7;  // VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
constexpr std::uint32_t k_uniform_buffer = 6;  // VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER

bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

// A store with kernel "scale" as SPIR-V and, for lavapipe, its blob.
struct Fixture : LavapipeStore {
  std::unique_ptr<Catalog> open() const {
    auto c = Catalog::open(store);
    REQUIRE_MESSAGE(c.has_value(), why(c));
    return std::move(*c);
  }
};

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("runtime: SPIR-V only: module, entry point, manifest spec constants and reflected interface") {
  Fixture f;
  auto k = f.open()->find("scale", {});
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->spirv == f.words);
  CHECK(k->name == "scale");
  CHECK(k->target == "vulkan1.2");
  CHECK(k->stage == "compute");
  CHECK(k->entry_point == "main");
  CHECK(k->key_id == f.spirv.key.id.hex());
  CHECK(k->blob_status == BlobStatus::not_requested);
  CHECK(k->pipeline_cache().empty());
  REQUIRE(k->spec.size() == 2);
  CHECK(k->spec[0].bits == 64);
  CHECK(k->spec[1].bits == 0xfffffffffffffffdull);  // -3, sign-extended like the device stage

  CHECK(k->interface_error.empty());
  const auto& iface = k->interface;
  REQUIRE(iface.bindings.size() == 2);
  CHECK(iface.bindings[0].set == 0);
  CHECK(iface.bindings[0].binding == 0);
  CHECK(iface.bindings[0].descriptor_type == k_storage_buffer);
  CHECK(iface.bindings[1].set == 1);
  CHECK(iface.bindings[1].binding == 2);
  CHECK(iface.bindings[1].descriptor_type == k_uniform_buffer);
  CHECK(iface.push_constant_size == 4);
  REQUIRE(iface.spec_entries.size() == 2);
  std::int32_t offset_value = 0;
  for (const auto& s : iface.spec_entries) {
    REQUIRE(s.offset + s.size <= iface.spec_data.size());
    if (s.constant_id == 1) std::memcpy(&offset_value, iface.spec_data.data() + s.offset, 4);
  }
  CHECK(offset_value == -3);
}

TEST_CASE("runtime: a blob for this device is served, header-checked, and the driver uses it") {
  Fixture f;
  f.put_blob(f.raw);
  LookupOptions options;
  options.device = &f.lvp;
  auto k = f.open()->find("scale", options);
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->blob_status == BlobStatus::served);
  CHECK(k->blob_reason.empty());
  CHECK(std::vector<std::uint8_t>(k->pipeline_cache().begin(), k->pipeline_cache().end()) == f.raw);
  CHECK(k->spirv == f.words);

  // What the application gets is what a driver accepts: re-create the
  // pipeline from the served bytes on lavapipe.
  auto dev = device::Device::open(f.lvp);
  REQUIRE_MESSAGE(dev.has_value(), why(dev));
  auto v = (*dev)->verify_pipeline(k->spirv, k->entry_point, k->spec, k->pipeline_cache());
  REQUIRE_MESSAGE(v.has_value(), why(v));
  CHECK(v->outcome != device::VerifyOutcome::failure);
  CHECK_FALSE(v->blob_refused);
}

TEST_CASE("runtime: the application's device properties give the namespace kcache's listing gives") {
  Fixture f;
  runtime::detail::DeviceProperties p;
  p.vendor_id = f.lvp.vendor_id;
  p.device_id = f.lvp.device_id;
  p.driver_version = f.lvp.driver_version;
  p.pipeline_cache_uuid = f.lvp.pipeline_cache_uuid;
  p.device_uuid = f.lvp.device_uuid;
  p.driver_uuid = f.lvp.driver_uuid;
  p.driver_id = f.lvp.driver_id;
  p.driver_info = f.lvp.driver_info;
  CHECK(runtime::detail::device_from_properties(p).ns == f.lvp.ns);
  p.driver_version += 1;
  CHECK(runtime::detail::device_from_properties(p).ns.fingerprint != f.lvp.fingerprint());
}

TEST_CASE("runtime: another driver version finds no blob, with the reason; SPIR-V is still served") {
  Fixture f;
  f.put_blob(f.raw);
  device::DeviceInfo other = f.lvp;
  other.driver_version += 1;
  other.seal_fingerprint();
  LookupOptions options;
  options.device = &other;
  auto k = f.open()->find("scale", options);
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->blob_status == BlobStatus::absent);
  CHECK(contains(k->blob_reason, other.ns.name()));
  CHECK(contains(k->blob_reason, "kcache build --backend vulkan"));
  CHECK(k->pipeline_cache().empty());
  CHECK(k->spirv == f.words);
}

TEST_CASE("runtime: blobs of another device profile are named when this profile has none") {
  Fixture f;
  // The same card, the namespace a kcache of device profile 1 wrote.
  Namespace old_ns = f.lvp.ns;
  for (auto& [name, value] : old_ns.record.fields)
    if (name == "deviceProfile") value = "1";
  old_ns = vulkan_namespace(old_ns.record);
  REQUIRE(old_ns.fingerprint != f.lvp.fingerprint());
  put(f.store, old_ns, {pipeline_entry(f.spirv, f.lvp, f.raw)});
  LookupOptions options;
  options.device = &f.lvp;
  auto k = f.open()->find("scale", options);
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->blob_status == BlobStatus::absent);
  CHECK(contains(k->blob_reason, "another device profile (" + old_ns.name() + " deviceProfile 1"));
  CHECK(contains(k->blob_reason, "this runtime's is deviceProfile 2"));

  // Another driver build is another device, not another profile: nothing said.
  device::DeviceInfo other = f.lvp;
  other.driver_version += 1;
  other.seal_fingerprint();
  options.device = &other;
  k = f.open()->find("scale", options);
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK_FALSE(contains(k->blob_reason, "device profile"));
}

TEST_CASE("runtime: a blob whose Vulkan header names another device is refused, naming the field") {
  Fixture f;
  auto bad = f.raw;
  bad[8] ^= 0x01;  // vendorID, inside a correctly wrapped blob of this device's namespace
  f.put_blob(bad);
  LookupOptions options;
  options.device = &f.lvp;
  auto k = f.open()->find("scale", options);
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->blob_status == BlobStatus::refused);
  CHECK(contains(k->blob_reason, "vendorID"));
  CHECK(k->pipeline_cache().empty());
  CHECK(k->spirv == f.words);
}

TEST_CASE("runtime: a corrupted wrapper is refused before any byte is served") {
  Fixture f;
  Entry v = pipeline_entry(f.spirv, f.lvp, f.raw);
  v.payload.back() ^= 0xff;  // blob byte: the wrapper's digest no longer matches
  seal_payload(v);           // the store's own record checks still pass
  put(f.store, f.lvp.ns, {v});
  LookupOptions options;
  options.device = &f.lvp;
  auto k = f.open()->find("scale", options);
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->blob_status == BlobStatus::refused);
  CHECK(contains(k->blob_reason, "digest"));
  CHECK(k->pipeline_cache().empty());
  // A trusted store's blob is not hashed again past its record's digest
  // (PayloadDigest::covered): a wrapper its writer made inconsistent
  // is that writer's, whom the application vouches for. Damaged bytes are
  // the record digest's to refuse (the next test). Lavapipe's blob is its
  // 32-byte header alone: a body byte is added to change.
  std::vector<std::uint8_t> longer = f.raw;
  longer.push_back(0x5a);
  Entry body = pipeline_entry(f.spirv, f.lvp, longer);
  body.payload.back() ^= 0xff;
  seal_payload(body);
  put(f.store, f.lvp.ns, {body});
  CHECK(f.open()->find("scale", options)->blob_status == BlobStatus::refused);
  auto trusted = Catalog::open(f.store, true);
  REQUIRE_MESSAGE(trusted.has_value(), why(trusted));
  auto served = (*trusted)->find("scale", options);
  REQUIRE_MESSAGE(served.has_value(), why(served));
  CHECK_MESSAGE(served->blob_status == BlobStatus::served, served->blob_reason);
  CHECK(served->pipeline_cache().size() == longer.size());
}

TEST_CASE("runtime: a trusted store's payloads are not hashed again past their record digest") {
  Fixture f;
  // A module record whose payload disagrees with its payload_digest field
  // but whose record digest was made to match (a writer's inconsistency):
  // the generator word (word 2) changed, which no structure check looks at.
  auto bytes = encode_entry(f.spirv);
  const auto at = std::search(bytes.begin(), bytes.end(), f.spirv.payload.begin(), f.spirv.payload.end());
  REQUIRE(at != bytes.end());
  *(at + 8) ^= 0x01;
  auto digest = util::hash_bytes(std::span(bytes).first(bytes.size() - 16));
  std::copy(digest.bytes.begin(), digest.bytes.end(), bytes.end() - 16);
  raw_put(f.store, "entries", spirv_namespace("vulkan1.2").name() + '\x1f' + "scale",
          std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  auto plain = f.open()->find("scale", {});
  REQUIRE_FALSE(plain.has_value());
  CHECK(contains(plain.error().message, "payload digest mismatch"));
  auto trusted = Catalog::open(f.store, true);
  REQUIRE_MESSAGE(trusted.has_value(), why(trusted));
  auto k = (*trusted)->find("scale", {});
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->spirv[2] == (f.words[2] ^ 0x01u));
}

TEST_CASE("runtime: a blob whose record bytes were damaged in the store is refused, trusted or not") {
  Fixture f;
  f.put_blob(f.raw);
  auto bytes = encode_entry(pipeline_entry(f.spirv, f.lvp, f.raw));
  bytes[bytes.size() / 2] ^= 0x01;  // damage inside the record: its digest no longer matches
  raw_put(f.store, "entries", f.lvp.ns.name() + '\x1f' + "scale",
          std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  LookupOptions options;
  options.device = &f.lvp;
  for (bool trusted : {false, true}) {
    CAPTURE(trusted);
    auto c = Catalog::open(f.store, trusted);
    REQUIRE_MESSAGE(c.has_value(), why(c));
    auto k = (*c)->find("scale", options);
    REQUIRE_MESSAGE(k.has_value(), why(k));
    CHECK(k->blob_status == BlobStatus::refused);
    CHECK(contains(k->blob_reason, "digest"));
    CHECK(k->pipeline_cache().empty());
    CHECK(k->spirv == f.words);  // the module is still served
  }
}

TEST_CASE("runtime: a blob built from an older SPIR-V module is refused as stale") {
  Fixture f;
  f.put_blob(f.raw);
  // The SPIR-V entry is rebuilt (another module), its blob is not.
  auto words2 = compile_glsl(f.dir, "scale2", R"(#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer Data { int values[]; } data;
void main() { data.values[gl_GlobalInvocationID.x] += 1; }
)");
  Entry rebuilt = spirv_entry("scale", words2);
  put(f.store, spirv_namespace("vulkan1.2"), {rebuilt});
  LookupOptions options;
  options.device = &f.lvp;
  auto k = f.open()->find("scale", options);
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->blob_status == BlobStatus::refused);
  CHECK(contains(k->blob_reason, "stale"));
  CHECK(k->spirv == words2);
}

TEST_CASE("runtime: targets, keys and missing kernels") {
  Fixture f;
  auto words13 = compile_glsl(f.dir, "scale", k_runtime_shader, "vulkan1.3");
  put(f.store, spirv_namespace("vulkan1.3"), {spirv_entry("scale", words13, "vulkan1.3")});
  auto c = f.open();

  auto ambiguous = c->find("scale", {});
  REQUIRE_FALSE(ambiguous.has_value());
  CHECK(ambiguous.error().category == Category::ambiguous);
  CHECK(contains(ambiguous.error().message, "vulkan1.2, vulkan1.3"));

  LookupOptions v13;
  v13.target = "vulkan1.3";
  auto k13 = c->find("scale", v13);
  REQUIRE_MESSAGE(k13.has_value(), why(k13));
  CHECK(k13->spirv == words13);

  // With a device whose blob exists, the blob's target decides. (A writable
  // open is refused while this process holds the store read-only.)
  c.reset();
  f.put_blob(f.raw);
  auto c2 = f.open();
  LookupOptions dev;
  dev.device = &f.lvp;
  auto kd = c2->find("scale", dev);
  REQUIRE_MESSAGE(kd.has_value(), why(kd));
  CHECK(kd->target == "vulkan1.2");
  CHECK(kd->blob_status == BlobStatus::served);
  // Asking for vulkan1.3 with that device: its blob was built from the 1.2 module.
  dev.target = "vulkan1.3";
  auto kd13 = c2->find("scale", dev);
  REQUIRE_MESSAGE(kd13.has_value(), why(kd13));
  CHECK(kd13->blob_status == BlobStatus::refused);
  CHECK(contains(kd13->blob_reason, "spirv/vulkan1.2"));

  auto by_key = c2->find_by_key(f.spirv.key.id.hex(), {});
  REQUIRE_MESSAGE(by_key.has_value(), why(by_key));
  CHECK(by_key->name == "scale");
  CHECK(by_key->target == "vulkan1.2");
  auto bad_key = c2->find_by_key("xyz", {});
  REQUIRE_FALSE(bad_key.has_value());
  CHECK(bad_key.error().category == Category::invalid_argument);
  auto no_key = c2->find_by_key(std::string(32, '0'), {});
  REQUIRE_FALSE(no_key.has_value());
  CHECK(no_key.error().category == Category::not_found);

  auto missing = c2->find("nope", {});
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().category == Category::not_found);
  CHECK(contains(missing.error().message, "nope"));

  std::vector<std::string> listed;
  REQUIRE(c2->list("", [&](std::string_view t, std::string_view n) {
    listed.push_back(std::string(t) + ":" + std::string(n));
    return true;
  }));
  CHECK(listed == std::vector<std::string>{"vulkan1.2:scale", "vulkan1.3:scale"});
}

TEST_CASE("runtime: a damaged entry fails only its own lookup; every other kernel is served and listed") {
  Fixture f;
  f.put_blob(f.raw);
  put(f.store, spirv_namespace("vulkan1.2"), {spirv_entry("other", f.words)});
  // "broken" sorts before "scale": a scan meets it first.
  raw_put(f.store, "entries", spirv_namespace("vulkan1.2").name() + '\x1f' + "broken", "not an entry record");
  auto c = f.open();
  LookupOptions dev;
  dev.device = &f.lvp;
  auto k = c->find("scale", dev);
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->blob_status == BlobStatus::served);
  auto by_key = c->find_by_key(f.spirv.key.id.hex(), {});
  REQUIRE_MESSAGE(by_key.has_value(), why(by_key));
  CHECK(by_key->name == "scale");
  std::vector<std::string> listed;
  auto list = c->list("", [&](std::string_view, std::string_view n) {
    listed.emplace_back(n);
    return true;
  });
  REQUIRE_MESSAGE(list.has_value(), why(list));
  CHECK(listed == std::vector<std::string>{"other", "scale"});
  auto broken = c->find("broken", {});
  REQUIRE_FALSE(broken.has_value());
  CHECK(broken.error().category == Category::corruption);
}

TEST_CASE("runtime: lookups never write to the store") {
  Fixture f;
  f.put_blob(f.raw);
  const std::string before = file_text(f.store / "data.mdb");
  {
    auto c = f.open();
    LookupOptions options;
    options.device = &f.lvp;
    for (int i = 0; i < 3; ++i) REQUIRE(c->find("scale", options).has_value());
  }
  CHECK(file_text(f.store / "data.mdb") == before);

  TempDir empty;
  auto none = Catalog::open(empty.path() / "absent");
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().category == Category::not_found);
  CHECK(!std::filesystem::exists(empty.path() / "absent"));
}

TEST_CASE("runtime: a trusted lookup serves the interface the blob's entry records; an untrusted one reflects") {
  Fixture f;
  const Entry v = pipeline_entry(f.spirv, f.lvp, f.raw);
  auto recorded = device::read_pipeline_interface(v);
  REQUIRE(recorded.has_value());
  REQUIRE(recorded->has_value());
  LookupOptions options;
  options.device = &f.lvp;
  auto trusted_catalog = [&] {
    auto c = Catalog::open(f.store, true);
    REQUIRE_MESSAGE(c.has_value(), why(c));
    return std::move(*c);
  };
  auto both = [&] {
    auto plain = f.open()->find("scale", options);
    auto trusted = trusted_catalog()->find("scale", options);
    REQUIRE_MESSAGE(plain.has_value(), why(plain));
    REQUIRE_MESSAGE(trusted.has_value(), why(trusted));
    return std::pair(std::move(*plain), std::move(*trusted));
  };

  SUBCASE("as the device stage writes it, both give the module's interface") {
    f.put_blob(f.raw);
    auto [plain, trusted] = both();
    CHECK(plain.blob_status == BlobStatus::served);
    CHECK(trusted.blob_status == BlobStatus::served);
    CHECK(plain.interface == **recorded);
    CHECK(trusted.interface == **recorded);
    CHECK(trusted.interface.bindings.size() == 2);
  }
  SUBCASE("a recorded interface that is not the module's: trusted serves it as recorded, untrusted reflects") {
    // The interface is a product field, outside the key: the record stays
    // bound, so only verify (which reflects) can tell. What the trusted
    // lookup returns proves it did not reflect.
    Entry forged = v;
    for (auto& field : forged.ir_fields)
      if (field.first == "push_constants") field.second = "4096";
    REQUIRE(bound_key(forged).ir == forged.key.ir);
    put(f.store, f.lvp.ns, {forged});
    auto [plain, trusted] = both();
    CHECK(trusted.interface.push_constant_size == 4096);
    CHECK(plain.interface == **recorded);
  }
  SUBCASE("a malformed recorded interface withholds the blob, with the reason; the SPIR-V is served") {
    Entry forged = v;
    for (auto& field : forged.ir_fields)
      if (field.first == "bindings") field.second = "0.0:7";
    put(f.store, f.lvp.ns, {forged});
    auto [plain, trusted] = both();
    for (const auto* k : {&plain, &trusted}) {
      CHECK(k->blob_status == BlobStatus::refused);
      CHECK(contains(k->blob_reason, "bindings"));
      CHECK(k->interface == **recorded);  // reflected instead
      CHECK_FALSE(k->spirv.empty());
    }
  }
  SUBCASE("an entry of an earlier kcache (scheme 1, no interface) is served; both reflect") {
    put(f.store, f.lvp.ns, {pipeline_entry(f.spirv, f.lvp, f.raw, "vulkan1.2", "1")});
    auto [plain, trusted] = both();
    CHECK(trusted.blob_status == BlobStatus::served);
    CHECK(trusted.interface == **recorded);
    CHECK(plain.interface == **recorded);
  }
}
