// The vulkan entry, byte for byte: its recipe (pipeline_scheme 1 and 2,
// device/pipeline_entry.hpp) and the blob wrapper inside it (device.hpp),
// as golden records in tests/data/entries/. Every store and bundle written
// since each scheme holds such records, so each must still read, and what
// kcache writes today must be the scheme-2 record exactly (a format change
// fails here first). Set KCACHE_FIXTURE_OUT to a folder to write them again.
#include "kcache/core/entry.hpp"
#include "kcache/device/device.hpp"
#include "kcache/device/pipeline_entry.hpp"

#include "kcache/util/file.hpp"
#include "test_support.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace kcache;
using namespace kcache::device;

namespace {

// The inputs of the golden records: fixed values, no device or compiler.
Entry module_entry() {
  Entry e;
  e.kernel = "scale[T=float]";
  e.key = {util::hash_string("id"), util::hash_string("ir")};
  e.id_fields = {{"name", "scale[T=float]"}, {"entry", "main"}, {"stage", "compute"}, {"target", "vulkan1.2"}};
  e.inputs = {{"scale.comp", util::hash_string("src")}};
  e.payload_kind = PayloadKind::spirv;
  e.payload = {0x03, 0x02, 0x23, 0x07, 0x00, 0x05, 0x01, 0x00};
  seal_payload(e);
  return e;
}

PipelineRecipe recipe(std::string scheme) {
  return {"spirv/vulkan1.2",
          module_entry().payload_digest,
          "main",
          {{0, 256}, {1, 0xfffffffffffffffdull}},
          std::move(scheme)};
}

PipelineInterface interface() {
  PipelineInterface i;
  i.bindings = {{0, 0, 7, 1}, {1, 2, 6, 4}};  // storage buffer; 4 uniform buffers
  i.push_constant_size = 16;
  i.spec_data = {0x00, 0x01, 0x00, 0x00, 0xfd, 0xff, 0xff, 0xff};
  i.spec_entries = {{0, 0, 4}, {1, 4, 4}};
  return i;
}

const std::vector<std::uint8_t> k_raw_blob = [] {
  std::vector<std::uint8_t> b(32 + 24, 0xab);  // a Vulkan pipeline-cache header, then the driver's bytes
  const std::uint32_t header[4] = {32, 1, 0x10de, 0x2335};
  std::memcpy(b.data(), header, sizeof header);
  for (int i = 0; i < 16; ++i) b[16 + i] = static_cast<std::uint8_t>(0x80 + i);
  return b;
}();

Entry pipeline(std::string scheme) {
  const util::Hash128 fingerprint = util::hash_string("a device's fingerprint record");
  return make_pipeline_entry(module_entry(), recipe(std::move(scheme)), interface(),
                             wrap_blob_for(fingerprint, (580u << 22) | (65u << 14), 8, k_raw_blob), 1700000001,
                             "built");
}

std::vector<std::uint8_t> golden(const std::string& name) {
  auto text = util::read_file(std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/entries" / name);
  REQUIRE_MESSAGE(text, name);
  return {text->begin(), text->end()};
}

void write_fixture(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  if (const char* dir = std::getenv("KCACHE_FIXTURE_OUT"))
    std::ofstream(std::filesystem::path(dir) / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// What both schemes hold: the recipe, the module it names, the blob.
void check_common(const Entry& e, std::string_view scheme) {
  CHECK(e.kernel == "scale[T=float]");
  CHECK(e.payload_kind == PayloadKind::pipeline_cache);
  CHECK(e.key.id == module_entry().key.id);
  auto r = read_pipeline_recipe(e);
  REQUIRE(r.has_value());
  CHECK(r->scheme == scheme);
  CHECK(r->spirv_namespace == "spirv/vulkan1.2");
  CHECK(r->spirv_digest == module_entry().payload_digest);
  CHECK(r->entry == "main");
  CHECK(r->spec == recipe("2").spec);
  CHECK(e.key.ir == recipe_hash(*r));
  auto wrapper = parse_blob_wrapper(e.payload);
  REQUIRE(wrapper.has_value());
  CHECK(wrapper->fingerprint == util::hash_string("a device's fingerprint record"));
  CHECK(wrapper->driver_version == ((580u << 22) | (65u << 14)));
  CHECK(wrapper->pointer_size == 8);
  CHECK(std::vector<std::uint8_t>(wrapper->blob.begin(), wrapper->blob.end()) == k_raw_blob);
}

}  // namespace

TEST_CASE("vulkan entry golden records: scheme 2 is what kcache writes, and it reads back") {
  const auto bytes = encode_entry(pipeline("2"));
  write_fixture("pipeline-scheme2.rec", bytes);
  CHECK(bytes == golden("pipeline-scheme2.rec"));
  auto e = decode_entry(golden("pipeline-scheme2.rec"));
  REQUIRE(e.has_value());
  check_common(*e, "2");
  auto recorded = read_pipeline_interface(*e);
  REQUIRE(recorded.has_value());
  REQUIRE(recorded->has_value());
  CHECK(**recorded == interface());
}

TEST_CASE("vulkan entry golden records: scheme 1 (no interface) still reads") {
  write_fixture("pipeline-scheme1.rec", encode_entry(pipeline("1")));
  auto e = decode_entry(golden("pipeline-scheme1.rec"));
  REQUIRE(e.has_value());
  check_common(*e, "1");
  auto recorded = read_pipeline_interface(*e);
  REQUIRE(recorded.has_value());
  CHECK(!recorded->has_value());  // the runtime reflects the module itself
}
