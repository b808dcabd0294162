// The device stage on a real Vulkan device: Mesa's lavapipe (software, Debian
// package mesa-vulkan-drivers). Lavapipe keeps only a header in compute
// pipeline caches, so these tests check correctness, never speed; a verify
// of a good blob is a miss there, every time, and the tests say so exactly.
// Shaders are compiled with glslangValidator (glslang-tools): the compile
// module is not a dependency of this one.
#include "kcache/device/device.hpp"

#include "test_support.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

using namespace kcache;
using namespace kcache::device;

namespace {

constexpr std::uint32_t k_vendor_mesa = 0x10005;  // VK_VENDOR_ID_MESA
constexpr std::uint32_t k_driver_llvmpipe = 13;   // VK_DRIVER_ID_MESA_LLVMPIPE
// What verify_pipeline returns for a good blob on lavapipe: its compute
// pipeline caches hold no code, so the driver must compile: a miss, always
// (measured: Mesa 22.3.6, LLVM 15; tests/cli/dev_vulkan_build.sh asserts the same).
constexpr VerifyOutcome k_lavapipe_verify = VerifyOutcome::miss;

// Storage buffer, uniform buffer, storage image, sampler + image, push
// constants, spec constants (one sizing the workgroup, a bool, an int16).
constexpr const char* k_compute = R"(#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint SCALE = 2;
layout(constant_id = 2) const bool NEGATE = false;
layout(constant_id = 3) const int16_t BIAS = int16_t(-1);
layout(set = 0, binding = 0) buffer Data { uint values[]; } data;
layout(set = 0, binding = 1) uniform Params { uint offset; } params;
layout(set = 2, binding = 0, rgba8) uniform writeonly image2D target;
layout(set = 2, binding = 1) uniform sampler2D source;
layout(push_constant) uniform Push { uint count; float bias; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= pc.count) return;
  uint v = data.values[i] * SCALE + params.offset + uint(pc.bias) + uint(int(BIAS));
  data.values[i] = NEGATE ? ~v : v;
  imageStore(target, ivec2(i, 0), texture(source, vec2(0.5)));
}
)";

constexpr const char* k_fragment = R"(#version 450
layout(location = 0) out vec4 color;
void main() { color = vec4(1.0); }
)";

// Needs SPIR-V capability AtomicFloat32AddEXT, which kcache's table does not
// know: the device stage must refuse it rather than guess.
constexpr const char* k_atomic_float = R"(#version 450
#extension GL_EXT_shader_atomic_float : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Data { float total; } data;
void main() { atomicAdd(data.total, 1.0); }
)";

std::vector<std::uint32_t> compile(const test::TempDir& dir, const std::string& name, const char* source) {
  auto src = dir.write(name, source);
  auto spv = dir.path() / (name + ".spv");
  std::string cmd = "glslangValidator -V --target-env vulkan1.2 -o '" + spv.string() + "' '" + src.string() + "' > '" +
                    spv.string() + ".log' 2>&1";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "glslangValidator failed, see ", spv.string(), ".log");
  std::ifstream in(spv, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() % 4 == 0);
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

// The error message of a failed Result, for REQUIRE_MESSAGE.
template <typename T>
std::string why(const Result<T>& r) {
  return r ? std::string() : r.error().message;
}

DeviceInfo lavapipe() {
  auto d = select_device("llvmpipe");
  REQUIRE_MESSAGE(d.has_value(), why(d));
  return *d;
}

std::unique_ptr<Device> open_lavapipe() {
  auto dev = Device::open(lavapipe());
  REQUIRE_MESSAGE(dev.has_value(), why(dev));
  return std::move(*dev);
}

const SpecValue k_spec[] = {{0, 32}, {1, 3}, {2, 1}, {3, 0xfffffffffffffff0ull}};

bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

// Environment change undone at scope exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (m_old) setenv(m_name, m_old->c_str(), 1);
    else unsetenv(m_name);
  }

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

}  // namespace

TEST_CASE("device: list_devices finds lavapipe with a complete fingerprint") {
  auto devices = list_devices();
  REQUIRE_MESSAGE(devices.has_value(), why(devices));
  REQUIRE(!devices->empty());
  const DeviceInfo* lvp = nullptr;
  for (const auto& d : *devices)
    if (contains(d.name, "llvmpipe")) lvp = &d;
  REQUIRE(lvp != nullptr);
  CHECK(lvp->type == DeviceType::cpu);
  CHECK(lvp->vendor_id == k_vendor_mesa);
  CHECK(lvp->driver_id == k_driver_llvmpipe);
  CHECK(lvp->driver_name == "llvmpipe");
  CHECK(contains(lvp->driver_info, "Mesa"));
  CHECK(lvp->api_version >= ((1u << 22) | (3u << 12)));
  CHECK(lvp->fail_on_compile_required);
  CHECK(lvp->device_uuid != Uuid{});
  CHECK(lvp->driver_uuid != Uuid{});
  CHECK(lvp->pipeline_cache_uuid != Uuid{});

  CHECK(lvp->ns.backend == "vulkan");
  CHECK(lvp->fingerprint().size() == 16);
  CHECK(lvp->ns == vulkan_namespace(lvp->make_fingerprint_record()));
  for (const auto& item : lvp->record().fields) {
    const auto& field = item.first;  // named, not bound: clang 14 cannot capture a binding
    const auto& value = item.second;
    CAPTURE(field);
    CHECK(!value.empty());
  }
  CHECK(*lvp->record().find("driverInfo") == lvp->driver_info);
  CHECK(*lvp->record().find("vendorID") == "0x10005");

  // Stable across calls: the fingerprint is a function of the device.
  auto again = list_devices();
  REQUIRE(again);
  CHECK((*again)[lvp->index].fingerprint() == lvp->fingerprint());
}

TEST_CASE("device: select by index, name and fingerprint") {
  DeviceInfo lvp = lavapipe();
  auto by_index = select_device(std::to_string(lvp.index));
  REQUIRE(by_index);
  CHECK(by_index->fingerprint() == lvp.fingerprint());

  auto by_name = select_device("LLVMPipe");
  REQUIRE(by_name);
  CHECK(by_name->fingerprint() == lvp.fingerprint());

  for (std::size_t n : {4, 8, 16}) {
    std::string prefix = lvp.fingerprint().substr(0, n);
    // A short prefix of digits only is an index (select_from's rule).
    if (n < 16 && prefix.find_first_not_of("0123456789") == std::string::npos) continue;
    for (char& c : prefix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    auto by_fp = select_device(prefix);
    REQUIRE_MESSAGE(by_fp.has_value(), why(by_fp));
    CHECK(by_fp->fingerprint() == lvp.fingerprint());
  }

  auto none = select_device("no-such-device");
  REQUIRE(!none);
  CHECK(none.error().category == Category::not_found);
  CHECK(contains(none.error().message, "llvmpipe"));

  auto out_of_range = select_device("999999");
  REQUIRE(!out_of_range);
  CHECK(out_of_range.error().category == Category::not_found);

  auto empty = select_device("");
  REQUIRE(!empty);
  CHECK(empty.error().category == Category::invalid_argument);
}

TEST_CASE("device: build_pipeline gives a header-valid blob; verify accepts it") {
  test::TempDir dir;
  auto spirv = compile(dir, "k.comp", k_compute);
  auto dev = open_lavapipe();
  CHECK(!dev->enabled_features().empty());

  auto blob = dev->build_pipeline(spirv, "main", k_spec);
  REQUIRE_MESSAGE(blob.has_value(), why(blob));
  CHECK(blob->data.size() >= k_pipeline_cache_header_size);
  CHECK(blob->create_ms >= 0);
  auto header = check_pipeline_cache_header(blob->data, dev->info());
  CHECK_MESSAGE(header.has_value(), why(header));

  // Wrapped as the store keeps it, and back.
  auto wrapped = wrap_blob(dev->info(), blob->data);
  auto raw = unwrap_blob(wrapped, dev->info());
  REQUIRE(raw);
  CHECK(raw->size() == blob->data.size());

  const auto given = dev->blobs_given_to_driver();
  auto verified = dev->verify_pipeline(spirv, "main", k_spec, *raw);
  REQUIRE_MESSAGE(verified.has_value(), why(verified));
  CHECK(dev->blobs_given_to_driver() == given + 1);
  // Lavapipe (Mesa 22.3, Debian 12) keeps only a header in a compute
  // pipeline cache, so creating the pipeline with FAIL_ON_PIPELINE_COMPILE_
  // REQUIRED from its blob returns VK_PIPELINE_COMPILE_REQUIRED every time:
  // exactly a miss. A hit (the flag ignored, or a cache that suddenly holds
  // code) or a failure both mean something changed; see k_lavapipe_verify.
  CHECK(verify_outcome_name(verified->outcome) == verify_outcome_name(k_lavapipe_verify));
  CHECK(!verified->blob_refused);
  CHECK(verified->create_ms >= 0);
  CHECK(verified->empty_cache_ms == -1);
  MESSAGE("lavapipe verify: ", verify_outcome_name(verified->outcome), " in ", verified->create_ms, " ms");

  // Without spec constants the defaults apply.
  auto plain = dev->build_pipeline(spirv, "main", {});
  CHECK_MESSAGE(plain.has_value(), why(plain));
}

TEST_CASE("device: merge_pipeline_caches merges checked blobs; a blob of another device never reaches the driver") {
  test::TempDir dir;
  auto spirv = compile(dir, "k.comp", k_compute);
  auto dev = open_lavapipe();
  auto a = dev->build_pipeline(spirv, "main", k_spec);
  auto b = dev->build_pipeline(spirv, "main", {});
  REQUIRE(a);
  REQUIRE(b);
  const std::vector<std::span<const std::uint8_t>> blobs{a->data, b->data};
  const auto given = dev->blobs_given_to_driver();
  auto merged = dev->merge_pipeline_caches(blobs);
  REQUIRE_MESSAGE(merged.has_value(), why(merged));
  CHECK(dev->blobs_given_to_driver() == given + 2);
  // A cache of this device (lavapipe keeps a header only: what it merges to).
  CHECK(check_pipeline_cache_header(*merged, dev->info()).has_value());
  // A blob whose header names another device: refused before the driver.
  auto foreign = a->data;
  foreign[12] ^= 0xff;  // deviceID
  const std::vector<std::span<const std::uint8_t>> bad{a->data, foreign};
  auto refused = dev->merge_pipeline_caches(bad);
  REQUIRE(!refused);
  CHECK(refused.error().category == Category::fingerprint_mismatch);
  CHECK(dev->blobs_given_to_driver() == given + 3);  // the first blob only
}

TEST_CASE("device: verify measures times where it cannot ask for hits") {
  test::TempDir dir;
  auto spirv = compile(dir, "k.comp", k_compute);
  auto dev = Device::open(lavapipe(), Device::Options{.fail_on_compile_required = false});
  REQUIRE_MESSAGE(dev.has_value(), why(dev));
  auto blob = (*dev)->build_pipeline(spirv, "main", k_spec);
  REQUIRE(blob);
  auto v = (*dev)->verify_pipeline(spirv, "main", k_spec, blob->data);
  REQUIRE_MESSAGE(v.has_value(), why(v));
  CHECK(v->outcome == VerifyOutcome::timed);
  CHECK(v->create_ms > 0);
  CHECK(v->empty_cache_ms > 0);
  CHECK(v->message == "");
  MESSAGE("lavapipe creation: ", v->create_ms, " ms with the blob, ", v->empty_cache_ms, " ms without");
}

TEST_CASE("device: a blob for another device never reaches the driver") {
  test::TempDir dir;
  auto spirv = compile(dir, "k.comp", k_compute);
  auto dev = open_lavapipe();
  auto blob = dev->build_pipeline(spirv, "main", k_spec);
  REQUIRE(blob);
  const auto given = dev->blobs_given_to_driver();

  struct Case {
    const char* field;
    std::size_t offset;
    Category category;
  };
  for (const Case& c :
       {Case{"headerSize", 0, Category::corruption}, Case{"headerVersion", 4, Category::corruption},
        Case{"vendorID", 8, Category::fingerprint_mismatch}, Case{"deviceID", 12, Category::fingerprint_mismatch},
        Case{"pipelineCacheUUID", 20, Category::fingerprint_mismatch}}) {
    CAPTURE(c.field);
    auto bad = blob->data;
    bad[c.offset] ^= 0x80;
    auto header = check_pipeline_cache_header(bad, dev->info());
    REQUIRE(!header);
    CHECK(header.error().category == c.category);
    CHECK(contains(header.error().message, c.field));
    auto r = dev->verify_pipeline(spirv, "main", k_spec, bad);
    REQUIRE(!r);
    CHECK(r.error().category == c.category);
  }
  auto truncated = std::span(blob->data).first(k_pipeline_cache_header_size - 1);
  auto r = dev->verify_pipeline(spirv, "main", k_spec, truncated);
  REQUIRE(!r);
  CHECK(r.error().category == Category::corruption);
  r = dev->verify_pipeline(spirv, "main", k_spec, {});
  REQUIRE(!r);
  CHECK(dev->blobs_given_to_driver() == given);
}

TEST_CASE("device: modules the vulkan backend cannot build are refused clearly") {
  test::TempDir dir;
  auto dev = open_lavapipe();
  auto spirv = compile(dir, "k.comp", k_compute);

  auto frag = compile(dir, "f.frag", k_fragment);
  auto r = dev->build_pipeline(frag, "main", {});
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);
  CHECK(contains(r.error().message, "fragment"));

  r = dev->build_pipeline(spirv, "nope", {});
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);
  CHECK(contains(r.error().message, "nope"));

  const SpecValue unknown[] = {{42, 1}};
  r = dev->build_pipeline(spirv, "main", unknown);
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);
  CHECK(contains(r.error().message, "42"));

  const SpecValue too_wide[] = {{3, 0x12345}};  // BIAS is an int16
  r = dev->build_pipeline(spirv, "main", too_wide);
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);

  const SpecValue not_bool[] = {{2, 2}};
  r = dev->build_pipeline(spirv, "main", not_bool);
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);

  const SpecValue huge_workgroup[] = {{0, 1u << 20}};
  r = dev->build_pipeline(spirv, "main", huge_workgroup);
  REQUIRE(!r);
  CHECK(r.error().category == Category::device_unavailable);
  CHECK(contains(r.error().message, "maxComputeWorkGroup"));

  std::vector<std::uint32_t> garbage = {0x12345678, 1, 2, 3, 4, 5};
  r = dev->build_pipeline(garbage, "main", {});
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);

  auto atomic = compile(dir, "a.comp", k_atomic_float);
  r = dev->build_pipeline(atomic, "main", {});
  REQUIRE(!r);
  CHECK(r.error().category == Category::device_unavailable);
  CHECK(contains(r.error().message, "lacks"));
}

TEST_CASE("device: build_pipeline from 4 threads at once") {
  test::TempDir dir;
  auto spirv = compile(dir, "k.comp", k_compute);
  auto dev = open_lavapipe();
  constexpr int k_threads = 4, k_per_thread = 6;
  std::vector<std::string> errors(k_threads);
  std::vector<int> built(k_threads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < k_per_thread; ++i) {
        // Distinct spec values so the threads build distinct pipelines.
        const SpecValue spec[] = {{0, 16}, {1, static_cast<std::uint64_t>(t * 100 + i)}};
        auto blob = dev->build_pipeline(spirv, "main", spec);
        if (!blob) {
          errors[t] = blob.error().message;
          return;
        }
        if (!check_pipeline_cache_header(blob->data, dev->info())) {
          errors[t] = "bad header";
          return;
        }
        auto v = dev->verify_pipeline(spirv, "main", spec, blob->data);
        if (!v || v->outcome != k_lavapipe_verify) {
          errors[t] = v ? std::string(verify_outcome_name(v->outcome)) + ": " + v->message : v.error().message;
          return;
        }
        ++built[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < k_threads; ++t) {
    CAPTURE(t);
    CHECK(errors[t] == "");
    CHECK(built[t] == k_per_thread);
  }
}

TEST_CASE("device: use_vulkan_loader naming a missing library means no device") {
  REQUIRE(list_devices());  // the real loader is already in use in this process
  const DeviceInfo info = lavapipe();
  {
    // The module reads no environment: this variable alone changes nothing.
    ScopedEnv env("KCACHE_VULKAN_LOADER", "/nonexistent/libvulkan.so.1");
    CHECK(list_devices());
    use_vulkan_loader("/nonexistent/libvulkan.so.1");
    auto r = list_devices();
    REQUIRE(!r);
    CHECK(r.error().category == Category::device_unavailable);
    CHECK(contains(r.error().message, "KCACHE_VULKAN_LOADER"));
    CHECK(contains(r.error().message, "apt install libvulkan1 mesa-vulkan-drivers"));
    auto s = select_device("0");
    REQUIRE(!s);
    CHECK(s.error().category == Category::device_unavailable);
    auto d = Device::open(info);
    REQUIRE(!d);
    CHECK(d.error().category == Category::device_unavailable);
    use_vulkan_loader("");
  }
  CHECK(list_devices());
  // Vulkan is loaded in this process: too late to change the drivers' caches.
  CHECK(!disable_driver_disk_caches());
}

TEST_CASE("device: no loader in a fresh process") {
  // The child half: this test binary run again with the loader hidden, before
  // anything in its process has touched Vulkan. It reports through a file.
  if (const char* report = std::getenv("KCACHE_DEVICE_TEST_CHILD")) {
    use_vulkan_loader("/nonexistent");
    const bool fresh = disable_driver_disk_caches();  // nothing loaded yet: takes effect
    auto r = list_devices();
    std::ofstream(report) << (fresh ? "fresh " : "not-fresh ")
                          << (r ? std::string("listed devices")
                                : std::string(category_name(r.error().category)) + ": " + r.error().message);
    return;
  }
  test::TempDir dir;
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  const auto report = dir.path() / "child.txt";
  const std::string cmd = "KCACHE_DEVICE_TEST_CHILD='" + report.string() + "' '" + self.string() +
                          "' -tc='device: no loader in a fresh process' > '" + (dir.path() / "child.log").string() +
                          "' 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(report);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.starts_with("fresh device_unavailable: "));
  CHECK(contains(text, "/nonexistent"));
  CHECK(contains(text, "apt install libvulkan1 mesa-vulkan-drivers"));
}
