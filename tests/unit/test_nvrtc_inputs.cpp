// Every file NVRTC reads is an input of the entry, or the kernel fails
// saying what could not be tracked (nvrtc.hpp's top): the strict include
// scan sees each spelling of a directive NVRTC honours (%:, comments between
// # and include, splices, trigraphs, __has_include), refuses what it cannot
// follow (computed names, #include_next, absolute paths, FIFOs, one name for
// two files) with file:line and the directive, and — where NVRTC is
// installed — NVRTC compiles the hashed bytes from memory and reads no
// project file from disk.
#include "kcache/core/cuda.hpp"
#include "kcache/nvrtc/nvrtc.hpp"

#include "nvrtc_test_project.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

using namespace kcache;
namespace fs = std::filesystem;

namespace {

fs::path project(const std::string& name) { return test::nvrtc_project("nvrtc_inputs", name); }

void write(const fs::path& p, const std::string& text) { test::write_file(p, text); }

definition::KernelSpec spec_for(const std::string& source) { return test::cuda_spec_for(source); }

/// The project paths scan_inputs lists for src/k.cu holding `text`.
std::vector<std::string> inputs_of(const fs::path& dir, const std::string& text) {
  write(dir / "src/k.cu", text);
  definition::FileCache files(dir);
  auto got = nvrtc::scan_inputs(spec_for("src/k.cu"), files);
  REQUIRE_MESSAGE(got, (got ? "" : got.error().message));
  std::vector<std::string> paths;
  for (const auto& f : got->inputs) paths.push_back(f->path);
  return paths;
}

/// scan_inputs' error for src/k.cu holding `text`.
Error error_of(const fs::path& dir, const std::string& text) {
  write(dir / "src/k.cu", text);
  definition::FileCache files(dir);
  auto got = nvrtc::scan_inputs(spec_for("src/k.cu"), files);
  REQUIRE_FALSE(got);
  return got.error();
}

bool has(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

}  // namespace

TEST_CASE("every spelling of #include NVRTC honours makes the header an input") {
  auto dir = project("spellings");
  for (const char* h : {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"})
    write(dir / "inc" / (std::string(h) + ".cuh"), "// header\n");
  const std::string text =
      "%:include <a.cuh>\n"                            // digraph introducer
      "#/**/include <b.cuh>\n"                         // a comment between # and include
      "# /* x\n y */ include <c.cuh>\n"                // a block comment continuing the directive
      "#inc\\\nlude <d.cuh>\n"                         // a splice inside the directive name
      "#include \\\n  <e.cuh>\n"                       // a splice before the name
      "#include \\  \n<f.cuh>\n"                       // spaces after the backslash: NVRTC splices too
      "?\?=include <g.cuh>\n"                          // a trigraph (NVRTC honours it under -std=c++14)
      "int y; /* spans\n lines */ #include <h.cuh>\n"  // NVRTC takes this for a directive
      "#if __has_include(<i.cuh>)\n#endif\n"           // __has_include names an input too
      "#import <j.cuh>\n";
  auto paths = inputs_of(dir, text);
  CHECK(paths == std::vector<std::string>{"src/k.cu", "inc/a.cuh", "inc/b.cuh", "inc/c.cuh", "inc/d.cuh", "inc/e.cuh",
                                          "inc/f.cuh", "inc/g.cuh", "inc/h.cuh", "inc/i.cuh", "inc/j.cuh"});
}

TEST_CASE("what is no directive adds nothing; header names are lexed before comments") {
  auto dir = project("not_directives");
  write(dir / "inc/a//b.cuh", "");  // the file system folds the double slash
  write(dir / "inc/real.cuh", "");
  const std::string text =
      "/*\n#include \"/etc/passwd\"\n*/\n"
      "// #include MACRO\n"
      "const char* s = \"#include MACRO\";\n"
      "const char* r = R\"x(\n#include MACRO\n)x\";\n"
      "char q = '\"'; int n = 1'000; // a separator\n"
      "#if defined(__has_include)\n#endif\n"
      "#include <a//b.cuh>\n"
      "#include <real.cuh> // a comment after\n"
      "#include <cuda_fp16.h>\n";  // found nowhere in the project: a toolkit header
  auto paths = inputs_of(dir, text);
  CHECK(paths == std::vector<std::string>{"src/k.cu", "inc/a/b.cuh", "inc/real.cuh"});
}

TEST_CASE("a computed #include, #include_next and __has_include of a macro fail with file:line and what to do") {
  auto dir = project("computed");
  auto e = error_of(dir, "// line 1\n#define H \"x.cuh\"\n#include H\n");
  CHECK(e.category == Category::invalid_argument);
  CHECK(has(e.message, "src/k.cu:3: `#include H`: a computed #include cannot be tracked"));
  CHECK(has(e.message, "write the header name literally"));
  // In a header, inside #if 0 too: the scan does not evaluate #if.
  write(dir / "inc/h.cuh", "#if 0\n#  include_next <h.cuh>\n#endif\n");
  e = error_of(dir, "#include <h.cuh>\n");
  CHECK(has(e.message, "inc/h.cuh:2: `#  include_next <h.cuh>`: #include_next cannot be tracked"));
  e = error_of(dir, "#define N <x.cuh>\n#if __has_include(N)\n#endif\n");
  CHECK(has(e.message, "src/k.cu:2: `__has_include(N)`: a computed __has_include cannot be tracked"));
  e = error_of(dir, "#include_next \"x.cuh\"\n");
  CHECK(has(e.message, "#include_next cannot be tracked"));
}

TEST_CASE("absolute paths and paths leaving the project fail naming them, __has_include's too") {
  auto dir = project("paths");
  auto e = error_of(dir, "#include </etc/hostname>\n");
  CHECK(has(e.message, "src/k.cu:1: `#include </etc/hostname>`: an absolute path"));
  e = error_of(dir, "#if __has_include(\"/tmp/fifo\")\n#endif\n");
  CHECK(has(e.message, "an absolute path"));
  e = error_of(dir, "\n%:include \"../../x.cuh\"\n");
  CHECK(has(e.message, "src/k.cu:2: `%:include \"../../x.cuh\"`"));
  CHECK(has(e.message, "outside the manifest's folder"));
  // Inside the project, ../ is fine.
  write(dir / "other/x.cuh", "");
  CHECK(inputs_of(dir, "#include \"../other/x.cuh\"\n") == std::vector<std::string>{"src/k.cu", "other/x.cuh"});
}

TEST_CASE("an #include of a FIFO fails at once, never opening it blocking") {
  auto dir = project("fifo");
  REQUIRE(::mkfifo((dir / "src/pipe.cuh").c_str(), 0600) == 0);
  auto e = error_of(dir, "// first\n#include \"pipe.cuh\"\n");
  CHECK(e.category == Category::invalid_argument);
  CHECK(has(e.message, "src/k.cu:2: `#include \"pipe.cuh\"`"));
  CHECK(has(e.message, "not a regular file"));
}

TEST_CASE("one include name meaning two files in one kernel fails naming both") {
  auto dir = project("ambiguous");
  write(dir / "src/a/common.cuh", "");
  write(dir / "src/a/x.cuh", "#include \"common.cuh\"\n");
  write(dir / "src/b/common.cuh", "");
  write(dir / "src/b/y.cuh", "#include \"common.cuh\"\n");
  auto e = error_of(dir, "#include \"a/x.cuh\"\n#include \"b/y.cuh\"\n");
  CHECK(has(e.message, "src/b/y.cuh:1: `#include \"common.cuh\"`: means src/b/common.cuh here but src/a/common.cuh"));
  // The same file under two names is fine: both names are handed to NVRTC.
  write(dir / "src/b/y.cuh", "#include \"../a/common.cuh\"\n");
  write(dir / "src/k.cu", "#include \"a/x.cuh\"\n#include \"b/y.cuh\"\n");
  definition::FileCache files(dir);
  auto src = files.get("src/k.cu");
  REQUIRE(src);
  auto scan = nvrtc::scan_includes(*src, {"inc"}, [&](const std::string& rel) { return files.get(rel); });
  REQUIRE_MESSAGE(scan, (scan ? "" : scan.error().message));
  std::vector<std::string> names;
  for (const auto& h : scan->headers) names.push_back(h.include_name + "=" + h.file->path);
  CHECK(names == std::vector<std::string>{"a/x.cuh=src/a/x.cuh", "b/y.cuh=src/b/y.cuh", "common.cuh=src/a/common.cuh",
                                          "../a/common.cuh=src/a/common.cuh"});
}

TEST_CASE("the scan's bounds: nesting depth and hostile bytes") {
  auto dir = project("bounds");
  // A chain of 70 distinct headers nests deeper than k_max_include_depth.
  for (int i = 0; i < 70; ++i)
    write(dir / "inc" / ("h" + std::to_string(i) + ".cuh"), "#include <h" + std::to_string(i + 1) + ".cuh>\n");
  auto e = error_of(dir, "#include <h0.cuh>\n");
  CHECK(has(e.message, "nest deeper than"));
  // Unterminated comments, literals and raw strings end the file quietly.
  for (std::string text :
       {"/* never closed\n#include MACRO\n", "R\"abc(\n#include MACRO\n", "\"open\n#include <x.cuh>\n",
        "#include \"unterminated\n", "#include <unterminated\n", "#", "%:", "?\?=", "\\", "'"}) {
    CAPTURE(text);
    write(dir / "src/k.cu", text);
    definition::FileCache files(dir);
    auto got = nvrtc::scan_inputs(spec_for("src/k.cu"), files);
    if (text.starts_with("#include \"unterminated") || text.starts_with("#include <unterminated"))
      CHECK_FALSE(got);  // an unterminated name is no literal name
    else CHECK(got);
  }
}

TEST_CASE("the scan stays linear on hostile files (one long line of what makes lexers rescan)") {
  auto dir = project("linear");
  for (std::string unit : {"/**/", "R\"", "R\"abc", "__has_include(\"a.cuh\")", "\"x", "'", "%:", "?\?/", "1'"}) {
    CAPTURE(unit);
    std::string text;
    while (text.size() < (4u << 20)) text += unit;
    write(dir / "src/k.cu", text + "\n__has_include(<open\n");
    definition::FileCache files(dir);
    const auto start = std::chrono::steady_clock::now();
    (void)nvrtc::scan_inputs(spec_for("src/k.cu"), files);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));  // quadratic would take hours
  }
}

#ifdef KCACHE_TEST_NVRTC
namespace {

std::shared_ptr<const nvrtc::Library> library() {
  auto lib = nvrtc::Library::load(std::string(KCACHE_TEST_NVRTC));
  REQUIRE_MESSAGE(lib, (lib ? "" : lib.error().message));
  return *lib;
}

/// A PTX compile of src/k.cu, its inputs as scan_inputs found them.
nvrtc::Request request(const fs::path& dir, definition::FileCache& files) {
  nvrtc::Request r;
  auto inputs = nvrtc::scan_inputs(spec_for("src/k.cu"), files);
  REQUIRE_MESSAGE(inputs, (inputs ? "" : inputs.error().message));
  r.inputs = inputs->inputs;
  r.source = r.inputs.front()->content;
  r.source_path = dir / "src/k.cu";
  r.root = dir;
  r.arch = "compute_90";
  r.include_dirs = {dir / "inc"};
  r.name_expression = "k";
  return r;
}

std::string ptx(const nvrtc::Output& out) { return std::string(out.payload.begin(), out.payload.end()); }

}  // namespace

TEST_CASE("NVRTC compiles the bytes that were hashed, even when a header changes on disk meanwhile") {
  auto lib = library();
  auto dir = project("exact");
  write(dir / "inc/value.cuh", "#define VALUE 1234567\n");
  write(dir / "src/local.cuh", "#include <value.cuh>\n");
  write(dir / "src/k.cu", "#include \"local.cuh\"\nextern \"C\" __global__ void k(int* x) { x[0] = VALUE; }\n");
  definition::FileCache files(dir);
  auto req = request(dir, files);
  write(dir / "inc/value.cuh", "#define VALUE 7654321\n");  // after the scan hashed it
  auto out = lib->compile(req);
  REQUIRE_MESSAGE(out, (out ? "" : out.error().message));
  CHECK(has(ptx(*out), "1234567"));
  CHECK_FALSE(has(ptx(*out), "7654321"));
}

TEST_CASE("NVRTC reads no project file from disk: a header not among the inputs is not found") {
  auto lib = library();
  auto dir = project("no_disk");
  write(dir / "src/k.cu", "#include \"side.cuh\"\nextern \"C\" __global__ void k(int* x) { x[0] = SIDE; }\n");
  write(dir / "src/side.cuh", "#define SIDE 1\n");
  definition::FileCache files(dir);
  auto req = request(dir, files);
  req.inputs.resize(1);  // as if the scan had not seen side.cuh
  auto out = lib->compile(req);
  REQUIRE_FALSE(out);
  CHECK(out.error().category == Category::compile_failed);
  CHECK(has(out.error().message, "src/k.cu:1"));
  CHECK(has(out.error().message, "could not open source file \"side.cuh\""));
}

TEST_CASE("without inputs, compile() scans the project itself, with the same refusals") {
  auto lib = library();
  auto dir = project("rescan");
  write(dir / "inc/v.cuh", "#define V 42\n");
  write(dir / "src/k.cu", "#include <v.cuh>\nextern \"C\" __global__ void k(int* x) { x[0] = V; }\n");
  definition::FileCache files(dir);
  auto req = request(dir, files);
  req.inputs.clear();
  req.include_dirs = {dir / "inc/"};  // a folder written with its slash is the same folder
  auto out = lib->compile(req);
  REQUIRE_MESSAGE(out, (out ? "" : out.error().message));
  auto outside = req;
  outside.include_dirs = {dir.parent_path()};
  auto refused_dir = lib->compile(outside);
  REQUIRE_FALSE(refused_dir);
  CHECK(has(refused_dir.error().message, "is not inside the project folder"));
  REQUIRE(::mkfifo((dir / "inc/pipe.cuh").c_str(), 0600) == 0);
  req.source = "#include <pipe.cuh>\n" + req.source;
  auto refused = lib->compile(req);
  REQUIRE_FALSE(refused);
  CHECK(has(refused.error().message, "src/k.cu:1: `#include <pipe.cuh>`"));
}

TEST_CASE("an error in a header names its project path, and the program its project-relative one") {
  auto lib = library();
  auto dir = project("header_error");
  write(dir / "inc/sub/bad.cuh", "// fine\nint bad = nope;\n");
  write(dir / "src/k.cu", "#include <sub/bad.cuh>\nextern \"C\" __global__ void k(int* x) { x[0] = __LINE__; }\n");
  definition::FileCache files(dir);
  auto out = lib->compile(request(dir, files));
  REQUIRE_FALSE(out);
  CHECK(has(out.error().message, "inc/sub/bad.cuh:2: error"));
  CHECK_FALSE(has(out.error().message, dir.string()));
}
#endif

TEST_CASE("every candidate searched in vain is recorded absent, in search order, once") {
  auto dir = project("absent");
  write(dir / "inc2/h.cuh", "#if __has_include(<probe.cuh>)\n#endif\n");
  write(dir / "src/k.cu", "#include \"h.cuh\"\n#include \"h.cuh\"\n#include <sys.h>\n");
  definition::FileCache files(dir);
  auto spec = spec_for("src/k.cu");
  spec.include_dirs = {"inc1", "inc2"};
  auto scan = nvrtc::scan_inputs(spec, files);
  REQUIRE_MESSAGE(scan, (scan ? "" : scan.error().message));
  CHECK(scan->absent == std::vector<std::string>{"src/h.cuh", "inc1/h.cuh", "inc1/sys.h", "inc2/sys.h",
                                                 "inc1/probe.cuh", "inc2/probe.cuh"});
  auto recorded = nvrtc::recorded_inputs(*scan);
  REQUIRE(recorded.size() == 2 + scan->absent.size());
  CHECK_FALSE(recorded[0].absent());
  CHECK(recorded[1].path == "inc2/h.cuh");
  CHECK(recorded[2].path == "src/h.cuh");
  CHECK(recorded[2].absent());
}
