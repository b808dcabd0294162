// The CUDA backend's vocabulary (core/cuda.hpp): architecture names parse and
// print back, compatibility follows NVIDIA's rules (cubin within a major, a/f
// suffixes, PTX forward), cuda namespaces check like the others, and the
// function symbol comes from the record alone.
#include "kcache/core/cuda.hpp"

#include "cuda_test_entries.hpp"

#include <doctest/doctest.h>

using namespace kcache;

namespace {

CudaArch arch(std::string_view name) {
  auto a = parse_cuda_arch(name);
  REQUIRE_MESSAGE(a.has_value(), name);
  return *a;
}

}  // namespace

TEST_CASE("cuda architecture names parse into major, minor, kind and suffix") {
  CHECK(arch("sm_90") == CudaArch{9, 0, false, 0});
  CHECK(arch("sm_80") == CudaArch{8, 0, false, 0});
  CHECK(arch("sm_86") == CudaArch{8, 6, false, 0});
  CHECK(arch("sm_100") == CudaArch{10, 0, false, 0});
  CHECK(arch("sm_121") == CudaArch{12, 1, false, 0});
  CHECK(arch("sm_90a") == CudaArch{9, 0, false, 'a'});
  CHECK(arch("sm_100f") == CudaArch{10, 0, false, 'f'});
  CHECK(arch("compute_90") == CudaArch{9, 0, true, 0});
  CHECK(arch("compute_90a") == CudaArch{9, 0, true, 'a'});
  for (std::string_view name : {"sm_90", "sm_100f", "compute_75", "sm_90a", "sm_121"})
    CHECK(cuda_arch_name(arch(name)) == name);
}

TEST_CASE("anything that is not an architecture name is refused") {
  for (std::string_view bad :
       {"", "sm_", "sm_9", "sm_090", "sm_1000", "sm_90b", "sm_90aa", "sm90", "SM_90", "compute_", "compute_9", "lto_90",
        "sm_9x", "sm_90 ", " sm_90", "sm_-9", "compute_90/../x", "sm_a", "vulkan1.2"}) {
    CAPTURE(bad);
    CHECK_FALSE(is_cuda_arch(bad));
  }
  CHECK(is_cuda_arch("sm_90"));
  CHECK(is_cuda_arch("compute_80"));
}

TEST_CASE("a cubin runs within its major at the same or a later minor") {
  CHECK(cuda_arch_runs_on(arch("sm_80"), 8, 0));
  CHECK(cuda_arch_runs_on(arch("sm_80"), 8, 6));
  CHECK(cuda_arch_runs_on(arch("sm_80"), 8, 9));
  CHECK_FALSE(cuda_arch_runs_on(arch("sm_86"), 8, 0));
  CHECK_FALSE(cuda_arch_runs_on(arch("sm_80"), 9, 0));  // an H200 cannot run sm_80 SASS
  CHECK(cuda_arch_runs_on(arch("sm_90"), 9, 0));
  CHECK_FALSE(cuda_arch_runs_on(arch("sm_90"), 10, 0));
  CHECK_FALSE(cuda_arch_runs_on(arch("sm_90"), 8, 9));
}

TEST_CASE("an arch-specific cubin runs only on its exact capability, a family one within the family") {
  CHECK(cuda_arch_runs_on(arch("sm_90a"), 9, 0));
  CHECK_FALSE(cuda_arch_runs_on(arch("sm_90a"), 9, 1));
  CHECK_FALSE(cuda_arch_runs_on(arch("sm_100a"), 10, 3));
  CHECK(cuda_arch_runs_on(arch("sm_100f"), 10, 0));
  CHECK(cuda_arch_runs_on(arch("sm_100f"), 10, 3));
  CHECK_FALSE(cuda_arch_runs_on(arch("sm_103f"), 10, 0));
  CHECK_FALSE(cuda_arch_runs_on(arch("sm_100f"), 12, 0));
}

TEST_CASE("PTX runs on any later capability through the driver's JIT") {
  CHECK(cuda_arch_runs_on(arch("compute_80"), 8, 0));
  CHECK(cuda_arch_runs_on(arch("compute_80"), 9, 0));
  CHECK(cuda_arch_runs_on(arch("compute_80"), 12, 1));
  CHECK_FALSE(cuda_arch_runs_on(arch("compute_90"), 8, 9));
  CHECK_FALSE(cuda_arch_runs_on(arch("compute_90a"), 10, 0));
  CHECK(cuda_payload_kind(arch("compute_90")) == PayloadKind::ptx);
  CHECK(cuda_payload_kind(arch("sm_90")) == PayloadKind::cubin);
}

TEST_CASE("a cuda namespace is cuda/<arch> with the record arch, cuda_version, nvrtc_version") {
  auto ns = cuda_namespace("sm_90", "13.0", "13.0");
  CHECK(ns.name() == "cuda/sm_90");
  REQUIRE(ns.record.fields.size() == 3);
  CHECK(ns.record.fields[0] == Field{"arch", "sm_90"});
  CHECK(*ns.record.find("cuda_version") == "13.0");
  CHECK(*ns.record.find("nvrtc_version") == "13.0");
  CHECK(ns.record == cuda_fingerprint_record("sm_90", "13.0", "13.0"));
  CHECK(cuda_namespace("compute_90").record.fields.size() == 1);
  CHECK(check_foreign_namespace(ns));
  CHECK(check_foreign_namespace(cuda_namespace("compute_80")));
}

TEST_CASE("a cuda namespace from elsewhere cannot invent an arch or disagree with its record") {
  auto bad_arch = cuda_namespace("sm_90", "13.0", "13.0");
  bad_arch.fingerprint = "sm_9\x1b[31m";
  auto r = check_foreign_namespace(bad_arch);
  REQUIRE_FALSE(r);
  CHECK(r.error().category == Category::corruption);
  CHECK(r.error().message.find("unknown CUDA architecture") != std::string::npos);

  auto other = cuda_namespace("sm_90", "13.0", "13.0");
  other.fingerprint = "sm_80";
  r = check_foreign_namespace(other);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("does not match") != std::string::npos);

  auto twice = cuda_namespace("sm_90", "13.0", "13.0");
  twice.record.fields.push_back({"arch", "sm_80"});
  CHECK_FALSE(check_foreign_namespace(twice));

  auto version = cuda_namespace("sm_90", "13.x", "13.0");
  r = check_foreign_namespace(version);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("cuda_version") != std::string::npos);
}

TEST_CASE("the function symbol comes from the record: lowered name, else entry, else base name") {
  Entry e;
  e.kernel = "matmul[TILE=16]";
  CHECK(cuda_function_symbol(e) == "matmul");
  e.id_fields = {{"source", "matmul.cu"}, {"entry", "matmul<float,16>"}};
  CHECK(cuda_function_symbol(e) == "matmul<float,16>");
  e.ir_fields = {{"nvrtc_version", "13.0"}, {"lowered_name", "_Z6matmulIfLi16EEvPKfS1_Pfi"}};
  CHECK(cuda_function_symbol(e) == "_Z6matmulIfLi16EEvPKfS1_Pfi");
}

TEST_CASE("cubin and PTX payload kinds survive a record round trip and unknown kinds are refused") {
  for (auto kind : {PayloadKind::cubin, PayloadKind::ptx}) {
    Entry e;
    e.kernel = "saxpy";
    e.payload_kind = kind;
    e.payload = {0x7f, 'E', 'L', 'F'};
    seal_payload(e);
    auto back = decode_entry(encode_entry(e));
    REQUIRE(back);
    CHECK(back->payload_kind == kind);
    CHECK(validate_entry_record(*back));
  }
  CHECK(payload_kind_name(PayloadKind::cubin) == "cubin");
  CHECK(payload_kind_name(PayloadKind::ptx) == "ptx");
  CHECK_FALSE(is_known_payload_kind(0));
  CHECK_FALSE(is_known_payload_kind(5));
  Entry e;
  e.kernel = "x";
  e.payload_kind = static_cast<PayloadKind>(9);
  CHECK_FALSE(validate_entry_record(e));
  auto bytes = encode_entry(e);
  CHECK_FALSE(decode_entry(bytes));
}

namespace {

using Sym = test::ElfSymbol;
using test::mini_cubin;
using test::put_le;

std::vector<std::uint8_t> text(std::string_view s) { return {s.begin(), s.end()}; }

bool refused(PayloadKind kind, const std::vector<std::uint8_t>& bytes, std::string_view symbol, std::string_view why) {
  auto r = check_cuda_symbol(kind, bytes, symbol);
  if (r) return false;
  CHECK(r.error().category == Category::corruption);
  CHECK_MESSAGE(r.error().message.find(why) != std::string::npos, r.error().message);
  return true;
}

}  // namespace

TEST_CASE("check_cuda_symbol: a cubin defines the symbol as a kernel entry in its ELF symbol table") {
  const auto b = mini_cubin({{"helper", 0x02, 0x00, 3},
                             {"_Z2mmIfLi16EEvPT_", 0x22, 0x10, 3},
                             {"gvar", 0x11, 0x00, 4},
                             {"undef", 0x12, 0x10, 0},
                             {"k", 0x12, 0x10, 3}});
  CHECK(check_cuda_symbol(PayloadKind::cubin, b, "k"));
  CHECK(check_cuda_symbol(PayloadKind::cubin, b, "_Z2mmIfLi16EEvPT_"));  // a weak template instance
  CHECK(refused(PayloadKind::cubin, b, "helper", "not a kernel entry"));
  CHECK(refused(PayloadKind::cubin, b, "gvar", "not a function"));
  CHECK(refused(PayloadKind::cubin, b, "undef", "undefined"));
  CHECK(refused(PayloadKind::cubin, b, "nosuch", "defines no kernel 'nosuch'"));
  CHECK(refused(PayloadKind::cubin, b, "_Z2mm", "defines no kernel"));  // a prefix of a name is not it
  CHECK(refused(PayloadKind::cubin, b, "", "kernel symbol of 0 bytes"));
  CHECK(refused(PayloadKind::cubin, b, "a b", "no printable ASCII"));
  CHECK(refused(PayloadKind::cubin, b, std::string(5000, 'k'), "expected 1 to 4096"));
  CHECK(refused(PayloadKind::spirv, b, "k", "holds no CUDA kernel"));
}

TEST_CASE("check_cuda_symbol: hostile ELF bytes are refused without reading outside them") {
  const auto good = mini_cubin({{"k", 0x12, 0x10, 3}});
  const std::size_t shoff = good[0x28] | good[0x29] << 8;
  auto with = [&](std::size_t at, std::uint64_t v, std::size_t width) {
    auto b = good;
    put_le(b, at, v, width);
    return b;
  };
  CHECK(refused(PayloadKind::cubin, std::vector<std::uint8_t>(good.begin(), good.begin() + 40), "k", "not a 64-bit"));
  CHECK(refused(PayloadKind::cubin, with(0x28, ~0ull, 8), "k", "section headers"));  // shoff at the end of time
  CHECK(refused(PayloadKind::cubin, with(0x3c, 0xffff, 2), "k", "section headers"));
  CHECK(refused(PayloadKind::cubin, with(0x3c, 0, 2), "k", "section headers"));
  CHECK(refused(PayloadKind::cubin, with(0x3a, 40, 2), "k", "section headers"));
  CHECK(refused(PayloadKind::cubin, with(shoff + 64 + 0x18, ~0ull - 8, 8), "k", "symbol table"));    // symtab offset
  CHECK(refused(PayloadKind::cubin, with(shoff + 64 + 0x20, 1ull << 62, 8), "k", "symbol table"));   // symtab size
  CHECK(refused(PayloadKind::cubin, with(shoff + 64 + 0x38, 16, 8), "k", "symbol table"));           // entsize
  CHECK(refused(PayloadKind::cubin, with(shoff + 64 + 0x28, 7, 4), "k", "no string table"));         // sh_link
  CHECK(refused(PayloadKind::cubin, with(shoff + 128 + 0x20, 1ull << 40, 8), "k", "symbol names"));  // strtab size
  CHECK(refused(PayloadKind::cubin, with(shoff + 128 + 4, 1, 4), "k", "symbol names"));  // strtab of another type
  CHECK(refused(PayloadKind::cubin, with(shoff + 64 + 4, 1, 4), "k", "no symbol table"));
  // A name offset past the string table, and a name running off its end.
  CHECK(refused(PayloadKind::cubin, with(64 + 24, 0xffffffff, 4), "k", "defines no kernel"));
  auto cut = good;
  put_le(cut, shoff + 128 + 0x20, 2, 8);  // the string table ends at "k", before its NUL
  CHECK(refused(PayloadKind::cubin, cut, "k", "defines no kernel"));
  // Every single-byte corruption of the image: an answer, never a read outside it.
  for (std::size_t at = 0; at < good.size(); ++at)
    for (std::uint8_t v : {std::uint8_t(0), std::uint8_t(0xff), std::uint8_t(good[at] ^ 0x80)}) {
      auto b = good;
      b[at] = v;
      (void)check_cuda_symbol(PayloadKind::cubin, b, "k");
    }
}

TEST_CASE("check_cuda_symbol: PTX defines the symbol by .entry, outside comments and strings") {
  const auto ptx = text(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      "// .entry in_comment(\n/* .visible .entry in_block( */\n"
      ".file 1 \".entry in_string\"\n"
      ".extern .entry declared_only(.param .u64 p);\n"
      ".visible .func helper(\n.param .u64 p\n)\n{\nret;\n}\n"
      ".weak .entry _Z2mmIfLi16EEvPT_(\n.param .u64 p\n)\n{\nret;\n}\n"
      ".visible .entry\n  k (\n.param .u64 p\n)\n{\nret;\n}\n");
  CHECK(check_cuda_symbol(PayloadKind::ptx, ptx, "k"));
  CHECK(check_cuda_symbol(PayloadKind::ptx, ptx, "_Z2mmIfLi16EEvPT_"));
  for (std::string_view no : {"helper", "in_comment", "in_block", "in_string", "declared_only", "_Z2mm", "entry"}) {
    CAPTURE(no);
    CHECK(refused(PayloadKind::ptx, ptx, no, "PTX has no .entry"));
  }
  CHECK(refused(PayloadKind::ptx, text(".entry"), "k", "PTX has no .entry"));
  CHECK(refused(PayloadKind::ptx, text("/* .entry k("), "k", "PTX has no .entry"));
  CHECK(refused(PayloadKind::ptx, {}, "k", "PTX has no .entry"));
}
