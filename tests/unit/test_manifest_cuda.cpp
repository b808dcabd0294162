// Manifest keys of CUDA kernels: arch and nvrtc_options are read and
// checked, entry may be a name expression, GLSL-only keys are refused on a
// cuda kernel and cuda-only keys on a GLSL one, each with file:line.
#include "kcache/manifest/manifest.hpp"

#include "test_support.hpp"

using kcache::manifest::parse_manifest;

namespace {

auto parse(const std::string& text) { return parse_manifest(text, "m.toml", ".", false); }

std::string error_of(const std::string& text) {
  auto m = parse(text);
  REQUIRE_FALSE(m);
  return m.error().message;
}

}  // namespace

TEST_CASE("a cuda kernel takes arch, nvrtc_options and a name expression; entry defaults to its name") {
  auto m = parse(R"(
[defaults]
language = "cuda"
arch = ["sm_80", "sm_90", "compute_90"]
nvrtc_options = ["-std=c++17"]
[[kernel]]
name = "saxpy"
source = "saxpy.cu"
[[kernel]]
name = "matmul"
source = "matmul.cu"
entry = "matmul<float, TILE>"
nvrtc_options = ["-use_fast_math", "--std=c++17"]
[kernel.variants]
TILE = [8, 16]
)");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  REQUIRE(m->kernels.size() == 3);
  const auto& saxpy = m->kernels[0];
  CHECK(saxpy.language == kcache::definition::Language::cuda);
  CHECK(saxpy.entry == "saxpy");
  CHECK(saxpy.arch == std::vector<std::string>{"sm_80", "sm_90", "compute_90"});
  CHECK(saxpy.nvrtc_options == std::vector<std::string>{"-std=c++17"});
  CHECK(m->kernels[2].name == "matmul[TILE=16]");
  CHECK(m->kernels[2].entry == "matmul<float, TILE>");
  CHECK(m->kernels[2].nvrtc_options == std::vector<std::string>{"-use_fast_math", "--std=c++17"});
}

TEST_CASE("a cuda kernel needs a valid, non-empty arch list") {
  CHECK(error_of("[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\n").find("m.toml:1:") !=
        std::string::npos);
  auto msg =
      error_of("[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\narch = [\"sm_90\", \"sm90\"]\n");
  CHECK(msg.find("m.toml:5:") != std::string::npos);
  CHECK(msg.find("'sm90': not a CUDA architecture") != std::string::npos);
  CHECK(error_of("[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\narch = []\n").find("empty") !=
        std::string::npos);
  CHECK(error_of("[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\narch = [\"sm_90\", \"sm_90\"]\n")
            .find("twice") != std::string::npos);
}

TEST_CASE("NVRTC options that change the output kind, where files go or what is read are refused") {
  for (std::string opt : {"-arch=sm_80", "--gpu-architecture=sm_80", "-rdc=true", "-dc", "-dlto", "-I/usr/include",
                          "-DX=1", "--define-macro=X", "-o", "--pch", "-include", "use_fast_math"}) {
    CAPTURE(opt);
    auto msg = error_of(
        "[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\narch = [\"sm_90\"]\n"
        "nvrtc_options = [\"" +
        opt + "\"]\n");
    CHECK(msg.find("m.toml:6: nvrtc_options '" + opt + "'") != std::string::npos);
  }
  // Harmless ones pass, among them look-alikes of refused ones.
  auto m = parse(
      "[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\narch = [\"sm_90\"]\n"
      "nvrtc_options = [\"-use_fast_math\", \"-lineinfo\", \"-default-device\", \"-dopt=on\"]\n");
  CHECK_MESSAGE(m, (m ? "" : m.error().message));
}

TEST_CASE("GLSL-only keys are refused on a cuda kernel, cuda-only keys on a GLSL kernel") {
  auto msg = error_of(
      "[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\narch = [\"sm_90\"]\nstage = \"compute\"\n"
      "spec_constants = { \"0\" = 1 }\n");
  CHECK(msg.find("m.toml:6: kernel 'k': 'stage' is a GLSL/HLSL key") != std::string::npos);
  CHECK(msg.find("m.toml:7: kernel 'k': 'spec_constants' is a GLSL/HLSL key") != std::string::npos);
  msg = error_of("[[kernel]]\nname = \"g\"\nsource = \"g.comp\"\narch = [\"sm_90\"]\n");
  CHECK(msg.find("m.toml:4: kernel 'g': 'arch' applies to language = \"cuda\" kernels only") != std::string::npos);
  // A name expression is for CUDA only.
  msg = error_of("[[kernel]]\nname = \"g\"\nsource = \"g.comp\"\nentry = \"f<int>\"\n");
  CHECK(msg.find("name expressions are for CUDA kernels") != std::string::npos);
  // [defaults] may hold both kinds for a mixed manifest.
  auto m = parse(
      "[defaults]\narch = [\"sm_90\"]\ntarget = \"vulkan1.3\"\n[[kernel]]\nname = \"g\"\nsource = "
      "\"g.comp\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\n");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  CHECK(m->kernels[0].arch.empty());
  CHECK(m->kernels[1].arch == std::vector<std::string>{"sm_90"});
}
