// kcache_lookup_cuda through the C ABI over a real LMDB store: which of the
// stored cubins and PTX a device of a given compute capability gets, the
// accessors, the refusals, and the list of CUDA kernels; then the same
// through the C++ wrapper (runtime.hpp), whose every CUDA method must reach
// its C function with the arguments in their places.
#include "kcache/runtime/kcache.h"
#include "kcache/runtime/runtime.hpp"

#include "cuda_test_entries.hpp"
#include "test_runtime_support.hpp"

using namespace kcache;
using namespace kcache::test;

namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

struct CudaStore {
  TempDir dir;
  std::filesystem::path path = dir.path() / "store";
  kcache_store* s = nullptr;
  CudaStore() {
    put(path, cuda_namespace("sm_80", "12.4", "12.4"), {cuda_entry("saxpy", "sm_80"), cuda_entry("only80", "sm_80")});
    put(path, cuda_namespace("sm_86", "12.4", "12.4"), {cuda_entry("saxpy", "sm_86")});
    put(path, cuda_namespace("sm_90", "13.0", "13.0"), {cuda_entry("saxpy", "sm_90")});
    put(path, cuda_namespace("compute_80", "12.4", "12.4"), {cuda_entry("saxpy", "compute_80")});
    Entry tmpl = cuda_entry("matmul[T=float]", "compute_80", "matmul<float>");
    tmpl.ir_fields.emplace_back(std::string(k_cuda_lowered_name_field), "_Z6matmulIfEvPKT_");
    seal_payload(tmpl);
    put(path, cuda_namespace("compute_80", "12.4", "12.4"), {tmpl});
    REQUIRE_MESSAGE(kcache_store_open(path.c_str(), &s) == KCACHE_OK, kcache_last_error());
  }
  ~CudaStore() { kcache_store_close(s); }
  std::string arch(const char* name, int major, int minor) {
    kcache_kernel* k = nullptr;
    if (kcache_lookup_cuda(s, name, major, minor, &k) != KCACHE_OK) return std::string("error: ") + kcache_last_error();
    std::string out = kcache_kernel_target(k);
    kcache_kernel_free(k);
    return out;
  }
};

int collect(const char* name, void* user) {
  static_cast<std::vector<std::string>*>(user)->emplace_back(name);
  return 0;
}

}  // namespace

TEST_CASE("kcache_lookup_cuda: the best cubin that runs, else PTX, else a refusal naming the archs") {
  CudaStore f;
  CHECK(f.arch("saxpy", 9, 0) == "sm_90");
  CHECK(f.arch("saxpy", 8, 0) == "sm_80");
  CHECK(f.arch("saxpy", 8, 6) == "sm_86");
  CHECK(f.arch("saxpy", 8, 9) == "sm_86");        // sm_86 runs on 8.9; sm_90 does not
  CHECK(f.arch("saxpy", 10, 0) == "compute_80");  // no cubin for 10.x: the PTX, JIT-compiled
  CHECK(f.arch("only80", 9, 0).starts_with("error: "));
  CHECK(contains(f.arch("only80", 9, 0), "stored for sm_80"));
  CHECK(contains(f.arch("saxpy", 7, 5), "none of which runs at compute capability 7.5"));
  CHECK(contains(f.arch("nosuch", 9, 0), "no CUDA kernel 'nosuch'"));
}

namespace {

/// The arch kcache_lookup_cuda picks for "k" at cc major.minor from a store
/// holding "k" in exactly `archs`, written in that order.
std::string pick(const std::vector<std::string>& archs, int major, int minor) {
  TempDir dir;
  const auto path = dir.path() / "store";
  for (const auto& arch : archs) put(path, cuda_namespace(arch, "13.0", "13.0"), {cuda_entry("k", arch)});
  kcache_store* s = nullptr;
  REQUIRE_MESSAGE(kcache_store_open(path.c_str(), &s) == KCACHE_OK, kcache_last_error());
  kcache_kernel* k = nullptr;
  std::string out =
      kcache_lookup_cuda(s, "k", major, minor, &k) == KCACHE_OK ? kcache_kernel_target(k) : std::string("error");
  kcache_kernel_free(k);
  kcache_store_close(s);
  return out;
}

}  // namespace

TEST_CASE("kcache_lookup_cuda: an added arch-specific namespace never displaces the plain code for the device") {
  // An unsigned bundle of cuda/sm_90a (or sm_90f) carrying the same kernel
  // name: the sm_90 cubin built for the device still wins.
  CHECK(pick({"sm_90", "sm_90a"}, 9, 0) == "sm_90");
  CHECK(pick({"sm_90a", "sm_90"}, 9, 0) == "sm_90");
  CHECK(pick({"sm_90", "sm_90f", "compute_90a"}, 9, 0) == "sm_90");
  // A lower-minor plain cubin too, and plain PTX before any specific variant.
  CHECK(pick({"sm_86", "sm_89a"}, 8, 9) == "sm_86");
  CHECK(pick({"compute_80", "sm_90a"}, 9, 0) == "compute_80");
  // The exact sm_XY beats lower minors; PTX only without a cubin that runs.
  CHECK(pick({"sm_80", "sm_86", "compute_86"}, 8, 6) == "sm_86");
  CHECK(pick({"compute_80", "compute_86"}, 8, 9) == "compute_86");
  // Only where no plain code runs is a specific variant used: cubin first.
  CHECK(pick({"sm_90a"}, 9, 0) == "sm_90a");
  CHECK(pick({"sm_90a"}, 9, 1) == "error");  // sm_90a runs on exactly 9.0
  CHECK(pick({"compute_100a", "sm_100f"}, 10, 0) == "sm_100f");
  CHECK(pick({"compute_100a", "sm_100f"}, 10, 3) == "sm_100f");
  CHECK(pick({"sm_100a", "sm_100f"}, 10, 0) == "sm_100a");
  CHECK(pick({"sm_80", "sm_90a"}, 9, 0) == "sm_90a");  // sm_80 does not run on 9.0
}

TEST_CASE("kcache_lookup_cuda: accessors for a cubin and for PTX") {
  CudaStore f;
  kcache_kernel* k = nullptr;
  REQUIRE(kcache_lookup_cuda(f.s, "saxpy", 9, 0, &k) == KCACHE_OK);
  CHECK(kcache_kernel_payload_kind(k) == KCACHE_PAYLOAD_CUBIN);
  size_t bytes = 0;
  const uint8_t* p = kcache_kernel_payload(k, &bytes);
  CHECK(std::vector<std::uint8_t>(p, p + bytes) == fake_cubin(90, "saxpy"));
  CHECK(std::string(kcache_kernel_function_symbol(k)) == "saxpy");
  CHECK(std::string(kcache_kernel_name(k)) == "saxpy");
  CHECK(std::string(kcache_kernel_key_id(k)).size() == 32);
  kcache_kernel_free(k);

  REQUIRE(kcache_lookup_cuda(f.s, "matmul[T=float]", 9, 0, &k) == KCACHE_OK);
  CHECK(kcache_kernel_payload_kind(k) == KCACHE_PAYLOAD_PTX);
  CHECK(std::string(kcache_kernel_target(k)) == "compute_80");
  p = kcache_kernel_payload(k, &bytes);
  CHECK(bytes == fake_ptx(80, "matmul<float>").size());
  CHECK(p[bytes] == 0);  // a C string for cuModuleLoadData
  const auto ptx = fake_ptx(80, "matmul<float>");
  CHECK(std::string(reinterpret_cast<const char*>(p)) == std::string(ptx.begin(), ptx.end()));
  // A name expression resolves through its lowered (mangled) name.
  CHECK(std::string(kcache_kernel_function_symbol(k)) == "_Z6matmulIfEvPKT_");
  CHECK(std::string(kcache_kernel_id_field(k, "entry")) == "matmul<float>");
  CHECK(kcache_kernel_id_field(k, "no_such_field") == nullptr);
  CHECK(std::string(kcache_kernel_id_field_name(k, 0)) == "entry");
  CHECK(kcache_kernel_id_field_name(k, 1) == nullptr);
  CHECK(kcache_kernel_id_field(k, nullptr) == nullptr);
  kcache_kernel_free(k);
}

TEST_CASE("kcache_lookup_cuda: bad arguments, a payload that is not its namespace's kind, the list") {
  CudaStore f;
  kcache_kernel* k = reinterpret_cast<kcache_kernel*>(1);
  CHECK(kcache_lookup_cuda(nullptr, "saxpy", 9, 0, &k) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(k == nullptr);
  CHECK(kcache_lookup_cuda(f.s, nullptr, 9, 0, &k) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_lookup_cuda(f.s, "saxpy", 9, 0, nullptr) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_lookup_cuda(f.s, "saxpy", 0, 0, &k) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_lookup_cuda(f.s, "saxpy", 9, 10, &k) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(kcache_lookup_cuda(f.s, "nosuch", 9, 0, &k) == KCACHE_ERROR_NOT_FOUND);
  CHECK(kcache_kernel_payload_kind(nullptr) == 0);
  size_t bytes = 7;
  CHECK(kcache_kernel_payload(nullptr, &bytes) == nullptr);
  CHECK(bytes == 0);
  CHECK(kcache_kernel_function_symbol(nullptr) == nullptr);

  std::vector<std::string> names;
  REQUIRE(kcache_list_cuda_kernels(f.s, collect, &names) == KCACHE_OK);
  CHECK(names == std::vector<std::string>{"matmul[T=float]", "only80", "saxpy"});
  CHECK(kcache_list_cuda_kernels(nullptr, collect, &names) == KCACHE_ERROR_INVALID_ARGUMENT);

  // PTX bytes in a cubin namespace: refused as corruption, never handed out.
  TempDir dir;
  Entry text = cuda_entry("liar", "sm_90");
  text.payload = fake_ptx(90);
  seal_payload(text);
  put(dir.path() / "s", cuda_namespace("sm_90", "13.0", "13.0"), {text});
  kcache_store* s = nullptr;
  REQUIRE(kcache_store_open((dir.path() / "s").c_str(), &s) == KCACHE_OK);
  CHECK(kcache_lookup_cuda(s, "liar", 9, 0, &k) == KCACHE_ERROR_CORRUPTION);
  CHECK(contains(kcache_last_error(), "not the cubin"));
  kcache_store_close(s);
}

TEST_CASE("runtime C++ API: lookup_cuda, the CUDA accessors and cuda_kernels wrap the C ABI") {
  CudaStore f;
  auto store = kcache::runtime::Store::open(f.path.string());
  REQUIRE_MESSAGE(store.has_value(), (store ? std::string() : store.error().message));
  // Major and minor in their places: 8.6 gets sm_86, 8.9 the sm_86 cubin too, 9.0 sm_90.
  auto k86 = store->lookup_cuda("saxpy", 8, 6);
  REQUIRE_MESSAGE(k86.has_value(), (k86 ? std::string() : k86.error().message));
  CHECK(k86->target() == "sm_86");
  CHECK(k86->payload_kind() == KCACHE_PAYLOAD_CUBIN);
  CHECK(std::vector<std::uint8_t>(k86->payload().begin(), k86->payload().end()) == fake_cubin(86, "saxpy"));
  CHECK(std::string(k86->function_symbol()) == "saxpy");
  auto k90 = store->lookup_cuda("saxpy", 9, 0);
  REQUIRE(k90.has_value());
  CHECK(k90->target() == "sm_90");

  auto ptx = store->lookup_cuda("matmul[T=float]", 9, 0);
  REQUIRE(ptx.has_value());
  CHECK(ptx->payload_kind() == KCACHE_PAYLOAD_PTX);
  CHECK(ptx->payload().size() == fake_ptx(80, "matmul<float>").size());
  CHECK(ptx->payload().data()[ptx->payload().size()] == 0);  // cuModuleLoadData takes data() as is
  CHECK(std::string(ptx->function_symbol()) == "_Z6matmulIfEvPKT_");
  CHECK(ptx->id_field("entry") == std::optional<std::string_view>("matmul<float>"));
  CHECK_FALSE(ptx->id_field("no_such_field").has_value());

  auto none = store->lookup_cuda("only80", 9, 0);
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().status == KCACHE_ERROR_NOT_FOUND);
  CHECK(contains(none.error().message, "stored for sm_80"));
  auto bad_cc = store->lookup_cuda("saxpy", 9, 10);
  REQUIRE_FALSE(bad_cc.has_value());
  CHECK(bad_cc.error().status == KCACHE_ERROR_INVALID_ARGUMENT);

  auto names = store->cuda_kernels();
  REQUIRE(names.has_value());
  CHECK(*names == std::vector<std::string>{"matmul[T=float]", "only80", "saxpy"});
  // SPIR-V lists stay apart: this store holds no SPIR-V.
  auto spirv = store->kernels();
  REQUIRE(spirv.has_value());
  CHECK(spirv->empty());
}
