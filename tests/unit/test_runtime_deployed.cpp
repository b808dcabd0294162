// kcache_file_open and lookups in a deployment file through the C ABI: the
// kernel handed out in place (module, interface, specialization, id fields,
// blob) equals what a store lookup of the same kernel gives; the blob is
// served only to the file's device class and a device its Vulkan header
// names; targets, ambiguity, CUDA choice, keys, options and NULLs.
#include "kcache/deploy/deploy_file.hpp"
#include "kcache/runtime/kcache.h"
#include "kcache/runtime/runtime.hpp"
#include "kcache/util/file.hpp"

#include "test_runtime_support.hpp"

#include <sodium.h>

#include <cstring>
#include <string>
#include <vector>

using namespace kcache;
using namespace kcache::test;

namespace {

bool mentions(std::string_view s, std::string_view what) { return s.find(what) != std::string::npos; }

// Kernel "scale" in a store (SPIR-V, and lavapipe's blob) and the same in a
// deployment file written the way `kcache deploy` writes it.
struct DeployFixture : LavapipeStore {
  DeployFixture() { put_blob(raw); }

  deploy::KernelRecord record(const std::string& target = "vulkan1.2") const {
    deploy::KernelRecord r;
    r.name = "scale";
    r.target = target;
    r.stage = "compute";
    r.entry_point = "main";
    r.key_id = spirv.key.id.hex();
    r.payload = spirv.payload;
    r.id_fields = spirv.id_fields;
    auto iface = device::reflect_pipeline_interface(words, "main", k_runtime_spec);
    REQUIRE(iface.has_value());
    r.has_interface = true;
    for (const auto& b : iface->bindings) r.bindings.push_back({b.set, b.binding, b.descriptor_type, b.count});
    r.push_constant_size = iface->push_constant_size;
    for (const auto& s : iface->spec_entries) r.spec_entries.push_back({s.constant_id, s.offset, s.size});
    r.spec_data = iface->spec_data;
    if (target == "vulkan1.2") r.blob = raw;
    return r;
  }

  std::string write(const deploy::Contents& c, const deploy::SigningKey* key = nullptr) const {
    auto bytes = deploy::encode(c, key);
    REQUIRE_MESSAGE(bytes.has_value(), bytes.error().message);
    const auto path = dir.path() / ("f" + std::to_string(counter++) + ".kcdeploy");
    REQUIRE(util::write_file_atomic(path, *bytes).has_value());
    return path.string();
  }
  std::string file_of_class() const {
    deploy::Contents c;
    c.device_class = lvp.ns.name();
    c.kernels = {record()};
    return write(c);
  }
  mutable int counter = 0;
};

kcache_store* open_deployment(const std::string& path, const kcache_file_options* o = nullptr) {
  kcache_store* s = nullptr;
  const kcache_status st = kcache_file_open(path.c_str(), o, &s);
  REQUIRE_MESSAGE(st == KCACHE_OK, kcache_last_error());
  return s;
}

}  // namespace

TEST_CASE("runtime file: a kernel from the file is the kernel a store lookup gives, blob served") {
  DeployFixture fx;
  const kcache_device dev = c_device(fx.lvp);
  kcache_store* from_store = nullptr;
  REQUIRE(kcache_store_open(fx.store.c_str(), &from_store) == KCACHE_OK);
  kcache_store* from_file = open_deployment(fx.file_of_class());
  kcache_kernel *a = nullptr, *b = nullptr;
  REQUIRE(kcache_lookup(from_store, "scale", &dev, nullptr, &a) == KCACHE_OK);
  REQUIRE_MESSAGE(kcache_lookup(from_file, "scale", &dev, nullptr, &b) == KCACHE_OK, kcache_last_error());
  CHECK(kcache_kernel_blob_status(b) == KCACHE_BLOB_SERVED);
  CHECK(std::string(kcache_kernel_blob_reason(b)).empty());
  for (auto field : {kcache_kernel_name, kcache_kernel_key_id, kcache_kernel_target, kcache_kernel_stage,
                     kcache_kernel_entry_point, kcache_kernel_interface_error})
    CHECK(std::string(field(a)) == std::string(field(b)));
  size_t wa = 0, wb = 0;
  const uint32_t* sa = kcache_kernel_spirv(a, &wa);
  const uint32_t* sb = kcache_kernel_spirv(b, &wb);
  REQUIRE(wa == wb);
  CHECK(std::memcmp(sa, sb, wa * 4) == 0);
  size_t ba = 0, bb = 0;
  const uint8_t* pa = kcache_kernel_pipeline_cache(a, &ba);
  const uint8_t* pb = kcache_kernel_pipeline_cache(b, &bb);
  REQUIRE(ba == bb);
  CHECK(std::memcmp(pa, pb, ba) == 0);
  uint32_t na = 0, nb = 0;
  const kcache_binding* ia = kcache_kernel_bindings(a, &na);
  const kcache_binding* ib = kcache_kernel_bindings(b, &nb);
  REQUIRE(na == 2);
  REQUIRE(na == nb);
  CHECK(std::memcmp(ia, ib, na * sizeof *ia) == 0);
  CHECK(kcache_kernel_push_constant_size(a) == kcache_kernel_push_constant_size(b));
  CHECK(kcache_kernel_layout_id(a) == kcache_kernel_layout_id(b));
  CHECK(kcache_kernel_layout_id(b) != 0);
  uint32_t ea = 0, eb = 0;
  const kcache_spec_entry* xa = kcache_kernel_spec_entries(a, &ea);
  const kcache_spec_entry* xb = kcache_kernel_spec_entries(b, &eb);
  REQUIRE(ea == eb);
  for (uint32_t i = 0; i < ea; ++i) {
    CHECK(xa[i].constant_id == xb[i].constant_id);
    CHECK(xa[i].offset == xb[i].offset);
    CHECK(xa[i].size == xb[i].size);
  }
  size_t da = 0, db = 0;
  const void* va = kcache_kernel_spec_data(a, &da);
  const void* vb = kcache_kernel_spec_data(b, &db);
  REQUIRE(da == db);
  CHECK(std::memcmp(va, vb, da) == 0);
  CHECK(std::string(kcache_kernel_id_field(b, "spec_constant:1")) == "int:-3");
  CHECK(std::string(kcache_kernel_id_field_name(b, 0)) == std::string(kcache_kernel_id_field_name(a, 0)));
  CHECK(kcache_kernel_id_field_name(b, 99) == nullptr);
  CHECK(kcache_kernel_id_field(b, "nope") == nullptr);
  size_t bytes = 0;
  CHECK(kcache_kernel_payload(b, &bytes) == reinterpret_cast<const uint8_t*>(sb));
  CHECK(bytes == wb * 4);
  CHECK(kcache_kernel_payload_kind(b) == KCACHE_PAYLOAD_SPIRV);
  // The kernel outlives the store: it keeps the file mapped.
  kcache_store_close(from_file);
  CHECK(kcache_kernel_spirv(b, &wb)[0] == 0x07230203);
  kcache_kernel_free(a);
  kcache_kernel_free(b);
  kcache_store_close(from_store);
}

TEST_CASE("runtime file: another device class, another driver, no blobs: SPIR-V served, the reason given") {
  DeployFixture fx;
  kcache_store* s = open_deployment(fx.file_of_class());
  kcache_device other = c_device(fx.lvp);
  other.driver_version += 1;  // another class: another namespace
  kcache_kernel* k = nullptr;
  REQUIRE(kcache_lookup(s, "scale", &other, nullptr, &k) == KCACHE_OK);
  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_REFUSED);
  CHECK(mentions(kcache_kernel_blob_reason(k), "the deployment file's blobs are for " + fx.lvp.ns.name()));
  size_t bytes = 99;
  CHECK(kcache_kernel_pipeline_cache(k, &bytes) == nullptr);
  CHECK(bytes == 0);
  size_t words = 0;
  CHECK(kcache_kernel_spirv(k, &words) != nullptr);
  kcache_kernel_free(k);
  // No device: not requested.
  REQUIRE(kcache_lookup(s, "scale", nullptr, nullptr, &k) == KCACHE_OK);
  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_NOT_REQUESTED);
  kcache_kernel_free(k);
  kcache_store_close(s);

  // The class's file, a blob whose Vulkan header names another device: refused.
  deploy::Contents c;
  c.device_class = fx.lvp.ns.name();
  c.kernels = {fx.record()};
  c.kernels[0].blob[12] ^= 0xff;  // deviceID (VkPipelineCacheHeaderVersionOne)
  s = open_deployment(fx.write(c));
  const kcache_device dev = c_device(fx.lvp);
  REQUIRE(kcache_lookup(s, "scale", &dev, nullptr, &k) == KCACHE_OK);
  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_REFUSED);
  CHECK(mentions(kcache_kernel_blob_reason(k), "deviceID"));
  kcache_kernel_free(k);
  kcache_store_close(s);

  // A file written without a class: absent.
  c.device_class.clear();
  c.kernels = {fx.record("vulkan1.3")};
  s = open_deployment(fx.write(c));
  REQUIRE(kcache_lookup(s, "scale", &dev, nullptr, &k) == KCACHE_OK);
  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_ABSENT);
  CHECK(mentions(kcache_kernel_blob_reason(k), "carries no pipeline-cache blobs"));
  kcache_kernel_free(k);
  kcache_store_close(s);
}

TEST_CASE("runtime file: targets, ambiguity, keys, listing, CUDA choice") {
  DeployFixture fx;
  deploy::Contents c;
  c.device_class = fx.lvp.ns.name();
  c.kernels = {fx.record("vulkan1.2"), fx.record("vulkan1.3")};
  deploy::KernelRecord sm80, sm86, ptx90;
  for (auto* r : {&sm80, &sm86, &ptx90}) {
    r->name = "saxpy";
    r->key_id = "00000000000000000000000000000001";
    r->entry_point = "saxpy";
    r->payload_kind = PayloadKind::cubin;
    r->payload = {0x7f, 'E', 'L', 'F'};
  }
  sm80.target = "sm_80";
  sm86.target = "sm_86";
  ptx90.target = "compute_90";
  ptx90.payload_kind = PayloadKind::ptx;
  ptx90.payload = {'.', 'v'};
  c.kernels.insert(c.kernels.end(), {sm80, sm86, ptx90});
  kcache_store* s = open_deployment(fx.write(c));
  kcache_kernel* k = nullptr;
  // Two targets, no device: name one.
  CHECK(kcache_lookup(s, "scale", nullptr, nullptr, &k) == KCACHE_ERROR_AMBIGUOUS);
  CHECK(mentions(kcache_last_error(), "vulkan1.2, vulkan1.3"));
  CHECK(std::string(kcache_status_name(KCACHE_ERROR_AMBIGUOUS)) == "ambiguous");
  // With the class's device: the target whose blob it is.
  const kcache_device dev = c_device(fx.lvp);
  REQUIRE(kcache_lookup(s, "scale", &dev, nullptr, &k) == KCACHE_OK);
  CHECK(std::string(kcache_kernel_target(k)) == "vulkan1.2");
  kcache_kernel_free(k);
  // A device of another class has no blob here: the target is its to name.
  kcache_device other = dev;
  other.driver_version += 1;
  CHECK(kcache_lookup(s, "scale", &other, nullptr, &k) == KCACHE_ERROR_AMBIGUOUS);
  REQUIRE(kcache_lookup(s, "scale", nullptr, "vulkan1.3", &k) == KCACHE_OK);
  CHECK(std::string(kcache_kernel_target(k)) == "vulkan1.3");
  kcache_kernel_free(k);
  CHECK(kcache_lookup(s, "scale", nullptr, "vulkan1.1", &k) == KCACHE_ERROR_NOT_FOUND);
  CHECK(kcache_lookup(s, "nope", nullptr, nullptr, &k) == KCACHE_ERROR_NOT_FOUND);
  REQUIRE(kcache_lookup_key(s, fx.spirv.key.id.hex().c_str(), nullptr, "vulkan1.3", &k) == KCACHE_OK);
  CHECK(std::string(kcache_kernel_name(k)) == "scale");
  kcache_kernel_free(k);
  CHECK(kcache_lookup_key(s, "zz", nullptr, nullptr, &k) == KCACHE_ERROR_INVALID_ARGUMENT);
  std::vector<std::string> names;
  auto collect = [](const char* name, void* user) {
    static_cast<std::vector<std::string>*>(user)->emplace_back(name);
    return 0;
  };
  REQUIRE(kcache_list_kernels(s, nullptr, collect, &names) == KCACHE_OK);
  CHECK(names == std::vector<std::string>{"scale", "scale"});
  names.clear();
  REQUIRE(kcache_list_cuda_kernels(s, collect, &names) == KCACHE_OK);
  CHECK(names == std::vector<std::string>{"saxpy"});
  // CUDA: the plain cubin of the highest minor that runs; PTX past that.
  REQUIRE(kcache_lookup_cuda(s, "saxpy", 8, 9, &k) == KCACHE_OK);
  CHECK(std::string(kcache_kernel_target(k)) == "sm_86");
  CHECK(kcache_kernel_payload_kind(k) == KCACHE_PAYLOAD_CUBIN);
  CHECK(std::string(kcache_kernel_function_symbol(k)) == "saxpy");
  kcache_kernel_free(k);
  REQUIRE(kcache_lookup_cuda(s, "saxpy", 9, 0, &k) == KCACHE_OK);
  CHECK(std::string(kcache_kernel_target(k)) == "compute_90");
  size_t n = 0;
  const uint8_t* text = kcache_kernel_payload(k, &n);
  CHECK(n == 2);
  CHECK(text[n] == 0);
  kcache_kernel_free(k);
  CHECK(kcache_lookup_cuda(s, "saxpy", 7, 5, &k) == KCACHE_ERROR_NOT_FOUND);
  CHECK(mentions(kcache_last_error(), "compute_90, sm_80, sm_86"));
  kcache_store_close(s);
}

TEST_CASE("runtime file: keys, options and NULLs") {
  DeployFixture fx;
  REQUIRE(sodium_init() >= 0);
  deploy::SigningKey key;
  crypto_sign_keypair(key.public_key.data(), key.secret.data());
  deploy::Contents c;
  c.kernels = {fx.record("vulkan1.3")};
  const std::string unsigned_file = fx.write(c), signed_file = fx.write(c, &key);
  kcache_file_options o{};
  o.struct_size = sizeof o;
  o.public_key = key.public_key.data();
  kcache_store* s = nullptr;
  CHECK(kcache_file_open(unsigned_file.c_str(), &o, &s) == KCACHE_ERROR_CORRUPTION);
  CHECK(s == nullptr);
  CHECK(mentions(kcache_last_error(), "unsigned"));
  s = open_deployment(signed_file, &o);
  kcache_store_close(s);
  s = open_deployment(signed_file);  // no key asked: a signed file opens too
  kcache_store_close(s);
  // A struct from a program built against a smaller (impossible) version,
  // an unknown flag, NULLs.
  kcache_file_options small = o;
  small.struct_size = 4;
  CHECK(kcache_file_open(signed_file.c_str(), &small, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
  kcache_file_options flags = o;
  flags.flags = 0x80;
  CHECK(kcache_file_open(signed_file.c_str(), &flags, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_file_open(nullptr, &o, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_file_open(signed_file.c_str(), &o, nullptr) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_file_open((fx.dir.path() / "missing").c_str(), nullptr, &s) == KCACHE_ERROR_NOT_FOUND);
  CHECK(kcache_file_open(fx.store.c_str(), nullptr, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
  // A damaged file: corruption, naming the file.
  auto bytes = util::read_file(signed_file);
  REQUIRE(bytes.has_value());
  (*bytes)[bytes->size() - 3] ^= 4;
  REQUIRE(util::write_file_atomic(fx.dir.path() / "damaged.kcdeploy",
                                  {reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()})
              .has_value());
  CHECK(kcache_file_open((fx.dir.path() / "damaged.kcdeploy").c_str(), nullptr, &s) == KCACHE_ERROR_CORRUPTION);
  CHECK(mentions(kcache_last_error(), "damaged.kcdeploy"));
  CHECK(kcache_runtime_api_version() == KCACHE_RUNTIME_API_VERSION);
  CHECK(KCACHE_RUNTIME_API_VERSION == 6);
  // The C++ wrapper.
  auto store = runtime::Store::open_file(signed_file, key.public_key.data());
  REQUIRE(store.has_value());
  auto k = store->lookup("scale");
  REQUIRE(k.has_value());
  CHECK(k->spirv().size() == fx.words.size());
}
