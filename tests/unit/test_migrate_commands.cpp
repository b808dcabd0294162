// kcache manifest from-commands (lib/kcache/migrate): shell words, JSON,
// options of both compilers, refusals with lines, defaults and variant
// products, and the check that the manifest reproduces every command.
#include "kcache/manifest/manifest.hpp"
#include "kcache/migrate/migrate.hpp"

#include "test_support.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace kcache;

namespace {

migrate::Options opts() {
  migrate::Options o;
  o.root = "/proj";
  o.cwd = "/proj";
  o.sources_must_exist = false;  // the option grammar, without a project on disk
  return o;
}

std::string message_of(std::string_view text) {
  auto r = migrate::from_commands(text, "log.txt", opts());
  REQUIRE_FALSE(r);
  return r.error().message;
}

}  // namespace

TEST_CASE("shell words: quotes, escapes, comments; expansions refused") {
  auto w = migrate::split_shell_words(R"(glslc -DX='a b' -DY="q\"z" a\ b.comp # note)", 100);
  REQUIRE(w);
  CHECK(*w == std::vector<std::string>{"glslc", "-DX=a b", "-DY=q\"z", "a b.comp"});
  CHECK_FALSE(migrate::split_shell_words("glslc $(pwd)/a.comp", 100));
  CHECK_FALSE(migrate::split_shell_words("glslc \"$HOME\"", 100));
  CHECK_FALSE(migrate::split_shell_words("glslc a.comp > log", 100));
  CHECK_FALSE(migrate::split_shell_words("glslc 'a.comp", 100));
  CHECK(migrate::split_shell_words("glslc '$(x)'", 100));  // single quotes keep it literal
  CHECK_FALSE(migrate::split_shell_words("a b c d", 3));
}

TEST_CASE("glslc options become the kernel's options") {
  auto r = migrate::from_commands(
      "glslc -Os --target-env=vulkan1.1 --target-spv=spv1.3 -fshader-stage=compute -Iinc -I sub/inc -DA=1 -DB "
      "-c -o out/k.spv src/k.glsl\n",
      "log.txt", opts());
  REQUIRE_MESSAGE(r, r.error().message);
  REQUIRE(r->commands.size() == 1);
  const auto& c = r->commands[0];
  CHECK(c.source == "src/k.glsl");
  CHECK(c.output == "out/k.spv");
  CHECK(c.target == "vulkan1.1");
  CHECK(c.optimize == definition::Optimize::size);
  CHECK(c.include_dirs == std::vector<std::string>{"inc", "sub/inc"});
  CHECK(c.defines == std::vector<Field>{{"A", "1"}, {"B", ""}});
  CHECK(r->outputs == std::vector<Field>{{"k", "out/k.spv"}});
  auto m = manifest::parse_manifest(r->manifest, "gen", "/proj", false);
  REQUIRE(m);
  CHECK(m->kernels[0].name == "k");
  CHECK(m->kernels[0].optimize == definition::Optimize::size);
}

TEST_CASE("tool defaults are written explicitly: vulkan1.0, no optimisation") {
  auto r = migrate::from_commands("glslc -o a.spv a.comp\nglslangValidator -V -o b.spv b.comp\n", "log.txt", opts());
  REQUIRE_MESSAGE(r, r.error().message);
  CHECK(r->manifest.find("target = \"vulkan1.0\"") != std::string::npos);
  CHECK(r->manifest.find("optimize = \"none\"") != std::string::npos);
}

TEST_CASE("a Cartesian product becomes variants, shared defines go to [defaults]") {
  std::string log;
  for (auto t : {"float", "int"})
    for (auto w : {"4", "8", "16"})
      log += fmt::format("glslc -O -DCOMMON=1 -DT={} -DW={} -o spv/saxpy_{}_{}.spv saxpy.comp\n", t, w, t, w);
  log += "glslc -O -DCOMMON=1 -o spv/fill.spv fill.comp\n";
  auto r = migrate::from_commands(log, "log.txt", opts());
  REQUIRE_MESSAGE(r, r.error().message);
  CHECK(r->variant_tables == 1);
  CHECK(r->kernel_tables == 2);
  CHECK(r->manifest.find("defines = { COMMON = 1 }") != std::string::npos);
  CHECK(r->manifest.find("T = [\"float\", \"int\"]") != std::string::npos);
  CHECK(r->manifest.find("W = [4, 8, 16]") != std::string::npos);
  CHECK(r->outputs[0] == Field{"saxpy[T=float,W=4]", "spv/saxpy_float_4.spv"});
  CHECK(r->outputs[6] == Field{"fill", "spv/fill.spv"});
}

TEST_CASE("tuples that are not a product are split until they are") {
  // (float,4) (float,8) (int,4): not a product; split by T gives two products.
  auto r = migrate::from_commands(
      "glslc -DT=float -DW=4 -o a.spv k.comp\nglslc -DT=float -DW=8 -o b.spv k.comp\n"
      "glslc -DT=int -DW=4 -o c.spv k.comp\n",
      "log.txt", opts());
  REQUIRE_MESSAGE(r, r.error().message);
  CHECK(r->commands.size() == 3);
  CHECK(r->outputs.size() == 3);
  auto m = manifest::parse_manifest(r->manifest, "gen", "/proj", false);
  REQUIRE(m);
  CHECK(m->kernels.size() == 3);  // the manifest module's own check passed inside from_commands too
}

TEST_CASE("compile_commands JSON: arguments, command, directory") {
  auto r = migrate::from_commands(
      R"([{"directory": "/proj/build", "arguments": ["glslc", "-o", "a.spv", "../s/a.comp"]},
          {"command": "glslc -o 'b c.spv' s/b.comp", "file": "s/b.comp"}])",
      "cc.json", opts());
  REQUIRE_MESSAGE(r, r.error().message);
  CHECK(r->commands[0].source == "s/a.comp");
  CHECK(r->commands[0].output == "build/a.spv");
  CHECK(r->commands[1].output == "b c.spv");
  CHECK(message_of("[{\"command\": 3}]").find("cc.json") == std::string::npos);  // display name is the caller's
  CHECK(message_of("[{\"command\": 3}]").find("\"command\" must be a string") != std::string::npos);
  CHECK(message_of("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]")
            .find("nested too deeply") != std::string::npos);
}

TEST_CASE("refusals name the line and the option") {
  CHECK(message_of("glslc -o a.spv a.comp\n\nglslc -g -o b.spv b.comp\n").find("log.txt:3: glslc -g") !=
        std::string::npos);
  CHECK(message_of("glslc -o a.spv --bogus a.comp").find("'--bogus' is not one kcache understands") !=
        std::string::npos);
  CHECK(message_of("glslc a.comp").find("no -o OUTPUT") != std::string::npos);
  CHECK(message_of("glslc -o a.spv a.comp\nglslc -o a.spv b.comp")
            .find("log.txt:2: output 'a.spv' is also written "
                  "at line 1") != std::string::npos);

  CHECK(message_of("glslc -fauto-bind-uniforms -o a.spv a.comp").find("-fauto-bind-uniforms") != std::string::npos);
  CHECK(message_of("glslc -fauto-map-locations -o a.spv a.vert").find("auto-mapped locations") != std::string::npos);
  CHECK(message_of("glslc --target-env=opengl -o a.spv a.comp").find("--target-env=opengl") != std::string::npos);
  CHECK(message_of("glslangValidator -o a.spv a.comp").find("without -V") != std::string::npos);
  CHECK(message_of("glslangValidator -V -e f -o a.spv a.comp").find("--source-entrypoint") != std::string::npos);
  CHECK(message_of("glslc -DA=1 -DA=2 -o a.spv a.comp").find("given twice") != std::string::npos);
  CHECK(message_of("cc -o a.o a.c")
            .find("no compile commands (1 command that run no shader compiler skipped (1 × cc))") != std::string::npos);
  CHECK(message_of("glslc -o a.spv a.txt").find("no stage") != std::string::npos);
  // Dropped options are notes, not errors.
  auto r = migrate::from_commands("glslc -w -MD -MF a.d -fauto-map-locations -o a.spv a.comp", "log.txt", opts());
  REQUIRE_MESSAGE(r, r.error().message);
  CHECK(r->notes.size() >= 3);
}

TEST_CASE("define values the manifest would refuse are refused with their line; a BOM is not a command") {
  // Before: "the manifest written ... does not read back (a kcache bug)", no line.
  auto slash = message_of("glslc -o a.spv a.comp\nglslc '-DA=1\\' -o b.spv a.comp\n");
  CHECK(slash.find("log.txt:2: -DA: the value") != std::string::npos);
  CHECK(slash.find("ends in a backslash") != std::string::npos);
  CHECK(slash.find("kcache bug") == std::string::npos);
  auto comment = message_of("glslc '-DA=/*x' -o a.spv a.comp");
  CHECK(comment.find("log.txt:1: -DA: the value") != std::string::npos);
  CHECK(comment.find("opens a /* comment") != std::string::npos);
  CHECK(migrate::from_commands("glslc '-DA=/* closed */ 1' -o a.spv a.comp", "log.txt", opts()));
  // A UTF-8 byte-order mark before the first command.
  auto bom = migrate::from_commands("\xEF\xBB\xBFglslc -o a.spv a.comp\n", "log.txt", opts());
  REQUIRE_MESSAGE(bom, bom.error().message);
  CHECK(bom->commands.size() == 1);
}

TEST_CASE("a command whose source is not there is refused with its line") {
  test::TempDir dir;
  dir.write("a.comp", "#version 450\nvoid main() {}\n");
  migrate::Options o;
  o.root = o.cwd = dir.path();
  CHECK(migrate::from_commands("glslc -o a.spv a.comp", "log.txt", o));
  auto missing = migrate::from_commands("glslc -o a.spv a.comp\nglslc -o b.spv b.comp", "log.txt", o);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("log.txt:2: source 'b.comp' is not a file in") != std::string::npos);
  // A folder is not a source either.
  std::filesystem::create_directory(dir.path() / "d.comp");
  CHECK_FALSE(migrate::from_commands("glslc -o d.spv d.comp", "log.txt", o));
}

TEST_CASE("bounds: line length and command count") {
  auto o = opts();
  o.limits.max_commands = 2;
  auto r = migrate::from_commands("glslc -o a.spv a.comp\nglslc -o b.spv b.comp\nglslc -o c.spv c.comp\n", "l", o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("more than 2 commands") != std::string::npos);
  o = opts();
  o.limits.max_line_bytes = 16;
  r = migrate::from_commands("glslc -o a.spv a_long_name.comp\n", "l", o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("l:1: command longer than 16 bytes") != std::string::npos);
}

TEST_CASE("outputs anywhere name kernels; sources must still be inside the root") {
  auto r = migrate::from_commands("glslc -O -o /build/out/blur.spv blur.comp\nglslc -o ../b/x.spv x.comp\n", "log.txt",
                                  opts());
  REQUIRE_MESSAGE(r, r.error().message);
  CHECK(r->commands[0].output == "/build/out/blur.spv");
  CHECK(r->commands[1].output == "/b/x.spv");
  CHECK(r->outputs == std::vector<Field>{{"blur", "/build/out/blur.spv"}, {"x", "/b/x.spv"}});
  CHECK(message_of("glslc -o /build/a.spv /elsewhere/a.comp").find("source '/elsewhere/a.comp' is outside") !=
        std::string::npos);
}

TEST_CASE("a command without the program: the one tool whose options it fits, else the reason") {
  auto r = migrate::from_commands("-fshader-stage=compute -O -o a.spv a.glsl\n-V -S comp -o b.spv b.glsl\n", "log.txt",
                                  opts());
  REQUIRE_MESSAGE(r, r.error().message);
  CHECK(r->commands[0].tool == "glslc");
  CHECK(r->commands[1].tool == "glslangValidator");
  // glslangValidator needs -V: without it only glslc fits.
  auto plain = migrate::from_commands("-o a.spv a.comp\n", "log.txt", opts());
  REQUIRE_MESSAGE(plain, plain.error().message);
  CHECK(plain->commands[0].tool == "glslc");
  CHECK(message_of("-Q -o a.spv a.comp").find("fit neither tool") != std::string::npos);
  // -D alone is glslangValidator's "input is HLSL"; with -V only it fits.
  auto hlsl = migrate::from_commands("-V -D -S comp -e main -o a.spv a.hlsl\n", "log.txt", opts());
  REQUIRE_MESSAGE(hlsl, hlsl.error().message);
  CHECK(hlsl->commands[0].tool == "glslangValidator");
  CHECK(message_of("FOO=1 glslc -o a.spv a.comp").find("sets an environment variable") != std::string::npos);
}

TEST_CASE("--set KEY=VALUE --for GLOB sets validate on the matching kernels only") {
  auto o = opts();
  o.settings.push_back({"*_dot2*", "validate", "known"});
  auto r = migrate::from_commands("glslc -o mul_dot2_f16.spv a.comp\nglslc -o add.spv b.comp\n", "log.txt", o);
  REQUIRE_MESSAGE(r, r.error().message);
  auto m = manifest::parse_manifest(r->manifest, "gen", "/proj", false);
  REQUIRE_MESSAGE(m, m.error().message);
  REQUIRE(m->kernels.size() == 2);
  CHECK(m->kernels[0].validate == definition::ValidatePolicy::known);
  CHECK(m->kernels[1].validate == definition::ValidatePolicy::strict);

  auto bad = opts();
  bad.settings.push_back({"*", "optimize", "size"});
  CHECK_FALSE(migrate::from_commands("glslc -o a.spv a.comp", "log.txt", bad));
  auto unknown_value = opts();
  unknown_value.settings.push_back({"*", "validate", "sometimes"});
  CHECK_FALSE(migrate::from_commands("glslc -o a.spv a.comp", "log.txt", unknown_value));
  auto nothing = opts();
  nothing.settings.push_back({"zzz*", "validate", "known"});
  auto none = migrate::from_commands("glslc -o a.spv a.comp", "log.txt", nothing);
  REQUIRE_FALSE(none);
  CHECK(none.error().message.find("matches no kernel") != std::string::npos);
}

TEST_CASE("what the launcher needs: -c, -MD/-MF/-MT, -mfmt; from-commands notes text output") {
  auto o = opts();
  o.require_output = false;
  auto c =
      migrate::parse_command({"glslc", "-c", "-MD", "-MF", "d/a.d", "-MT", "t", "-mfmt=num", "a.comp"}, "/proj", o);
  REQUIRE_MESSAGE(c, c.error().message);
  CHECK(c->compile_only);
  CHECK(c->write_depfile);
  CHECK(c->depfile == "d/a.d");
  CHECK(c->dep_targets == std::vector<std::string>{"t"});
  CHECK(c->format == migrate::OutputFormat::num);
  CHECK(c->output.empty());
  CHECK(c->source_as_given == "a.comp");
  auto text = migrate::from_commands("glslc -mfmt=c -o a.h a.comp", "log.txt", opts());
  REQUIRE_MESSAGE(text, text.error().message);
  REQUIRE(text->notes.size() == 1);
  CHECK(text->notes[0].find("-mfmt=c (1 command): dropped") != std::string::npos);
  CHECK_FALSE(migrate::parse_command({"glslc", "-S", "a.comp"}, "/proj", o));
}

TEST_CASE("recorded commands (the launcher's log) migrate as text does; problems name their position") {
  std::vector<migrate::CommandLine> lines{{{"glslc", "-O", "-DN=1", "-o", "/b/k1.spv", "k.comp"}, "/proj"},
                                          {{"glslc", "-O", "-DN=2", "-o", "/b/k2.spv", "k.comp"}, "/proj"}};
  auto r = migrate::from_command_lines(lines, "the run log", opts());
  REQUIRE_MESSAGE(r, r.error().message);
  CHECK(r->kernel_tables == 1);
  CHECK(r->variant_tables == 1);
  lines.push_back({{"glslc", "-g", "-o", "/b/k3.spv", "k.comp"}, "/proj"});
  auto bad = migrate::from_command_lines(lines, "the run log", opts());
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("the run log:3: glslc -g") != std::string::npos);
}

TEST_CASE("what CMake and ninja write: cd/&& chains, entries with no command, other compilers skipped") {
  // ninja -t commands: CMake's custom command chain, a C compile, a no-op.
  const std::string text =
      "cd /proj/build && /usr/bin/glslc -O -I/proj/inc -MD -MF k.spv.d -c /proj/src/k.comp -o k.spv && "
      "/usr/bin/cmake -E cmake_transform_depfile Ninja gccdepfile /proj /proj/src /proj/build /proj/build "
      "/proj/build/k.spv.d /proj/build/CMakeFiles/d/k.spv.d\n"
      "/usr/bin/cc -O2 -c /proj/main.c -o main.o\n"
      ": && /usr/bin/cmake -E echo done\n"
      "cd '/proj/build/sub dir' && glslc -DX=1 -c ../../src/k.comp -o k2.spv\n";
  auto r = migrate::from_commands(text, "commands.txt", opts());
  REQUIRE_MESSAGE(r, r.error().message);
  REQUIRE(r->commands.size() == 2);
  CHECK(r->commands[0].source == "src/k.comp");
  CHECK(r->commands[0].output == "build/k.spv");  // -o relative to the chain's cd
  CHECK(r->commands[0].include_dirs == std::vector<std::string>{"inc"});
  CHECK(r->commands[1].output == "build/sub dir/k2.spv");
  CHECK(r->commands[1].defines == std::vector<Field>{{"X", "1"}});
  bool noted = false;
  for (const auto& n : r->notes)
    noted = noted || n.find("2 commands that run no shader compiler skipped") != std::string::npos;
  CHECK(noted);

  // ninja -t compdb: the same chain as "command", and phony entries with none.
  const std::string compdb = R"([
  {"directory": "/proj/build", "command": "", "file": "all", "output": "all"},
  {"directory": "/proj/build",
   "command": "cd /proj/build && /usr/bin/glslc -c /proj/src/k.comp -o k.spv && /usr/bin/cmake -E touch x",
   "file": "/proj/src/k.comp", "output": "k.spv"}
])";
  auto j = migrate::from_commands(compdb, "compdb.json", opts());
  REQUIRE_MESSAGE(j, j.error().message);
  REQUIRE(j->commands.size() == 1);
  CHECK(j->commands[0].output == "build/k.spv");

  // Two compiles in one chain are ambiguous; a log with no compile at all says what it skipped.
  CHECK(message_of("glslc -c a.comp -o a.spv && glslc -c b.comp -o b.spv\n").find("two shader compiles") !=
        std::string::npos);
  CHECK(message_of("/usr/bin/cc -c main.c\n").find("no compile commands (1 command that run") != std::string::npos);
  // A `&` alone (a background job) is still the shell's business: refused.
  CHECK(message_of("glslc -c a.comp -o a.spv &\n").find("outside single quotes") != std::string::npos);
}
