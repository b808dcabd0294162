// The nvrtc module: the include scan finds what a CUDA kernel may read (and
// only project files), the log is tidied to file:line, and — where the CUDA
// toolkit is installed (KCACHE_TEST_NVRTC, set by tests/CMakeLists.txt) —
// NVRTC compiles cubins and PTX, lowers name expressions and reports errors.
#include "kcache/core/cuda.hpp"
#include "kcache/nvrtc/nvrtc.hpp"

#include "nvrtc_test_project.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace kcache;
namespace fs = std::filesystem;

namespace {

fs::path project(const std::string& name) { return test::nvrtc_project("nvrtc", name); }

void write(const fs::path& p, const std::string& text) { test::write_file(p, text); }

definition::KernelSpec spec_for(const std::string& source) { return test::cuda_spec_for(source); }

}  // namespace

TEST_CASE("the include scan lists the source, quoted includes beside it, and include-dir headers, transitively") {
  auto dir = project("scan");
  write(dir / "src/k.cu", "#include \"local.cuh\"\n  #  include <shared.cuh>\n#include <cuda_fp16.h>\n");
  write(dir / "src/local.cuh", "#pragma once\n");
  write(dir / "inc/shared.cuh", "#if 0\n#include \"deep.cuh\"\n#endif\n");
  write(dir / "inc/deep.cuh", "#include \"shared.cuh\"\n");  // a cycle ends
  definition::FileCache files(dir);
  auto got = nvrtc::scan_inputs(spec_for("src/k.cu"), files);
  REQUIRE(got);
  std::vector<std::string> paths;
  for (const auto& f : got->inputs) paths.push_back(f->path);
  // cuda_fp16.h is not in the project: a toolkit header, not tracked; the
  // place it was looked for is an absent candidate (a project header made
  // there later would be the one NVRTC reads).
  CHECK(paths == std::vector<std::string>{"src/k.cu", "src/local.cuh", "inc/shared.cuh", "inc/deep.cuh"});
  CHECK(got->absent == std::vector<std::string>{"inc/cuda_fp16.h"});
}

TEST_CASE("the include scan never leaves the project: a path outside it fails, naming it; a missing source fails") {
  auto dir = project("outside");
  definition::FileCache files(dir);
  write(dir / "src/k.cu", "#include \"../../../../../etc/passwd\"\n");
  auto escaping = nvrtc::scan_inputs(spec_for("src/k.cu"), files);
  REQUIRE_FALSE(escaping);
  CHECK(escaping.error().category == Category::invalid_argument);
  CHECK(escaping.error().message.find("src/k.cu:1:") != std::string::npos);
  CHECK(escaping.error().message.find("outside the manifest's folder") != std::string::npos);
  write(dir / "src/a.cu", "#include \"/etc/hostname\"\n");
  auto absolute = nvrtc::scan_inputs(spec_for("src/a.cu"), files);
  REQUIRE_FALSE(absolute);
  CHECK(absolute.error().message.find("src/a.cu:1: `#include \"/etc/hostname\"`: an absolute path") !=
        std::string::npos);
  CHECK_FALSE(nvrtc::scan_inputs(spec_for("src/missing.cu"), files));
}

TEST_CASE("NVRTC's log is tidied: project root cut, file(line) as file:line") {
  auto log = nvrtc::tidy_log("/p/root/src/k.cu(3): error: identifier \"x\" is undefined\n  x = 1;\n\n", "/p/root");
  CHECK(log == "src/k.cu:3: error: identifier \"x\" is undefined\n  x = 1;");
  CHECK(nvrtc::tidy_log("nvrtc: error: unrecognized option -MD found\n", "/p") ==
        "nvrtc: error: unrecognized option -MD found");
  // An in-memory header is named by its include name: the log says its project path.
  CHECK(nvrtc::tidy_log("util.cuh(2): error: x\nsub/util.cuh(3): error: y\n", "/p",
                        {{"util.cuh", "inc/util.cuh"}, {"sub/util.cuh", "inc/sub/util.cuh"}}) ==
        "inc/util.cuh:2: error: x\ninc/sub/util.cuh:3: error: y");
}

TEST_CASE("loading a library that does not exist fails with what to do") {
  auto lib = nvrtc::Library::load(std::string("/nonexistent/libnvrtc.so"));
  REQUIRE_FALSE(lib);
  CHECK(lib.error().category == Category::device_unavailable);
  CHECK(lib.error().message.find("--nvrtc") != std::string::npos);
}

#ifdef KCACHE_TEST_NVRTC
namespace {

std::shared_ptr<const nvrtc::Library> library() {
  auto lib = nvrtc::Library::load(std::string(KCACHE_TEST_NVRTC));
  REQUIRE_MESSAGE(lib, (lib ? "" : lib.error().message));
  return *lib;
}

nvrtc::Request request(const fs::path& dir, const std::string& arch, const std::string& entry) {
  nvrtc::Request r;
  r.source_path = dir / "src/k.cu";
  r.root = dir;
  r.arch = arch;
  r.include_dirs = {dir / "inc"};
  r.name_expression = entry;
  std::ifstream in(r.source_path, std::ios::binary);
  r.source.assign(std::istreambuf_iterator<char>(in), {});
  return r;
}

}  // namespace

TEST_CASE("NVRTC compiles a cubin per architecture whose ELF names that architecture") {
  auto lib = library();
  CHECK(parse_cuda_arch("sm_" + std::string(1, lib->version()[0])) == std::nullopt);  // a version, not an arch
  CHECK(lib->version().find('.') != std::string::npos);
  auto dir = project("cubin");
  write(dir / "inc/scale.cuh", "#define SCALE 2.0f\n");
  write(dir / "src/k.cu",
        "#include <scale.cuh>\nextern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= SCALE; }\n");
  for (std::string arch : {"sm_80", "sm_90"}) {
    auto out = lib->compile(request(dir, arch, "k"));
    REQUIRE_MESSAGE(out, (out ? "" : out.error().message));
    CHECK(out->kind == PayloadKind::cubin);
    CHECK(out->lowered_name == "k");
    CHECK(check_cuda_payload(PayloadKind::cubin, arch, out->payload));
    // The sm_80 cubin is not an sm_90 one.
    CHECK_FALSE(check_cuda_payload(PayloadKind::cubin, arch == "sm_80" ? "sm_90" : "sm_80", out->payload));
  }
}

TEST_CASE("a compute_XY arch gives PTX; a name expression lowers to the mangled symbol") {
  auto lib = library();
  auto dir = project("ptx");
  write(dir / "src/k.cu", "template <typename T, int N> __global__ void mm(T* x) { x[threadIdx.x] *= N; }\n");
  auto r = request(dir, "compute_90", "mm<float, 16>");
  auto out = lib->compile(r);
  REQUIRE_MESSAGE(out, (out ? "" : out.error().message));
  CHECK(out->kind == PayloadKind::ptx);
  CHECK(out->lowered_name == "_Z2mmIfLi16EEvPT_");
  CHECK(check_cuda_payload(PayloadKind::ptx, "compute_90", out->payload));
  CHECK_FALSE(check_cuda_payload(PayloadKind::ptx, "compute_80", out->payload));
  CHECK(std::string(out->payload.begin(), out->payload.end()).find(".entry _Z2mmIfLi16EEvPT_") != std::string::npos);
}

TEST_CASE("a compile error is compile_failed with file:line relative to the project") {
  auto lib = library();
  auto dir = project("error");
  write(dir / "src/k.cu", "extern \"C\" __global__ void k(float* x) {\n  x[0] = nope;\n}\n");
  auto out = lib->compile(request(dir, "sm_90", "k"));
  REQUIRE_FALSE(out);
  CHECK(out.error().category == Category::compile_failed);
  CHECK(out.error().message.find("src/k.cu:2: error") != std::string::npos);
  CHECK(out.error().message.find(dir.string()) == std::string::npos);
}

TEST_CASE("an option NVRTC does not know is invalid_argument; an entry that names no kernel fails") {
  auto lib = library();
  auto dir = project("option");
  write(dir / "src/k.cu", "extern \"C\" __global__ void k(float* x) { x[0] = 1; }\n");
  auto r = request(dir, "sm_90", "k");
  r.options = {"--no-such-option"};
  auto out = lib->compile(r);
  REQUIRE_FALSE(out);
  CHECK(out.error().category == Category::invalid_argument);
  auto missing = lib->compile(request(dir, "sm_90", "not_there"));
  CHECK_FALSE(missing);
}
#endif
