// The CUDA device side without a driver: device descriptions (the test seam),
// selectors, versions, the runs-on check import and verify apply, CUDA error
// mapping, the NVIDIA driver version text, and "no libcuda" as an answer.
#include "kcache/cuda_device/cuda_device.hpp"

#include "test_support.hpp"

using namespace kcache;
using namespace kcache::cuda_device;

namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

DeviceInfo dev(std::string name, int major, int minor, int version) {
  DeviceInfo d;
  d.name = std::move(name);
  d.cc_major = major;
  d.cc_minor = minor;
  d.cuda_version = version;
  return d;
}

}  // namespace

TEST_CASE("cuda versions: 12040 is 12.4, and 13.0 parses back") {
  CHECK(cuda_version_text(12040) == "12.4");
  CHECK(cuda_version_text(13000) == "13.0");
  CHECK(parse_cuda_version("13.0") == 13000);
  CHECK(parse_cuda_version("12.4") == 12040);
  for (const char* bad : {"", "13", "13.", ".0", "13.0.1", "a.b", "-1.0", "13.100", "0.5"})
    CHECK_MESSAGE(!parse_cuda_version(bad), bad);
}

TEST_CASE("device descriptions: NAME;MAJOR.MINOR;CUDA_VERSION") {
  auto d = parse_device_description("A100;8.0;12040");
  REQUIRE(d);
  CHECK(d->name == "A100");
  CHECK(d->cc_major == 8);
  CHECK(d->cc_minor == 0);
  CHECK(d->cuda_version == 12040);
  CHECK(d->compute_capability() == "8.0");
  CHECK(d->native_arch() == "sm_80");
  auto h = parse_device_description("NVIDIA H200;9.0;13.0");
  REQUIRE(h);
  CHECK(h->cuda_version == 13000);
  CHECK(h->native_arch() == "sm_90");
  for (const char* bad : {"", "A100", "A100;8.0", "A100;8.0;12040;x", ";8.0;12040", "A100;8;12040", "A100;8.x;12040",
                          "A100;8.0;", "A100;8.0;12.4.1", "A100;8.10;12040", "A100;8.0;99"}) {
    auto r = parse_device_description(bad);
    CHECK_MESSAGE(!r, bad);
    if (!r) {
      CHECK(r.error().category == Category::invalid_argument);
      CHECK(contains(r.error().message, "NAME;MAJOR.MINOR;CUDA_VERSION"));
    }
  }
}

TEST_CASE("selectors: cuda:N, N, a name, empty = the first") {
  std::vector<DeviceInfo> list = {dev("NVIDIA A100", 8, 0, 12040), dev("NVIDIA H200", 9, 0, 13000)};
  list[1].ordinal = 1;
  CHECK(select_device(list, "")->name == "NVIDIA A100");
  CHECK(select_device(list, "cuda")->name == "NVIDIA A100");
  CHECK(select_device(list, "cuda:1")->name == "NVIDIA H200");
  CHECK(select_device(list, "1")->name == "NVIDIA H200");
  CHECK(select_device(list, "H200")->ordinal == 1);
  CHECK(select_device(list, "cuda:H200")->ordinal == 1);
  auto missing = select_device(list, "cuda:7");
  REQUIRE(!missing);
  CHECK(missing.error().category == Category::not_found);
  CHECK(contains(missing.error().message, "cuda:1 NVIDIA H200 (compute capability 9.0)"));
  // A name matching several devices is refused with the matches, never the first taken.
  std::vector<DeviceInfo> twins = {dev("NVIDIA H200", 9, 0, 13000), dev("NVIDIA H200", 9, 0, 13000)};
  twins[1].ordinal = 1;
  auto ambiguous = select_device(twins, "H200");
  REQUIRE(!ambiguous);
  CHECK(ambiguous.error().category == Category::ambiguous);
  CHECK(contains(ambiguous.error().message, "matches 2 CUDA devices"));
  CHECK(select_device(twins, "cuda:1")->ordinal == 1);
  auto none = select_device({}, "cuda:0");
  REQUIRE(!none);
  CHECK(none.error().category == Category::device_unavailable);
  CHECK(is_cuda_selector("cuda:0"));
  CHECK(is_cuda_selector("cuda"));
  CHECK(!is_cuda_selector("0"));
  CHECK(!is_cuda_selector("llvmpipe"));
}

TEST_CASE("runs-on: arch against compute capability, cuda_version against the driver") {
  const auto a100 = dev("A100", 8, 0, 12040);
  const auto h200 = dev("H200", 9, 0, 13000);
  const auto sm90 = cuda_fingerprint_record("sm_90", "13.0", "13.0");
  const auto sm80 = cuda_fingerprint_record("sm_80", "12.4", "12.4");
  const auto ptx80 = cuda_fingerprint_record("compute_80", "12.4", "12.4");
  const auto sm90a = cuda_fingerprint_record("sm_90a", "12.4", "12.4");

  CHECK(check_runs(sm90, h200));
  CHECK(check_runs(sm80, a100));
  CHECK(check_runs(ptx80, h200));  // PTX JIT-compiles forward
  CHECK(check_runs(sm90a, h200));
  CHECK(!check_runs(sm80, h200));  // a cubin stays within its major version
  CHECK(!check_runs(sm90a, dev("H?", 9, 1, 13000)));

  // Both fields named, with both values, when both are wrong.
  auto both = check_runs(sm90, a100);
  REQUIRE(!both);
  CHECK(both.error().category == Category::fingerprint_mismatch);
  const auto& m = both.error().message;
  CHECK(contains(m, "arch sm_90 vs device compute capability 8.0"));
  CHECK(contains(m, "needs CUDA 13.0, the driver offers 12.4"));
  CHECK(contains(m, "build for sm_80"));

  // Only the driver too old.
  auto old = check_runs(sm90, dev("H100", 9, 0, 12040));
  REQUIRE(!old);
  CHECK(!contains(old.error().message, "arch sm_90 vs"));
  CHECK(contains(old.error().message, "needs CUDA 13.0, the driver offers 12.4"));

  // A record without versions (a lookup by name) checks the arch alone.
  CHECK(check_runs(cuda_namespace("sm_90").record, dev("H100", 9, 0, 11000)));
  // A record that is not a cuda record.
  auto bad = check_runs(FingerprintRecord{{{"target", "vulkan1.2"}}}, h200);
  REQUIRE(!bad);
  CHECK(bad.error().category == Category::corruption);
  auto bad_version = check_runs(cuda_fingerprint_record("sm_90", "thirteen", "13.0"), h200);
  REQUIRE(!bad_version);
  CHECK(bad_version.error().category == Category::corruption);
}

TEST_CASE("CUDA errors: names and categories") {
  CHECK(fallback_error_name(209) == "CUDA_ERROR_NO_BINARY_FOR_GPU");
  CHECK(fallback_error_name(218) == "CUDA_ERROR_INVALID_PTX");
  CHECK(fallback_error_name(100) == "CUDA_ERROR_NO_DEVICE");
  CHECK(fallback_error_name(12345) == "CUDA error 12345");
  CHECK(error_category(100) == Category::device_unavailable);
  CHECK(error_category(35) == Category::device_unavailable);
  CHECK(error_category(209) == Category::compile_failed);
  CHECK(error_category(222) == Category::compile_failed);
  CHECK(error_category(500) == Category::not_found);
  CHECK(error_category(2) == Category::io_error);
}

TEST_CASE("the NVIDIA driver version from /proc/driver/nvidia/version") {
  CHECK(parse_nvidia_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu Sep 25 2025\n"
                                  "GCC version:  gcc version 12.2.0\n") == "580.95.05");
  CHECK(parse_nvidia_proc_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release "
                                  "Build  (dvs-builder@U16-T02-35-3)\n") == "570.124.06");
  CHECK(parse_nvidia_proc_version("").empty());
  CHECK(parse_nvidia_proc_version("NVRM version: something else\n").empty());
  CHECK(parse_nvidia_proc_version("Kernel Module\n580.1").empty());  // not on its line
}

TEST_CASE("no CUDA driver is an answer, not an error") {
  auto s = survey("/nonexistent/libcuda.so.1");
  CHECK(!s.available());
  CHECK(s.devices.empty());
  CHECK(contains(s.absent, "no CUDA driver"));
  CHECK(contains(s.absent, "/nonexistent/libcuda.so.1"));
  auto d = Driver::load("/nonexistent/libcuda.so.1");
  REQUIRE(!d);
  CHECK(d.error().category == Category::device_unavailable);
  // A library that is not a CUDA driver: every missing entry point named.
  auto not_cuda = Driver::load("libm.so.6");
  REQUIRE(!not_cuda);
  CHECK(contains(not_cuda.error().message, "is not a usable CUDA driver"));
  CHECK(contains(not_cuda.error().message, "cuInit"));
  CHECK(contains(not_cuda.error().message, "cuModuleLoadDataEx"));
}
