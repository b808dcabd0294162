// transfer::write_deployment over a memory store (no device): what the file
// holds is what a checked lookup would serve, reflected once; a module that
// fails spirv-val now, a blob built from another version of its module, a
// blob of another device and a blob whose recorded interface is not its
// module's are left out and listed; CUDA code of every arch taken, checked
// against its arch (a cubin of another arch left out), or only the archs
// asked; the errors of a missing class, an empty selection and a merge
// without a class.
#include "kcache/core/key_binding.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/deploy/deploy_file.hpp"
#include "kcache/device/device.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/store/store.hpp"
#include "kcache/transfer/transfer.hpp"

#include "cuda_test_entries.hpp"
#include "test_support.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>

using namespace kcache;

namespace {

std::vector<std::uint32_t> glsl(const test::TempDir& dir, const char* text) {
  dir.write("k.comp", text);
  const auto spv = dir.path() / "k.spv";
  const std::string cmd = "glslangValidator -V --target-env vulkan1.2 -o '" + spv.string() + "' '" +
                          (dir.path() / "k.comp").string() + "' >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(spv, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

constexpr const char* k_shader = R"(#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer Data { int values[]; } data;
layout(push_constant) uniform Push { uint count; } pc;
void main() { if (gl_GlobalInvocationID.x < pc.count) data.values[gl_GlobalInvocationID.x] *= 2; }
)";

Entry module_entry(const std::string& name, const std::vector<std::uint32_t>& words) {
  Entry e;
  e.kernel = name;
  e.id_fields = {{"name", name}, {"entry", "main"}, {"stage", "compute"}, {"spec_constant:0", "int:64"}};
  e.key = bound_key(e);
  e.payload_kind = PayloadKind::spirv;
  e.payload.resize(words.size() * 4);
  std::memcpy(e.payload.data(), words.data(), e.payload.size());
  seal_payload(e);
  return e;
}

device::DeviceInfo fake_device() {
  device::DeviceInfo d;
  d.vendor_id = 0x10de;
  d.device_id = 0x2335;
  d.driver_version = 1;
  for (int i = 0; i < 16; ++i) d.pipeline_cache_uuid[i] = static_cast<std::uint8_t>(0x80 + i);
  d.seal_fingerprint();
  return d;
}

std::vector<std::uint8_t> raw_blob(const device::DeviceInfo& d) {
  std::vector<std::uint8_t> b(72, 0xab);
  const std::uint32_t head[4] = {32, 1, d.vendor_id, d.device_id};
  std::memcpy(b.data(), head, 16);
  std::memcpy(b.data() + 16, d.pipeline_cache_uuid.data(), 16);
  return b;
}

Entry blob_entry(const Entry& module, const device::DeviceInfo& d, std::span<const std::uint8_t> raw,
                 const device::PipelineInterface& iface) {
  const device::PipelineRecipe recipe{"spirv/vulkan1.2", module.payload_digest, "main", {{0, 64}}};
  return device::make_pipeline_entry(module, recipe, iface, device::wrap_blob(d, raw), 1700000000, "built");
}

}  // namespace

TEST_CASE("deploy: the file holds each kernel checked and reflected once; what fails a check is left out") {
  test::TempDir dir;
  const auto words = glsl(dir, k_shader);
  auto invalid = words;
  invalid.push_back((2u << 16) | 17);  // an OpCapability after the functions: well-formed, fails spirv-val
  invalid.push_back(1);
  const auto dev = fake_device();
  const auto raw = raw_blob(dev);
  const Entry good = module_entry("good", words), bad = module_entry("bad", invalid),
              stale = module_entry("stale", words), lying = module_entry("lying", words);
  auto iface = device::reflect_pipeline_interface(words, "main", std::vector<device::SpecValue>{{0, 64}});
  REQUIRE(iface.has_value());
  auto other_iface = *iface;
  other_iface.push_constant_size += 4;
  auto store = store::make_memory_store();
  REQUIRE(store->put(spirv_namespace("vulkan1.2"), std::vector<Entry>{good, bad, stale, lying}).has_value());
  // "stale"'s blob was built from another version of its module (another digest).
  Entry older = stale;
  older.payload[40] ^= 1;
  seal_payload(older);
  REQUIRE(store
              ->put(dev.ns, std::vector<Entry>{blob_entry(good, dev, raw, *iface), blob_entry(older, dev, raw, *iface),
                                               blob_entry(lying, dev, raw, other_iface)})
              .has_value());

  transfer::DeploySelection sel;
  sel.for_device = dev.fingerprint();
  const auto out = dir.path() / "app.kcdeploy";
  auto result = transfer::write_deployment(*store, sel, out, nullptr);
  REQUIRE_MESSAGE(result.has_value(), result.error().message);
  CHECK(result->kernels == 3);  // good, stale and lying; bad left out
  CHECK(result->blobs == 1);    // good's only
  std::string refused;
  for (const auto& r : result->refused) refused += r + "\n";
  CHECK_MESSAGE(refused.find("'bad': its module fails spirv-val now") != std::string::npos, refused);
  CHECK_MESSAGE(refused.find("blob of 'stale': stale") != std::string::npos, refused);
  CHECK_MESSAGE(refused.find("blob of 'lying': the interface it records is not the module's") != std::string::npos,
                refused);

  auto file = deploy::DeployFile::open(out, {});
  REQUIRE(file.has_value());
  const auto& f = **file;
  CHECK(f.device_class() == dev.ns.name());
  auto g = f.find("good");
  REQUIRE(g.size() == 1);
  CHECK(g[0].blob_size == raw.size());
  CHECK(std::memcmp(f.at(g[0].blob_offset), raw.data(), raw.size()) == 0);
  CHECK(g[0].flags == deploy::k_kernel_has_interface);
  CHECK(g[0].push_constant_size == iface->push_constant_size);
  REQUIRE(g[0].binding_count == iface->bindings.size());
  const auto* b = reinterpret_cast<const deploy::Binding*>(f.at(g[0].bindings_offset));
  CHECK(b[0].descriptor_type == iface->bindings[0].descriptor_type);
  CHECK(g[0].spec_entry_count == iface->spec_entries.size());
  CHECK(std::string(f.string(g[0].key_id)) == good.key.id.hex());
  CHECK(f.find("stale")[0].blob_size == 0);
  CHECK(f.find("lying")[0].blob_size == 0);
  CHECK(f.find("bad").empty());

  // Selections and their errors.
  transfer::DeploySelection only;
  only.kernel_globs = {"go*"};
  auto one = transfer::write_deployment(*store, only, dir.path() / "one.kcdeploy", nullptr);
  REQUIRE(one.has_value());
  CHECK(one->kernels == 1);
  CHECK(one->blobs == 0);
  only.kernel_globs = {"nothing*"};
  CHECK(transfer::write_deployment(*store, only, dir.path() / "none.kcdeploy", nullptr).error().category ==
        Category::not_found);
  transfer::DeploySelection elsewhere;
  elsewhere.for_device = "0123456789abcdef";
  auto missing = transfer::write_deployment(*store, elsewhere, dir.path() / "x.kcdeploy", nullptr);
  REQUIRE(!missing);
  CHECK(missing.error().message.find("(it holds: " + dev.fingerprint() + ")") != std::string::npos);
  transfer::DeploySelection merge;
  merge.merge_caches = true;
  CHECK(transfer::write_deployment(*store, merge, dir.path() / "x.kcdeploy", nullptr).error().category ==
        Category::invalid_argument);
  CHECK(!std::filesystem::exists(dir.path() / "x.kcdeploy"));
}

TEST_CASE("deploy: CUDA code is taken per arch, each payload checked against its arch") {
  test::TempDir dir;
  auto store = store::make_memory_store();
  REQUIRE(store->put(cuda_namespace("sm_90"), std::vector<Entry>{test::cuda_entry("saxpy", "sm_90")}).has_value());
  REQUIRE(store->put(cuda_namespace("compute_80"), std::vector<Entry>{test::cuda_entry("saxpy", "compute_80")})
              .has_value());
  // A cubin for sm_80 filed under sm_86: not the code its namespace holds.
  Entry wrong = test::cuda_entry("scale", "sm_80");
  REQUIRE(store->put(cuda_namespace("sm_86"), std::vector<Entry>{wrong}).has_value());

  const auto out = dir.path() / "cuda.kcdeploy";
  auto all = transfer::write_deployment(*store, {}, out, nullptr);
  REQUIRE_MESSAGE(all.has_value(), all.error().message);
  CHECK(all->kernels == 2);
  CHECK(all->cuda == 2);
  REQUIRE(all->refused.size() == 1);
  CHECK(all->refused[0].find("cuda/sm_86 'scale'") != std::string::npos);
  auto file = deploy::DeployFile::open(out, {});
  REQUIRE(file.has_value());
  auto saxpy = (*file)->find("saxpy");
  REQUIRE(saxpy.size() == 2);  // compute_80, sm_90
  CHECK(std::string((*file)->string(saxpy[0].target)) == "compute_80");
  CHECK(saxpy[0].payload_kind == static_cast<std::uint32_t>(PayloadKind::ptx));
  CHECK(saxpy[1].payload_kind == static_cast<std::uint32_t>(PayloadKind::cubin));
  CHECK(std::string((*file)->string(saxpy[1].entry_point)) == "saxpy");

  transfer::DeploySelection only;
  only.cuda_archs = {"sm_90"};
  auto one = transfer::write_deployment(*store, only, dir.path() / "sm90.kcdeploy", nullptr);
  REQUIRE(one.has_value());
  CHECK(one->kernels == 1);
  CHECK(one->refused.empty());
}
