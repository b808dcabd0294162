// The launcher (lib/kcache/launcher): what is cacheable, the tools' default
// outputs, keys relative to the project root, the text formats, and a
// command served twice (compiled, then a hit) with its run record.
#include "kcache/compile/compiler.hpp"
#include "kcache/launcher/launcher.hpp"
#include "kcache/launcher_build/serve.hpp"

#include "kcache/util/file.hpp"

#include "test_support.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace kcache;
namespace fs = std::filesystem;

namespace {

constexpr const char* k_kernel = R"(#version 450
#extension GL_GOOGLE_include_directive : require
#include "scale.h"
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer B { float d[]; };
void main() { d[gl_GlobalInvocationID.x] *= SCALE; }
)";

std::string reason_of(const std::vector<std::string>& args, const fs::path& dir) {
  auto p = launcher::plan("glslc", args, dir);
  auto* no = std::get_if<launcher::NotCacheable>(&p);
  return no ? no->reason : std::string("(cacheable)");
}

}  // namespace

TEST_CASE("plan: what kcache cannot reproduce is not cacheable, with a reason") {
  test::TempDir t;
  t.write("a.comp", k_kernel);
  t.write("b.comp", k_kernel);
  CHECK(reason_of({"-S", "a.comp"}, t.path()).find("-S") != std::string::npos);
  CHECK(reason_of({"-g", "-o", "a.spv", "a.comp"}, t.path()).find("-g") != std::string::npos);
  CHECK(reason_of({"-c", "a.comp", "b.comp"}, t.path()).find("more than one source") != std::string::npos);
  CHECK(reason_of({"-o", "x.spv", "missing.comp"}, t.path()).find("not a regular file") != std::string::npos);
  CHECK(reason_of({"--bogus", "a.comp"}, t.path()).find("--bogus") != std::string::npos);
  auto v = launcher::plan("glslangValidator", {"-V", "a.comp"}, t.path());
  CHECK(std::holds_alternative<launcher::NotCacheable>(v));
}

TEST_CASE("plan: glslc's default outputs and depfile") {
  test::TempDir t;
  t.write("sub/a.comp", k_kernel);
  auto c = launcher::plan("glslc", {"-c", "-MD", "sub/a.comp"}, t.path());
  REQUIRE(std::holds_alternative<launcher::Plan>(c));
  CHECK(std::get<launcher::Plan>(c).output == t.path() / "a.comp.spv");
  CHECK(std::get<launcher::Plan>(c).depfile == t.path() / "a.comp.spv.d");
  auto linked = launcher::plan("glslc", {"sub/a.comp"}, t.path());
  REQUIRE(std::holds_alternative<launcher::Plan>(linked));
  CHECK(std::get<launcher::Plan>(linked).output == t.path() / "a.spv");
  auto out = launcher::plan("glslc", {"-o", "-", "sub/a.comp"}, t.path());
  REQUIRE(std::holds_alternative<launcher::Plan>(out));
  CHECK_FALSE(std::get<launcher::Plan>(out).output.has_value());
}

TEST_CASE("keys root: the folder holding .git, widened for include dirs; names from what is compiled") {
  test::TempDir t;
  fs::create_directories(t.path() / "proj/.git");
  t.write("proj/shaders/a.comp", k_kernel);
  auto p = launcher::plan("glslc", {"-Iinc", "-o", "../build/out/a.spv", "shaders/a.comp"}, t.path() / "proj");
  REQUIRE(std::holds_alternative<launcher::Plan>(p));
  const auto& plan = std::get<launcher::Plan>(p);
  CHECK(launcher::keys_root(plan, std::nullopt) == t.path() / "proj");
  CHECK(launcher::keys_root(plan, t.path() / "proj/shaders") == t.path() / "proj");  // widened for inc/
  // Named after the source and its options, never the output (issue 41):
  // the same command writing elsewhere, from another build folder, has the
  // same name; other options, or another source, another name.
  const std::string name = launcher::kernel_name(plan, t.path() / "proj");
  CHECK(name.starts_with("shaders.a.comp@"));
  CHECK(name.size() == std::string("shaders.a.comp@").size() + 16);
  auto name_of = [&](std::vector<std::string> args, const fs::path& dir) {
    auto q = launcher::plan("glslc", args, dir);
    REQUIRE(std::holds_alternative<launcher::Plan>(q));
    return launcher::kernel_name(std::get<launcher::Plan>(q), t.path() / "proj");
  };
  fs::create_directories(t.path() / "proj/cmake-build-debug/x");
  CHECK(name_of({"-Iinc", "-o", "out dir/b~.spv", "shaders/a.comp"}, t.path() / "proj") == name);
  CHECK(name_of({"-I../../inc", "-o", "a.spv", "../../shaders/a.comp"}, t.path() / "proj/cmake-build-debug/x") == name);
  CHECK(name_of({"-Iinc", "-DX=1", "-o", "a.spv", "shaders/a.comp"}, t.path() / "proj") != name);
  CHECK(name_of({"-Iinc", "-O", "-o", "a.spv", "shaders/a.comp"}, t.path() / "proj") != name);
  CHECK(name_of({"-o", "a.spv", "shaders/a.comp"}, t.path() / "proj") != name);
  // Injective where names made of paths were not (issue 40 item 10):
  // shaders/x.y.comp and shaders/x/y.comp read alike, the hash (over the
  // source path too) keeps them apart.
  t.write("proj/shaders/x.y.comp", k_kernel);
  t.write("proj/shaders/x/y.comp", k_kernel);
  const std::string dotted = name_of({"-o", "o.spv", "shaders/x.y.comp"}, t.path() / "proj");
  const std::string nested = name_of({"-o", "o.spv", "shaders/x/y.comp"}, t.path() / "proj");
  CHECK(dotted.substr(0, dotted.find('@')) == nested.substr(0, nested.find('@')));
  CHECK(dotted != nested);
}

TEST_CASE("format_module: glslc's -mfmt=c and -mfmt=num text") {
  const std::vector<std::uint8_t> module{0x03, 0x02, 0x23, 0x07, 0x00, 0x00, 0x01, 0x00, 1, 0,
                                         0,    0,    2,    0,    0,    0,    3,    0,    0, 0};
  CHECK(launcher::format_module(module, migrate::OutputFormat::c) ==
        "{0x07230203,0x00010000,0x00000001,0x00000002,\n0x00000003}\n");
  CHECK(launcher::format_module(module, migrate::OutputFormat::num) ==
        "0x07230203,0x00010000,0x00000001,0x00000002,\n0x00000003\n");
  CHECK(launcher::depfile_text({"o.spv"}, {"a.comp", "inc/b.h"}) == "o.spv: a.comp inc/b.h\n");
}

TEST_CASE("serve: compiled and stored, then a hit with the same bytes; the command is in the run log") {
  test::TempDir t;
  fs::create_directories(t.path() / ".git");
  t.write("shaders/k.comp", k_kernel);
  t.write("inc/scale.h", "#define SCALE 2.0\n");
  auto store = store::make_memory_store();
  const std::vector<std::string> args{"-O", "-I../inc", "-MD", "-c", "k.comp", "-o", "../out/k.spv"};
  auto planned = launcher::plan("glslc", args, t.path() / "shaders");
  REQUIRE(std::holds_alternative<launcher::Plan>(planned));
  const auto& plan = std::get<launcher::Plan>(planned);
  fs::create_directories(t.path() / "out");
  launcher_build::ServeOptions options;
  store::Invocation inv{"glslc", (t.path() / "shaders").string(), args, ""};

  auto first = launcher_build::serve(plan, *store, options, inv);
  REQUIRE_MESSAGE(first, first.error().message);
  CHECK(first->receipt.outcome == engine::Outcome::compiled);
  CHECK(first->kernel.starts_with("shaders.k.comp@"));  // relative to the root (.git)
  auto bytes = util::read_file(t.path() / "out/k.spv");
  REQUIRE(bytes);
  CHECK(bytes->size() == first->module.size());
  CHECK(util::read_file(t.path() / "out/k.spv.d").value_or("") == "../out/k.spv: k.comp ../inc/scale.h\n");

  fs::remove(t.path() / "out/k.spv");
  auto second = launcher_build::serve(plan, *store, options, inv);
  REQUIRE_MESSAGE(second, second.error().message);
  CHECK(second->receipt.outcome == engine::Outcome::hit);
  CHECK(util::read_file(t.path() / "out/k.spv").value_or("") == *bytes);

  // An include changed: not a hit.
  t.write("inc/scale.h", "#define SCALE 3.0\n");
  auto third = launcher_build::serve(plan, *store, options, inv);
  REQUIRE_MESSAGE(third, third.error().message);
  CHECK(third->receipt.outcome == engine::Outcome::stale_replaced);
  CHECK(util::read_file(t.path() / "out/k.spv").value_or("") != *bytes);

  std::vector<store::RunRecord> runs;
  REQUIRE(store->read([&](store::Reader& r) {
    return r.runs([&](store::RunRecord&& run) {
      runs.push_back(std::move(run));
      return true;
    });
  }));
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].command == "glslc");
  REQUIRE(runs[0].invocation.has_value());
  CHECK(runs[0].invocation->args == args);
}

TEST_CASE("serve: a compile error is a failed receipt and writes nothing") {
  test::TempDir t;
  t.write("bad.comp", "#version 450\nvoid main() { nope; }\n");
  auto store = store::make_memory_store();
  auto planned = launcher::plan("glslc", {"-o", "bad.spv", "bad.comp"}, t.path());
  REQUIRE(std::holds_alternative<launcher::Plan>(planned));
  auto served =
      launcher_build::serve(std::get<launcher::Plan>(planned), *store, {}, {"glslc", t.path().string(), {}, ""});
  REQUIRE_MESSAGE(served, served.error().message);
  CHECK(served->receipt.outcome == engine::Outcome::failed);
  CHECK_FALSE(fs::exists(t.path() / "bad.spv"));
}

TEST_CASE("serve: -Werror is bound to the key, so an entry whose warnings were stripped cannot serve it") {
  test::TempDir t;
  fs::create_directories(t.path() / ".git");
  t.write("warn.comp", "#version 450\n#extension GL_FOO_bar : warn\nlayout(local_size_x = 1) in;\nvoid main() {}\n");
  auto store = store::make_memory_store();
  const store::Invocation inv{"glslc", t.path().string(), {}, ""};
  auto plan_of = [&](std::vector<std::string> args) {
    auto planned = launcher::plan("glslc", args, t.path());
    REQUIRE(std::holds_alternative<launcher::Plan>(planned));
    return std::get<launcher::Plan>(planned);
  };
  const auto plain = plan_of({"-c", "warn.comp", "-o", "plain.spv"});
  auto first = launcher_build::serve(plain, *store, {}, inv);
  REQUIRE_MESSAGE(first, first.error().message);
  REQUIRE(first->receipt.outcome == engine::Outcome::compiled);
  CHECK_FALSE(first->diagnostics.empty());

  // What a bundle or remote could bring: the same key and module re-encoded
  // without its warnings (an entry record of version 2 carries none).
  std::optional<Entry> entry;
  REQUIRE(store->read([&](store::Reader& r) -> Result<void> {
    entry = KCACHE_TRY(r.get(first->receipt.ns, first->kernel));
    return {};
  }));
  REQUIRE(entry);
  entry->diagnostics.clear();
  REQUIRE(store->remove(first->receipt.ns, std::vector<std::string>{first->kernel}));
  CHECK(first->receipt.ns == "spirv/vulkan1.0");  // glslc's default target
  REQUIRE(store->put(spirv_namespace("vulkan1.0"), std::span<const Entry>(&*entry, 1)));

  const auto strict = plan_of({"-c", "warn.comp", "-o", "strict.spv", "-Werror"});
  for (int pass = 0; pass < 2; ++pass) {  // compiled, then the remembered failure
    CAPTURE(pass);
    auto served = launcher_build::serve(strict, *store, {}, inv);
    REQUIRE_MESSAGE(served, served.error().message);
    CHECK(served->kernel != first->kernel);
    CHECK(served->receipt.outcome == engine::Outcome::failed);
    CHECK_FALSE(fs::exists(t.path() / "strict.spv"));
  }
  // -w wins over -Werror, as in glslc: the plain entry serves it.
  auto quiet = launcher_build::serve(plan_of({"-c", "warn.comp", "-o", "quiet.spv", "-Werror", "-w"}), *store, {}, inv);
  REQUIRE_MESSAGE(quiet, quiet.error().message);
  CHECK(quiet->kernel == first->kernel);
  CHECK(quiet->receipt.outcome == engine::Outcome::hit);
}

TEST_CASE("find_hit: the direct rule without a compiler, and only that") {
  test::TempDir t;
  fs::create_directories(t.path() / ".git");
  fs::create_directories(t.path() / "out");
  t.write("shaders/k.comp", k_kernel);
  t.write("inc/scale.h", "#define SCALE 2.0\n");
  auto store = store::make_memory_store();
  const std::vector<std::string> args{"-O", "-I../early", "-I../inc", "-MD", "-c", "k.comp", "-o", "../out/k.spv"};
  auto planned = launcher::plan("glslc", args, t.path() / "shaders");
  REQUIRE(std::holds_alternative<launcher::Plan>(planned));
  const auto& plan = std::get<launcher::Plan>(planned);
  store::Invocation inv{"glslc", (t.path() / "shaders").string(), args, ""};
  launcher_build::ServeOptions options;
  REQUIRE(launcher_build::serve(plan, *store, options, inv));
  const auto toolchain = compile::Toolchain::installed().fields(plan.command.optimize);
  launcher::HitOptions hit_options;
  hit_options.toolchain = toolchain;
  auto find = [&] {
    auto hit = launcher::find_hit(plan, *store, hit_options);
    REQUIRE_MESSAGE(hit, hit.error().message);
    return std::move(*hit);
  };

  auto hit = find();
  REQUIRE(hit);
  CHECK(hit->kernel.starts_with("shaders.k.comp@"));
  CHECK(hit->ns == "spirv/vulkan1.0");
  CHECK(hit->entry.payload_kind == PayloadKind::spirv);
  REQUIRE(launcher::write_outputs(plan, hit->root, hit->entry.payload, hit->entry.inputs));
  CHECK(util::read_file(t.path() / "out/k.spv.d").value_or("") == "../out/k.spv: k.comp ../inc/scale.h\n");
  REQUIRE(launcher::record_hit(*store, *hit, inv, 1'700'000'000, 900));

  SUBCASE("another toolchain: the engine's") {
    hit_options.toolchain.back().second = "another optimiser";
    CHECK_FALSE(find());
  }
  SUBCASE("an include edited: the engine's") {
    t.write("inc/scale.h", "#define SCALE 3.0\n");
    CHECK_FALSE(find());
  }
  SUBCASE("a header appearing earlier on the include path: the engine's") {
    t.write("early/scale.h", "#define SCALE 3.0\n");
    CHECK_FALSE(find());
  }
  SUBCASE("an imported entry, not yet confirmed here: the engine's") {
    auto e = hit->entry;
    e.origin_kind = OriginKind::imported;
    auto other = store::make_memory_store();
    REQUIRE(other->put(spirv_namespace("vulkan1.0"), std::span<const Entry>(&e, 1)));
    auto found = launcher::find_hit(plan, *other, hit_options);
    REQUIRE(found);
    CHECK_FALSE(*found);
    e.origin_kind = OriginKind::confirmed;
    auto confirmed = store::make_memory_store();
    REQUIRE(confirmed->put(spirv_namespace("vulkan1.0"), std::span<const Entry>(&e, 1)));
    found = launcher::find_hit(plan, *confirmed, hit_options);
    REQUIRE(found);
    CHECK(*found);
  }
  SUBCASE("the run record: one kernel, one hit, the command") {
    std::vector<store::RunRecord> runs;
    REQUIRE(store->read([&](store::Reader& r) {
      return r.runs([&](store::RunRecord&& run) {
        runs.push_back(std::move(run));
        return true;
      });
    }));
    REQUIRE(runs.size() == 2);
    CHECK(runs[1].hits == 1);
    CHECK(runs[1].kernels == 1);
    CHECK(runs[1].invocation == inv);
  }
}

TEST_CASE("find_real_program: the first tool on PATH that is not kcache") {
  test::TempDir t;
  auto program = [&](const std::string& rel) {
    t.write(rel, "#!/bin/sh\n");
    fs::permissions(t.path() / rel, fs::perms::owner_all);
  };
  program("links/glslc");             // a link to kcache-launcher, as installed
  program("copies/kcache-launcher");  // where the link points
  program("real/glslc");
  fs::remove(t.path() / "links/glslc");
  fs::create_symlink(t.path() / "copies/kcache-launcher", t.path() / "links/glslc");
  const fs::path self = t.path() / "bin/kcache";
  const std::string path =
      (t.path() / "missing").string() + ":" + (t.path() / "links").string() + ":" + (t.path() / "real").string();
  auto found = launcher::find_real_program("glslc", path, self);
  REQUIRE(found);
  CHECK(*found == t.path() / "real/glslc");
  CHECK_FALSE(launcher::find_real_program("glslc", (t.path() / "links").string(), self));
  CHECK(launcher::is_kcache_program(self, self));
  CHECK_FALSE(launcher::is_kcache_program(t.path() / "real/glslc", self));
}
