// The C ABI (kcache.h) and the header-only C++ wrapper (runtime.hpp) over a
// real LMDB store: the same lookups as test_runtime_lookup.cpp seen through
// the handles, statuses and thread-local messages an application uses.
#include "kcache/runtime/kcache.h"
#include "kcache/runtime/runtime.hpp"

#include "test_runtime_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace kcache;
using namespace kcache::test;

namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// "scale" with its blob for lavapipe, and "other" (SPIR-V only).
struct Fixture : LavapipeStore {
  Fixture() {
    put(store, spirv_namespace("vulkan1.2"), {spirv_entry("other", words)});
    put_blob(raw);
  }
};

int collect(const char* name, void* user) {
  static_cast<std::vector<std::string>*>(user)->emplace_back(name);
  return 0;
}

}  // namespace

TEST_CASE("runtime C API: open, look up with a device, read every accessor, free") {
  Fixture f;
  kcache_store* s = nullptr;
  REQUIRE_MESSAGE(kcache_store_open(f.store.c_str(), &s) == KCACHE_OK, kcache_last_error());
  const kcache_device dev = c_device(f.lvp);

  kcache_kernel* k = nullptr;
  REQUIRE_MESSAGE(kcache_lookup(s, "scale", &dev, nullptr, &k) == KCACHE_OK, kcache_last_error());
  CHECK(std::string(kcache_kernel_name(k)) == "scale");
  CHECK(std::string(kcache_kernel_key_id(k)) == f.spirv.key.id.hex());
  CHECK(std::string(kcache_kernel_target(k)) == "vulkan1.2");
  CHECK(std::string(kcache_kernel_stage(k)) == "compute");
  CHECK(std::string(kcache_kernel_entry_point(k)) == "main");
  size_t words = 0;
  const uint32_t* code = kcache_kernel_spirv(k, &words);
  CHECK(std::vector<std::uint32_t>(code, code + words) == f.words);

  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_SERVED);
  CHECK(std::string(kcache_kernel_blob_reason(k)).empty());
  size_t bytes = 0;
  const uint8_t* blob = kcache_kernel_pipeline_cache(k, &bytes);
  CHECK(std::vector<std::uint8_t>(blob, blob + bytes) == f.raw);

  uint32_t n = 0;
  const kcache_binding* b = kcache_kernel_bindings(k, &n);
  REQUIRE(n == 2);
  CHECK(b[1].set == 1);
  CHECK(b[1].binding == 2);
  CHECK(kcache_kernel_push_constant_size(k) == 4);
  // "other" is the same module: the same layout, the same id; 0 only without an interface.
  kcache_kernel* other = nullptr;
  REQUIRE(kcache_lookup(s, "other", nullptr, nullptr, &other) == KCACHE_OK);
  CHECK(kcache_kernel_layout_id(k) != 0);
  CHECK(kcache_kernel_layout_id(other) == kcache_kernel_layout_id(k));
  kcache_kernel_free(other);
  const kcache_spec_entry* se = kcache_kernel_spec_entries(k, &n);
  REQUIRE(n == 2);
  size_t spec_bytes = 0;
  const void* data = kcache_kernel_spec_data(k, &spec_bytes);
  REQUIRE(data != nullptr);
  for (uint32_t i = 0; i < n; ++i) CHECK(se[i].offset + se[i].size <= spec_bytes);
  kcache_kernel_free(k);

  // By key, without a device.
  REQUIRE(kcache_lookup_key(s, f.spirv.key.id.hex().c_str(), nullptr, nullptr, &k) == KCACHE_OK);
  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_NOT_REQUESTED);
  CHECK(kcache_kernel_pipeline_cache(k, &bytes) == nullptr);
  CHECK(bytes == 0);
  kcache_kernel_free(k);

  std::vector<std::string> names;
  REQUIRE(kcache_list_kernels(s, "vulkan1.2", collect, &names) == KCACHE_OK);
  CHECK(names == std::vector<std::string>{"other", "scale"});
  names.clear();
  REQUIRE(kcache_list_kernels(s, "vulkan1.0", collect, &names) == KCACHE_OK);
  CHECK(names.empty());
  kcache_store_close(s);
}

TEST_CASE("runtime C API: KCACHE_OPEN_DEVICE_MINIMAL reads the minimal device profile's blobs") {
  Fixture f;
  const device::DeviceInfo minimal = f.lvp.with_profile(device::DeviceProfile::minimal);
  TempDir other;
  const auto store = other.path() / "store";
  put(store, spirv_namespace("vulkan1.2"), {f.spirv});
  put(store, minimal.ns, {pipeline_entry(f.spirv, minimal, f.raw)});
  const kcache_device dev = c_device(f.lvp);  // what the application knows of its device

  kcache_store* s = nullptr;
  kcache_kernel* k = nullptr;
  REQUIRE(kcache_store_open_flags(store.c_str(), KCACHE_OPEN_DEVICE_MINIMAL, &s) == KCACHE_OK);
  REQUIRE(kcache_lookup(s, "scale", &dev, nullptr, &k) == KCACHE_OK);
  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_SERVED);
  kcache_kernel_free(k);
  kcache_store_close(s);

  REQUIRE(kcache_store_open_flags(store.c_str(), 0, &s) == KCACHE_OK);
  REQUIRE(kcache_lookup(s, "scale", &dev, nullptr, &k) == KCACHE_OK);
  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_ABSENT);
  CHECK(std::string(kcache_kernel_blob_reason(k)).find("deviceProfile 2-minimal") != std::string::npos);
  kcache_kernel_free(k);
  kcache_store_close(s);
}

TEST_CASE("runtime C API: layout ids differ with the bindings or the push constants") {
  TempDir dir;
  const std::string wider =
      std::string(k_runtime_shader)
          .replace(std::string(k_runtime_shader).find("uint count;"), 11, "uint count; uint pad;");
  put(dir.path() / "store", spirv_namespace("vulkan1.2"),
      {spirv_entry("scale", compile_glsl(dir, "scale", k_runtime_shader)),
       spirv_entry("wider", compile_glsl(dir, "wider", wider.c_str()))});
  kcache_store* s = nullptr;
  REQUIRE(kcache_store_open((dir.path() / "store").c_str(), &s) == KCACHE_OK);
  kcache_kernel* a = nullptr;
  kcache_kernel* b = nullptr;
  REQUIRE(kcache_lookup(s, "scale", nullptr, nullptr, &a) == KCACHE_OK);
  REQUIRE(kcache_lookup(s, "wider", nullptr, nullptr, &b) == KCACHE_OK);
  CHECK(kcache_kernel_push_constant_size(b) == 8);
  CHECK(kcache_kernel_layout_id(a) != kcache_kernel_layout_id(b));
  kcache_kernel_free(a);
  kcache_kernel_free(b);
  kcache_store_close(s);
}

TEST_CASE("runtime C API: a changed device field withholds the blob, errors carry status and message") {
  Fixture f;
  kcache_store* s = nullptr;
  REQUIRE(kcache_store_open(f.store.c_str(), &s) == KCACHE_OK);
  kcache_device dev = c_device(f.lvp);
  dev.pipeline_cache_uuid[0] ^= 1;
  kcache_kernel* k = nullptr;
  REQUIRE(kcache_lookup(s, "scale", &dev, nullptr, &k) == KCACHE_OK);
  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_ABSENT);
  CHECK(contains(kcache_kernel_blob_reason(k), "no pipeline-cache blob"));
  size_t words = 0;
  CHECK(kcache_kernel_spirv(k, &words) != nullptr);
  CHECK(words == f.words.size());
  kcache_kernel_free(k);

  CHECK(kcache_lookup(s, "missing", &dev, nullptr, &k) == KCACHE_ERROR_NOT_FOUND);
  CHECK(k == nullptr);
  CHECK(contains(kcache_last_error(), "missing"));
  CHECK(std::string(kcache_status_name(KCACHE_ERROR_NOT_FOUND)) == "not_found");
  CHECK(kcache_lookup(s, nullptr, &dev, nullptr, &k) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_lookup_key(s, "not-hex", nullptr, nullptr, &k) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kcache_last_error(), "32 hex digits"));
  // A successful call clears the message.
  REQUIRE(kcache_lookup(s, "scale", nullptr, nullptr, &k) == KCACHE_OK);
  CHECK(std::string(kcache_last_error()).empty());
  kcache_kernel_free(k);
  kcache_store_close(s);

  kcache_store* none = nullptr;
  TempDir empty;
  CHECK(kcache_store_open((empty.path() / "absent").c_str(), &none) == KCACHE_ERROR_NOT_FOUND);
  CHECK(none == nullptr);
  CHECK(contains(kcache_last_error(), "absent"));
  kcache_store_close(nullptr);
  kcache_kernel_free(nullptr);
  CHECK(std::string(kcache_version()) == KCACHE_VERSION);
}

namespace {

/// Sets (or, for nullptr, unsets) environment variables for one scope and
/// puts them back after: kcache_store_open(NULL) reads the environment, the
/// only C ABI call that does.
class ScopedEnv {
 public:
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    m_saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    for (auto it = m_saved.rbegin(); it != m_saved.rend(); ++it) {
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else ::unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> m_saved;
};

/// Whether the default store (kcache_store_open(NULL)) holds `kernel`.
bool default_store_has(const char* kernel) {
  kcache_store* s = nullptr;
  if (kcache_store_open(nullptr, &s) != KCACHE_OK) return false;
  kcache_kernel* k = nullptr;
  const bool found = kcache_lookup(s, kernel, nullptr, nullptr, &k) == KCACHE_OK;
  kcache_kernel_free(k);
  kcache_store_close(s);
  return found;
}

}  // namespace

// kcache_store_open(NULL) and the CLI resolve the store through one resolver
// (settings::Resolver): KCACHE_STORE, else the user's `store` setting, else
// XDG_CACHE_HOME / HOME. Before, the user's setting was the CLI's alone and
// an application opened ~/.cache/kcache.
TEST_CASE("runtime C API: kcache_store_open(NULL) opens the store the CLI's settings name") {
  TempDir dir;
  const auto words = compile_glsl(dir, "scale", k_runtime_shader);
  const auto users = dir.path() / "users-store", envs = dir.path() / "env-store";
  put(users, spirv_namespace("vulkan1.2"), {spirv_entry("in_users", words)});
  put(envs, spirv_namespace("vulkan1.2"), {spirv_entry("in_envs", words)});
  dir.write("config/kcache/config", "kcache-config 1\nstore = " + users.string() + "\n");
  ScopedEnv env;
  env.set("KCACHE_STORE", nullptr);
  env.set("XDG_CACHE_HOME", nullptr);
  env.set("HOME", (dir.path() / "home").c_str());
  env.set("XDG_CONFIG_HOME", (dir.path() / "config").c_str());
  CHECK(default_store_has("in_users"));  // the user's `store` setting
  env.set("KCACHE_STORE", envs.c_str());
  CHECK(default_store_has("in_envs"));  // KCACHE_STORE over it
  CHECK_FALSE(default_store_has("in_users"));
  // A damaged user settings file is refused as by the CLI, naming it.
  env.set("KCACHE_STORE", nullptr);
  dir.write("config/kcache/config", "kcache-config 1\nstore = \n");
  kcache_store* s = nullptr;
  CHECK(kcache_store_open(nullptr, &s) == KCACHE_ERROR_CORRUPTION);
  CHECK(s == nullptr);
  CHECK(contains(kcache_last_error(), (dir.path() / "config/kcache/config").string() + ":2"));
}

TEST_CASE("runtime C API: every function takes NULL without crashing (kcache.h says what it returns)") {
  CHECK(kcache_store_open(nullptr, nullptr) == KCACHE_ERROR_INVALID_ARGUMENT);
  kcache_kernel* k = reinterpret_cast<kcache_kernel*>(1);
  CHECK(kcache_lookup(nullptr, "scale", nullptr, nullptr, &k) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_lookup(nullptr, nullptr, nullptr, nullptr, nullptr) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_lookup_key(nullptr, nullptr, nullptr, nullptr, nullptr) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_list_kernels(nullptr, nullptr, nullptr, nullptr) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(!std::string(kcache_last_error()).empty());
  kcache_store_close(nullptr);
  kcache_kernel_free(nullptr);

  CHECK(kcache_kernel_name(nullptr) == nullptr);
  CHECK(kcache_kernel_key_id(nullptr) == nullptr);
  CHECK(kcache_kernel_target(nullptr) == nullptr);
  CHECK(kcache_kernel_stage(nullptr) == nullptr);
  CHECK(kcache_kernel_entry_point(nullptr) == nullptr);
  CHECK(kcache_kernel_blob_reason(nullptr) == nullptr);
  CHECK(kcache_kernel_interface_error(nullptr) == nullptr);
  CHECK(kcache_kernel_blob_status(nullptr) == KCACHE_BLOB_ABSENT);
  CHECK(kcache_kernel_push_constant_size(nullptr) == 0);
  CHECK(kcache_kernel_layout_id(nullptr) == 0);
  size_t size = 7;
  uint32_t count = 7;
  CHECK(kcache_kernel_spirv(nullptr, &size) == nullptr);
  CHECK(size == 0);
  size = 7;
  CHECK(kcache_kernel_pipeline_cache(nullptr, &size) == nullptr);
  CHECK(size == 0);
  size = 7;
  CHECK(kcache_kernel_spec_data(nullptr, &size) == nullptr);
  CHECK(size == 0);
  CHECK(kcache_kernel_bindings(nullptr, &count) == nullptr);
  CHECK(count == 0);
  count = 7;
  CHECK(kcache_kernel_spec_entries(nullptr, &count) == nullptr);
  CHECK(count == 0);
  CHECK(kcache_kernel_spirv(nullptr, nullptr) == nullptr);
  CHECK(kcache_kernel_bindings(nullptr, nullptr) == nullptr);
  CHECK(std::string(kcache_status_name(static_cast<kcache_status>(99))) == "unknown");
}

TEST_CASE("runtime C API: kcache_select_device picks as kcache's --device does") {
  // Loader order: a CPU device whose name has digits, then a GPU.
  device::DeviceInfo gpu = lavapipe_info();
  gpu.vendor_id = 0x10de;
  gpu.seal_fingerprint();
  kcache_device_candidate devices[2] = {{c_device(lavapipe_info()), "llvmpipe (LLVM 15.0.6, 256 bits)", 4},
                                        {c_device(gpu), "NVIDIA H200", 2}};
  size_t index = 99;
  CHECK(kcache_select_device(nullptr, devices, 2, &index) == KCACHE_OK);
  CHECK(index == 1);  // a GPU before a CPU device, whatever the order
  CHECK(kcache_select_device("", devices, 1, &index) == KCACHE_OK);
  CHECK(index == 0);
  CHECK(kcache_select_device("0", devices, 2, &index) == KCACHE_OK);
  CHECK(index == 0);
  CHECK(kcache_select_device("nvidia", devices, 2, &index) == KCACHE_OK);
  CHECK(index == 1);
  // A number is an index and never a name: "5" is in "LLVM 15.0.6".
  index = 99;
  CHECK(kcache_select_device("5", devices, 2, &index) == KCACHE_ERROR_NOT_FOUND);
  CHECK(index == 99);
  CHECK(contains(kcache_last_error(), "no Vulkan device 5"));
  CHECK(contains(kcache_last_error(), "1: NVIDIA H200"));
  // A name must match one device; the message names the matches.
  CHECK(kcache_select_device("i", devices, 2, &index) == KCACHE_ERROR_AMBIGUOUS);
  CHECK(contains(kcache_last_error(), "matches 2 devices"));
  CHECK(kcache_select_device("amd", devices, 2, &index) == KCACHE_ERROR_NOT_FOUND);
  // The fingerprint id `kcache devices` prints selects too.
  const std::string id = gpu.fingerprint().substr(0, 6);
  CHECK(kcache_select_device(id.c_str(), devices, 2, &index) == KCACHE_OK);
  CHECK(index == 1);
  CHECK(kcache_select_device(nullptr, devices, 0, &index) == KCACHE_ERROR_NOT_FOUND);
  CHECK(kcache_select_device(nullptr, nullptr, 2, &index) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_select_device(nullptr, devices, 2, nullptr) == KCACHE_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("runtime C API: a truncated store is KCACHE_ERROR_CORRUPTION, never SIGBUS in the application") {
  TempDir dir;
  auto store = dir.path() / "store";
  auto words = compile_glsl(dir, "scale", k_runtime_shader);
  std::vector<Entry> entries;
  for (int i = 0; i < 16; ++i) {
    auto padded = words;
    padded.resize(words.size() + 5000, static_cast<std::uint32_t>(i));
    entries.push_back(spirv_entry("k" + std::to_string(i), padded));
  }
  entries.push_back(spirv_entry("scale", words));
  put(store, spirv_namespace("vulkan1.2"), entries);
  auto data = store / "data.mdb";
  auto full = std::filesystem::file_size(data);
  REQUIRE(full > 16 * 20'000);
  // Only LMDB's two meta pages kept: every tree root past the end (see
  // test_store_lmdb.cpp for why not half the file).
  std::filesystem::resize_file(data, 2 * 4096);
  // In a child: before the open-time check, the lookup dies of SIGBUS.
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    kcache_store* s = nullptr;
    int rc = kcache_store_open(store.c_str(), &s);
    if (rc == KCACHE_OK) {
      kcache_kernel* k = nullptr;
      rc = kcache_lookup(s, "scale", nullptr, nullptr, &k);
      for (int i = 0; i < 16 && rc == KCACHE_OK; ++i) {
        kcache_kernel_free(k);
        rc = kcache_lookup(s, ("k" + std::to_string(i)).c_str(), nullptr, nullptr, &k);
      }
    }
    ::_exit(rc == KCACHE_ERROR_CORRUPTION && contains(kcache_last_error(), "truncated") ? 0 : 10 + rc);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK_MESSAGE(WIFEXITED(status), "killed by signal ", WTERMSIG(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("runtime C++ API: Store and Kernel wrap the C handles") {
  Fixture f;
  auto store = runtime::Store::open(f.store.string());
  REQUIRE_MESSAGE(store.has_value(), (store ? std::string() : store.error().message));
  const runtime::Device dev = c_device(f.lvp);
  auto k = store->lookup("scale", &dev);
  REQUIRE_MESSAGE(k.has_value(), (k ? std::string() : k.error().message));
  CHECK(k->name() == "scale");
  CHECK(std::vector<std::uint32_t>(k->spirv().begin(), k->spirv().end()) == f.words);
  CHECK(k->blob_status() == KCACHE_BLOB_SERVED);
  CHECK(std::vector<std::uint8_t>(k->pipeline_cache().begin(), k->pipeline_cache().end()) == f.raw);
  CHECK(k->bindings().size() == 2);
  CHECK(k->spec_entries().size() == 2);
  CHECK(k->interface_error().empty());

  runtime::Kernel moved = std::move(*k);
  CHECK(moved.key_id() == f.spirv.key.id.hex());

  auto names = store->kernels();
  REQUIRE(names.has_value());
  CHECK(*names == std::vector<std::string>{"other", "scale"});

  auto missing = store->lookup("missing");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().status == KCACHE_ERROR_NOT_FOUND);
  CHECK(contains(missing.error().message, "missing"));
}
