// verify --device cuda:N without a GPU: which namespaces a device runs, what
// is handed to the loader (and what never is), how the loader's answers and
// times become rows, counts and the cubin-vs-PTX comparison. The loader is a
// fake here; scripts/bench_cuda_gpu runs the real one on an H200.
#include "kcache/maintain/verify_cuda.hpp"

#include "cuda_test_entries.hpp"
#include "test_support.hpp"

#include <map>
#include <mutex>
#include <set>

using namespace kcache;
using namespace kcache::test;
using maintain::CudaLoadStatus;

namespace {

cuda_device::DeviceInfo h200() {
  cuda_device::DeviceInfo d;
  d.name = "H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.cuda_version = 13000;
  return d;
}

struct FakeLoader {
  std::mutex m;
  std::vector<std::pair<PayloadKind, std::string>> calls;  // kind, function
  std::set<std::string> refuse;                            // functions whose load fails
  maintain::CudaLoader loader() {
    return [this](std::span<const std::uint8_t>, PayloadKind kind,
                  std::span<const std::string> functions) -> Result<cuda_device::ModuleLoad> {
      std::lock_guard lock(m);
      calls.emplace_back(kind, functions.empty() ? "" : functions[0]);
      if (refuse.count(functions[0]))
        return fail(Category::compile_failed, "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX; JIT log: bad");
      // PTX "JIT" costs 10 ms, a cubin 1 ms: the comparison must add these up.
      return cuda_device::ModuleLoad{kind == PayloadKind::ptx ? 10.0 : 1.0, 0.01};
    };
  }
};

void put(store::Store& s, std::string_view arch, std::string_view cuda_version, std::vector<Entry> entries) {
  Namespace ns = cuda_namespace(arch, cuda_version, "13.0");
  REQUIRE(s.put(ns, entries));
}

}  // namespace

TEST_CASE("verify cuda: loads what the device runs, skips what it cannot, compares cubin with PTX") {
  auto s = store::make_memory_store();
  put(*s, "sm_90", "13.0", {cuda_entry("saxpy", "sm_90"), cuda_entry("reduce", "sm_90", "reduce_sum")});
  put(*s, "compute_90", "13.0", {cuda_entry("saxpy", "compute_90")});
  put(*s, "sm_80", "12.4", {cuda_entry("saxpy", "sm_80")});    // other major: not run
  put(*s, "sm_90a", "13.1", {cuda_entry("saxpy", "sm_90a")});  // driver too old: not run
  FakeLoader fake;
  maintain::CudaVerifyOptions options;
  options.jobs = 3;
  auto v = maintain::verify_cuda_device(*s, h200(), fake.loader(), options);
  REQUIRE_MESSAGE(v, (v ? "" : v.error().message));

  REQUIRE(v->namespaces.size() == 4);
  std::map<std::string, const maintain::CudaVerifyNamespace*> ns;
  for (const auto& n : v->namespaces) ns[n.ns] = &n;
  CHECK(ns["cuda/sm_90"]->runs);
  CHECK(ns["cuda/compute_90"]->runs);
  CHECK(!ns["cuda/sm_80"]->runs);
  CHECK(ns["cuda/sm_80"]->why_not.find("arch sm_80 vs device compute capability 9.0") != std::string::npos);
  CHECK(!ns["cuda/sm_90a"]->runs);
  CHECK(ns["cuda/sm_90a"]->why_not.find("needs CUDA 13.1, the driver offers 13.0") != std::string::npos);
  CHECK(ns["cuda/sm_80"]->entries == 1);

  // Exactly the three runnable entries reached the loader, with their symbols.
  CHECK(fake.calls.size() == 3);
  std::set<std::pair<PayloadKind, std::string>> calls(fake.calls.begin(), fake.calls.end());
  CHECK(calls == std::set<std::pair<PayloadKind, std::string>>{
                     {PayloadKind::cubin, "saxpy"}, {PayloadKind::cubin, "reduce_sum"}, {PayloadKind::ptx, "saxpy"}});
  REQUIRE(v->rows.size() == 3);
  CHECK(v->count(CudaLoadStatus::loaded) == 3);
  CHECK(!maintain::has_problems(*v));
  // saxpy is stored as both: 1 ms cubin against 10 ms PTX.
  CHECK(v->pairs == 1);
  CHECK(v->pair_cubin_ms == doctest::Approx(1.0));
  CHECK(v->pair_ptx_ms == doctest::Approx(10.0));
}

TEST_CASE("verify cuda: a failed load and a payload that fails kcache's checks are problems") {
  auto s = store::make_memory_store();
  Entry wrong = cuda_entry("wrong_sm", "sm_90");
  wrong.payload = fake_cubin(80);  // an sm_80 cubin in cuda/sm_90: never sent to the driver
  seal_payload(wrong);
  put(*s, "sm_90", "13.0", {cuda_entry("good", "sm_90"), cuda_entry("bad", "sm_90"), wrong});
  FakeLoader fake;
  fake.refuse = {"bad"};
  auto v = maintain::verify_cuda_device(*s, h200(), fake.loader(), {});
  REQUIRE(v);
  CHECK(fake.calls.size() == 2);
  CHECK(v->count(CudaLoadStatus::loaded) == 1);
  CHECK(v->count(CudaLoadStatus::failed) == 1);
  CHECK(v->count(CudaLoadStatus::refused) == 1);
  for (const auto& r : v->rows) {
    if (r.kernel == "bad") {
      CHECK(r.status == CudaLoadStatus::failed);
      CHECK(r.message.find("CUDA_ERROR_INVALID_PTX") != std::string::npos);
      CHECK(r.category == Category::compile_failed);
    }
    if (r.kernel == "wrong_sm") {
      CHECK(r.status == CudaLoadStatus::refused);
      CHECK(r.message.find("sm_80") != std::string::npos);
    }
  }
  CHECK(maintain::has_problems(*v));
}

TEST_CASE("verify cuda: no cuda namespace is not_found; none that runs is a problem") {
  auto empty = store::make_memory_store();
  FakeLoader fake;
  auto none = maintain::verify_cuda_device(*empty, h200(), fake.loader(), {});
  REQUIRE(!none);
  CHECK(none.error().category == Category::not_found);

  auto s = store::make_memory_store();
  put(*s, "sm_80", "12.4", {cuda_entry("saxpy", "sm_80")});
  auto v = maintain::verify_cuda_device(*s, h200(), fake.loader(), {});
  REQUIRE(v);
  CHECK(v->rows.empty());
  CHECK(fake.calls.empty());
  CHECK(maintain::has_problems(*v));
}
