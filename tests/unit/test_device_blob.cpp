// The pipeline-cache header check and kcache's blob wrapper, on synthetic
// devices and blobs (no Vulkan needed). The same checks on a real lavapipe
// blob are in test_device_vulkan.cpp.
#include "kcache/core/key_binding.hpp"
#include "kcache/device/device.hpp"
#include "kcache/device/pipeline_entry.hpp"

#include "../fuzz/fuzz_support.hpp"
#include "seed_corpus.hpp"
#include "test_support.hpp"

#include <cstring>
#include <map>
#include <optional>
#include <set>

using namespace kcache;
using namespace kcache::device;

namespace {

DeviceInfo fake_device() {
  DeviceInfo d;
  d.name = "Fake GPU";
  d.vendor_id = 0x10de;
  d.device_id = 0x2335;
  d.driver_id = 4;
  d.driver_version = (580u << 22) | (65u << 14) | (6u << 6);
  d.driver_name = "NVIDIA";
  d.driver_info = "580.65.06";
  for (int i = 0; i < 16; ++i) {
    d.device_uuid[i] = static_cast<std::uint8_t>(i);
    d.driver_uuid[i] = static_cast<std::uint8_t>(0x40 + i);
    d.pipeline_cache_uuid[i] = static_cast<std::uint8_t>(0x80 + i);
  }
  d.seal_fingerprint();
  return d;
}

void put_u32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// A header as vkGetPipelineCacheData writes it, plus `body` bytes.
std::vector<std::uint8_t> make_blob(const DeviceInfo& d, std::size_t body = 40) {
  std::vector<std::uint8_t> b(32 + body, 0xab);
  put_u32(b, 0, 32);
  put_u32(b, 4, 1);
  put_u32(b, 8, d.vendor_id);
  put_u32(b, 12, d.device_id);
  std::memcpy(b.data() + 16, d.pipeline_cache_uuid.data(), 16);
  return b;
}

bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("device: each device profile is its own namespace; profile names parse") {
  DeviceInfo d = fake_device();
  CHECK(d.profile == DeviceProfile::all_supported);
  CHECK(*d.record().find("deviceProfile") == std::to_string(k_device_profile));
  DeviceInfo minimal = d.with_profile(DeviceProfile::minimal);
  CHECK(*minimal.record().find("deviceProfile") == std::to_string(k_device_profile) + "-minimal");
  CHECK(minimal.fingerprint() != d.fingerprint());
  CHECK(minimal.with_profile(DeviceProfile::all_supported).fingerprint() == d.fingerprint());
  for (DeviceProfile p : k_device_profiles) CHECK(parse_device_profile(device_profile_name(p)).value() == p);
  auto bad = parse_device_profile("Minimal");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().category == Category::invalid_argument);
  CHECK(contains(bad.error().message, "known: all-supported, minimal"));
}

TEST_CASE("device: fingerprint record lists every field that invalidates a blob") {
  DeviceInfo d = fake_device();
  const auto& r = d.record();
  const char* fields[] = {"vendorID",   "deviceID",          "driverID",    "driverVersion", "driverInfo",
                          "driverUUID", "pipelineCacheUUID", "pointerSize", "deviceProfile"};
  REQUIRE(r.fields.size() == std::size(fields));
  for (std::size_t i = 0; i < std::size(fields); ++i) CHECK(r.fields[i].first == fields[i]);
  CHECK(*r.find("vendorID") == "0x10de");
  CHECK(*r.find("driverVersion") == "580.65.6.0");
  CHECK(*r.find("pointerSize") == std::to_string(sizeof(void*)));
  // The card's own id is provenance, not part of the record (fleet: one namespace per GPU model and driver).
  CHECK(r.find("deviceUUID") == nullptr);
  CHECK(d.ns.backend == "vulkan");
  CHECK(d.fingerprint().size() == 16);

  // Each field changes the namespace, including driverInfo alone (lavapipe).
  DeviceInfo other = d;
  other.driver_info = "Mesa 23.0";
  other.seal_fingerprint();
  CHECK(other.fingerprint() != d.fingerprint());
  auto diff = diff_fingerprints(d.record(), other.record());
  REQUIRE(diff.size() == 1);
  CHECK(diff[0].field == "driverInfo");
}

TEST_CASE("device: --device selectors: a number is an index only; a name must match one device") {
  DeviceInfo lvp = fake_device();
  lvp.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
  lvp.driver_id = 13;
  lvp.seal_fingerprint();
  const std::vector<DeviceInfo> one{lvp};
  CHECK(select_from(one, "0")->name == lvp.name);
  // "5" is a substring of the name: it used to pick device 0.
  auto five = select_from(one, "5");
  REQUIRE_FALSE(five);
  CHECK(five.error().category == Category::not_found);
  CHECK(contains(five.error().message, "no Vulkan device 5: this machine has 1 (indices 0 to 0)"));
  CHECK(contains(five.error().message, "0: llvmpipe"));
  CHECK(select_from(one, "LLVM")->name == lvp.name);
  CHECK(select_from(one, lvp.fingerprint().substr(0, 6))->name == lvp.name);
  CHECK(select_from(one, lvp.fingerprint())->name == lvp.name);

  DeviceInfo gpu = fake_device();
  gpu.index = 1;
  std::vector<DeviceInfo> two{lvp, gpu};
  two[0].index = 0;
  CHECK(select_from(two, "1")->name == "Fake GPU");
  CHECK(select_from(two, "fake gpu")->index == 1);
  auto none = select_from(two, "Radeon");
  REQUIRE_FALSE(none);
  CHECK(none.error().category == Category::not_found);
  CHECK(contains(none.error().message, "1: Fake GPU"));
  two[1].name = "llvmpipe (LLVM 15.0.6, 128 bits)";
  auto both = select_from(two, "llvmpipe");
  REQUIRE_FALSE(both);
  CHECK(both.error().category == Category::ambiguous);
  CHECK(contains(both.error().message, "matches 2 devices"));
  CHECK_FALSE(select_from(two, ""));
}

TEST_CASE("device: version text decoding") {
  CHECK(api_version_text((1u << 22) | (3u << 12) | 230) == "1.3.230");
  CHECK(driver_version_text(0x10005, 1) == "0.0.1");
  CHECK(driver_version_text(0x1002, (2u << 22) | (0u << 12) | 262) == "2.0.262");
  CHECK(driver_version_text(0x10de, (535u << 22) | (104u << 14) | (5u << 6) | 1) == "535.104.5.1");
}

TEST_CASE("device: header check accepts a matching header") {
  DeviceInfo d = fake_device();
  CHECK(check_pipeline_cache_header(make_blob(d), d));
  CHECK(check_pipeline_cache_header(make_blob(d, 0), d));  // header only, as lavapipe writes for compute
}

TEST_CASE("device: header check rejects each field changed alone, naming it") {
  DeviceInfo d = fake_device();
  struct Case {
    const char* field;
    std::size_t offset;
    Category category;
  };
  const Case cases[] = {
      {"headerSize", 0, Category::corruption},
      {"headerVersion", 4, Category::corruption},
      {"vendorID", 8, Category::fingerprint_mismatch},
      {"deviceID", 12, Category::fingerprint_mismatch},
      {"pipelineCacheUUID", 16, Category::fingerprint_mismatch},
      {"pipelineCacheUUID", 31, Category::fingerprint_mismatch},
  };
  for (const auto& c : cases) {
    CAPTURE(c.field);
    CAPTURE(c.offset);
    auto blob = make_blob(d);
    blob[c.offset] ^= 0x01;
    auto r = check_pipeline_cache_header(blob, d);
    REQUIRE(!r);
    CHECK(r.error().category == c.category);
    CHECK(contains(r.error().message, c.field));
  }
}

TEST_CASE("device: header check rejects truncation and a bad headerSize") {
  DeviceInfo d = fake_device();
  auto blob = make_blob(d, 0);
  for (std::size_t n : {0, 1, 16, 31}) {
    CAPTURE(n);
    auto r = check_pipeline_cache_header(std::span(blob).first(n), d);
    REQUIRE(!r);
    CHECK(r.error().category == Category::corruption);
    CHECK(contains(r.error().message, "truncated"));
  }
  for (std::uint32_t size : {0u, 16u, 31u, 33u, 64u, 0xffffffffu}) {
    CAPTURE(size);
    auto b = make_blob(d, 64);
    put_u32(b, 0, size);
    auto r = check_pipeline_cache_header(b, d);
    REQUIRE(!r);
    CHECK(r.error().category == Category::corruption);
    CHECK(contains(r.error().message, "headerSize"));
  }
}

TEST_CASE("device: wrap/unwrap round trip") {
  DeviceInfo d = fake_device();
  auto raw = make_blob(d, 100);
  auto wrapped = wrap_blob(d, raw);
  CHECK(wrapped.size() == k_wrapper_header_size + raw.size());
  auto unwrapped = unwrap_blob(wrapped, d);
  REQUIRE(unwrapped);
  CHECK(std::vector<std::uint8_t>(unwrapped->begin(), unwrapped->end()) == raw);

  auto parsed = parse_blob_wrapper(wrapped);
  REQUIRE(parsed);
  CHECK(parsed->version == 1);
  CHECK(parsed->driver_version == d.driver_version);
  CHECK(parsed->pointer_size == sizeof(void*));
  CHECK(parsed->fingerprint == fingerprint_hash(d.record()));
}

TEST_CASE("device: unwrap rejects each wrapper field changed alone") {
  DeviceInfo d = fake_device();
  const auto wrapped = wrap_blob(d, make_blob(d, 100));
  struct Case {
    const char* what;
    std::size_t offset;
    Category category;
    const char* names;
  };
  const Case cases[] = {
      {"magic", 0, Category::corruption, "magic"},
      {"version", 4, Category::version_mismatch, "version"},
      {"flags", 6, Category::corruption, "flags"},
      {"fingerprint", 8, Category::fingerprint_mismatch, "fingerprint"},
      {"fingerprint", 23, Category::fingerprint_mismatch, "fingerprint"},
      {"driver_version", 24, Category::fingerprint_mismatch, "driverVersion"},
      {"pointer_size", 28, Category::fingerprint_mismatch, "pointerSize"},
      {"blob_length", 32, Category::corruption, "blob_length"},
      {"blob_length high", 39, Category::corruption, "blob_length"},
      {"blob_digest", 40, Category::corruption, "blob_digest"},
      {"blob header", 56 + 8, Category::corruption, "blob_digest"},
      {"blob body", 56 + 100, Category::corruption, "blob_digest"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto bad = wrapped;
    bad[c.offset] ^= 0x01;
    auto r = unwrap_blob(bad, d);
    REQUIRE(!r);
    CHECK(r.error().category == c.category);
    CHECK(contains(r.error().message, c.names));
  }
}

TEST_CASE("device: unwrap rejects truncation, trailing bytes and another device") {
  DeviceInfo d = fake_device();
  const auto wrapped = wrap_blob(d, make_blob(d, 10));
  for (std::size_t n :
       {std::size_t{0}, std::size_t{4}, k_wrapper_header_size - 1, k_wrapper_header_size, wrapped.size() - 1}) {
    CAPTURE(n);
    auto r = unwrap_blob(std::span(wrapped).first(n), d);
    REQUIRE(!r);
    CHECK(r.error().category == Category::corruption);
  }
  auto longer = wrapped;
  longer.push_back(0);
  auto r = unwrap_blob(longer, d);
  REQUIRE(!r);
  CHECK(r.error().category == Category::corruption);

  // Same header fields, different driver build: only the wrapper can tell.
  DeviceInfo other = d;
  other.driver_info = "580.65.07";
  other.seal_fingerprint();
  r = unwrap_blob(wrapped, other);
  REQUIRE(!r);
  CHECK(r.error().category == Category::fingerprint_mismatch);
  CHECK(contains(r.error().message, "fingerprint"));

  other = d;
  other.driver_version += 1;
  other.seal_fingerprint();
  r = unwrap_blob(wrapped, other);
  REQUIRE(!r);
  CHECK(contains(r.error().message, "driverVersion"));

  // A wrapper that is fine but holds a header for another device.
  other = d;
  other.device_id = 0x1234;
  other.seal_fingerprint();
  auto foreign = wrap_blob(other, make_blob(d));
  r = unwrap_blob(foreign, other);
  REQUIRE(!r);
  CHECK(r.error().category == Category::fingerprint_mismatch);
  CHECK(contains(r.error().message, "deviceID"));
}

// The seed corpus of tests/fuzz/fuzz_pipeline_cache_header (written by
// tests/fuzz/make_seeds.cpp for fuzz_support.hpp's fixed device): every seed
// is there and not empty, and the check each seed is named for accepts or
// refuses it: raw blobs through the header check, wrapped ones through unwrap.
TEST_CASE("fuzz seed corpus: pipeline_cache_header seeds are accepted or refused as their names say") {
  const DeviceInfo& fixed = kcache::fuzz::fixed_device();
  struct Seed {
    bool wrapped;  ///< fed to unwrap_blob, else to check_pipeline_cache_header
    bool accepted;
    Category category = Category::corruption;  ///< when refused
  };
  const std::map<std::string, Seed> expected = {
      {"valid_raw", {false, true}},
      {"header_only", {false, true}},
      {"valid_wrapped", {true, true}},
      {"truncated_header", {false, false, Category::corruption}},
      {"bad_header_size", {false, false, Category::corruption}},
      {"foreign_uuid", {false, false, Category::fingerprint_mismatch}},
      {"wrapped_bad_digest", {true, false, Category::corruption}},
      {"wrapped_bad_length", {true, false, Category::corruption}},
  };
  std::set<std::string> names;
  for (const auto& [name, seed] : expected) names.insert(name);
  auto seeds = kcache::test::read_seeds("pipeline_cache_header", names);
  for (const auto& item : expected) {
    const auto& name = item.first;  // named, not bound: clang 14 cannot capture a binding
    const auto& want = item.second;
    CAPTURE(name);
    const auto& bytes = seeds.at(name);
    std::optional<Error> error;
    if (want.wrapped) {
      auto raw = unwrap_blob(bytes, fixed);
      if (raw) CHECK(check_pipeline_cache_header(*raw, fixed).has_value());
      else error = raw.error();
    } else {
      auto r = check_pipeline_cache_header(bytes, fixed);
      if (!r) error = r.error();
      // A raw blob is not a wrapped one.
      CHECK(!unwrap_blob(bytes, fixed).has_value());
    }
    if (want.accepted) {
      CHECK_MESSAGE(!error, name, " is refused: ", (error ? error->message : ""));
    } else {
      REQUIRE_MESSAGE(error.has_value(), name, " is accepted");
      CHECK(error->category == want.category);
      CHECK(!error->message.empty());
    }
  }
}

TEST_CASE("key binding: a pipeline entry's key is its module's id and its recipe; a changed recipe field is refused") {
  using namespace kcache;
  Entry module;
  module.kernel = "k";
  module.id_fields = {{"name", "k"}, {"entry", "main"}, {"spec_constant:0", "uint:256"}};
  module.ir_fields = {{"expanded_source", "0123"}};
  module.key = bound_key(module);
  module.payload = {1, 2, 3, 4};
  seal_payload(module);
  const device::PipelineRecipe recipe{"spirv/vulkan1.2", module.payload_digest, "main", {{0, 256}}};
  const Entry pipeline = device::make_pipeline_entry(module, recipe, {}, {9, 9, 9}, 1'700'000'000, "test");
  REQUIRE(check_key_binding(pipeline));
  CHECK(bound_key(pipeline) == pipeline.key);

  // What the runtime hands the driver, changed behind the key: refused.
  for (const char* field : {"entry", "spec:0", "spirv_digest"}) {
    CAPTURE(field);
    Entry forged = pipeline;
    bool changed = false;
    for (auto& f : forged.ir_fields)
      if (f.first == field) f.second += "0", changed = true;
    REQUIRE(changed);
    auto r = check_key_binding(forged);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("does not match its ir fields") != std::string::npos);
  }
  // The module's identity (its spec constants, say) changed behind the key.
  Entry forged = pipeline;
  forged.id_fields[2].second = "uint:4096";
  auto r = check_key_binding(forged);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("does not match its id fields") != std::string::npos);
}

TEST_CASE("pipeline entry: scheme 2 records the interface after the recipe, outside its key; scheme 1 is still read") {
  using namespace kcache;
  Entry module;
  module.kernel = "k";
  module.id_fields = {{"name", "k"}, {"entry", "main"}};
  module.key = bound_key(module);
  module.payload = {1, 2, 3, 4};
  seal_payload(module);
  device::PipelineInterface iface;
  iface.bindings = {{0, 0, 7, 1}, {0, 3, 6, 4}, {2, 1, 1000138000, 1}};
  iface.push_constant_size = 16;
  iface.spec_entries = {{0, 0, 4}, {3, 4, 1}, {9, 5, 8}};
  iface.spec_data = {0x00, 0x01, 0x00, 0x00, 0xff, 1, 2, 3, 4, 5, 6, 7, 8};
  const device::PipelineRecipe recipe{"spirv/vulkan1.2", module.payload_digest, "main", {{0, 256}}};
  const Entry e = device::make_pipeline_entry(module, recipe, iface, {9}, 1'700'000'000, "test");

  // The recipe's fields, then exactly the three interface fields.
  REQUIRE(e.ir_fields.size() == 8);
  CHECK(e.ir_fields[0] == Field{"pipeline_scheme", "2"});
  CHECK(e.ir_fields[5] == Field{"bindings", "0.0:7x1 0.3:6x4 2.1:1000138000x1"});
  CHECK(e.ir_fields[6] == Field{"push_constants", "16"});
  CHECK(e.ir_fields[7] == Field{"specialization", "0:00010000 3:ff 9:0102030405060708"});
  auto read = device::read_pipeline_recipe(e);
  REQUIRE_MESSAGE(read.has_value(), read.error().message);
  CHECK(*read == recipe);
  auto got = device::read_pipeline_interface(e);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  REQUIRE(got->has_value());
  CHECK(**got == iface);

  // The interface is made by the compile, not hashed: the key is the recipe's.
  CHECK(e.key.ir == device::recipe_hash(recipe));
  Entry other = e;
  other.ir_fields[6].second = "32";
  CHECK(check_key_binding(other));
  CHECK(product_difference(e, other).value_or("") == "push_constants 16 ≠ 32");

  // Malformed interface fields are corruption naming the field; the recipe still reads.
  const std::pair<std::size_t, const char*> bad[] = {{5, "0.0:7"},
                                                     {5, "0.0:7x0"},
                                                     {5, "0.1:7x1 0.0:7x1"},
                                                     {5, "0.0:7x1  0.1:7x1"},
                                                     {5, "x.0:7x1"},
                                                     {5, "0.0:7x1 "},
                                                     {6, "-4"},
                                                     {6, ""},
                                                     {7, "0:000100"},
                                                     {7, "0:0g"},
                                                     {7, "3:ff 3:ff"},
                                                     {7, "0"},
                                                     {7, "99999999999:ff"},
                                                     {5, "0.01:7x1"},
                                                     {6, "016"},
                                                     {7, "0:FF"},
                                                     {7, "+1:ff"}};
  for (const auto& b : bad) {
    const std::size_t i = b.first;
    const char* value = b.second;
    CAPTURE(value);
    Entry forged = e;
    forged.ir_fields[i].second = value;
    CHECK(device::read_pipeline_recipe(forged));
    auto r = device::read_pipeline_interface(forged);
    REQUIRE_FALSE(r);
    CHECK(r.error().category == Category::corruption);
    CHECK(r.error().message.find(forged.ir_fields[i].first) != std::string::npos);
  }
  // A missing or renamed interface field: neither reads.
  Entry cut = e;
  cut.ir_fields.pop_back();
  CHECK_FALSE(device::read_pipeline_interface(cut));
  CHECK_FALSE(device::read_pipeline_recipe(cut));

  // Scheme 1 (no interface fields) reads, with no interface; its key is its own.
  device::PipelineRecipe old = recipe;
  old.scheme = "1";
  const Entry e1 = device::make_pipeline_entry(module, old, iface, {9}, 1'700'000'000, "test");
  CHECK(e1.ir_fields.size() == 5);
  CHECK(check_key_binding(e1));
  CHECK(e1.key.ir != e.key.ir);
  auto read1 = device::read_pipeline_recipe(e1);
  REQUIRE(read1.has_value());
  CHECK(read1->scheme == "1");
  auto none = device::read_pipeline_interface(e1);
  REQUIRE(none.has_value());
  CHECK_FALSE(none->has_value());
  // Another scheme is refused as a version, not as damage.
  Entry e3 = e;
  e3.ir_fields[0].second = "3";
  auto r3 = device::read_pipeline_recipe(e3);
  REQUIRE_FALSE(r3);
  CHECK(r3.error().category == Category::version_mismatch);
}
