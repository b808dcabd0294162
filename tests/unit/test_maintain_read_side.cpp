// The read side of the cache rule (build/record_rules.hpp) under gc and
// inspect: an entry and a remembered failure of each stage that compiles in
// this process (SPIR-V; CUDA where the toolkit's NVRTC is found), with and
// without a manifest, judged by the rule of the stage that wrote them. A
// CUDA failure record was once compared with the GLSL toolchain, so `gc
// --stale` without a manifest deleted every one.
#include "kcache/engine/run.hpp"
#include "kcache/maintain/gc.hpp"
#include "kcache/maintain/inspect.hpp"
#include "kcache/manifest/manifest.hpp"

#include "test_support.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace kcache;

namespace {

struct StageCase {
  std::string name;
  std::string ns;
  std::string ext;       ///< the sources' extension
  std::string include;   ///< the header both sources include
  std::string good;      ///< k's source
  std::string broken;    ///< bad's source: fails to compile
  std::string manifest;  ///< kernels k and bad
};

std::vector<StageCase> stage_cases() {
  std::vector<StageCase> out;
  out.push_back(
      {"spirv", "spirv/vulkan1.2", "comp", "inc.glsl",
       "#version 450\n#include \"inc.glsl\"\nlayout(local_size_x = 1) in;\n"
       "layout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = INC; }\n",
       "#version 450\n#include \"inc.glsl\"\nlayout(local_size_x = 1) in;\nvoid main() { no_such(INC); }\n",
       "[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\n\n[[kernel]]\nname = \"bad\"\nsource = \"bad.comp\"\n"});
#ifdef KCACHE_TEST_NVRTC
  out.push_back({"cuda", "cuda/sm_80", "cu", "inc.cuh",
                 "#include \"inc.cuh\"\nextern \"C\" __global__ void k(float* d) { d[0] = INC; }\n",
                 "#include \"inc.cuh\"\nextern \"C\" __global__ void bad(float* d) { d[0] = no_such_value + INC; }\n",
                 "[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\narch = [\"sm_80\"]\n\n"
                 "[[kernel]]\nname = \"bad\"\nsource = \"bad.cu\"\nlanguage = \"cuda\"\narch = [\"sm_80\"]\n"});
#endif
  return out;
}

const store::GcCandidate& candidate(const std::vector<store::GcCandidate>& all, const std::string& kernel) {
  for (const auto& c : all)
    if (c.kernel == kernel) return c;
  FAIL("no gc candidate " << kernel);
  return all.front();
}

}  // namespace

TEST_CASE(
    "read side: an entry and a remembered failure of every stage, under gc and inspect, with and without a "
    "manifest") {
  const auto& toolchain = compile::Toolchain::installed();
  for (const auto& stage : stage_cases()) {
    CAPTURE(stage.name);
    test::TempDir dir;
    dir.write(stage.include, "#define INC 1\n");
    dir.write("k." + stage.ext, stage.good);
    dir.write("bad." + stage.ext, stage.broken);
    auto m = manifest::parse_manifest(stage.manifest, "kcache.toml", dir.path());
    REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
    auto store = store::make_memory_store();
    util::FixedClock clock{1'700'000'000};
    engine::RunOptions options;
    options.build.jobs = 1;
    options.build.clock = &clock;
    options.build.origin = "test_maintain_read_side";
    options.record_usage = false;
#ifdef KCACHE_TEST_NVRTC
    options.build.nvrtc_path = KCACHE_TEST_NVRTC;
#endif
    auto built = engine::run(*m, *store, options);
    REQUIRE_MESSAGE(built, (built ? "" : built.error().message));
    REQUIRE(built->result.receipts.size() == 2);
    for (const auto& r : built->result.receipts) {
      CHECK(r.ns == stage.ns);
      CHECK(r.outcome == (r.kernel == "k" ? engine::Outcome::compiled : engine::Outcome::failed));
    }

    // Without a manifest: neither record was built by another toolchain.
    auto bare = maintain::gc_candidates(*store, nullptr, toolchain);
    REQUIRE_MESSAGE(bare, (bare ? "" : bare.error().message));
    REQUIRE(bare->size() == 2);
    CHECK_FALSE(candidate(*bare, "k").stale);
    CHECK(candidate(*bare, "bad").failure);
    CHECK_FALSE(candidate(*bare, "bad").stale);
    auto listed = maintain::inspect_store(*store, nullptr, toolchain);
    REQUIRE(listed);
    REQUIRE(listed->entries.size() == 1);
    CHECK(listed->entries[0].state == maintain::EntryState::unknown);

    // With it: both current (a build would hit k and report bad unbuilt).
    auto with = maintain::gc_candidates(*store, &*m, toolchain);
    REQUIRE(with);
    CHECK(candidate(*with, "k").fresh);
    CHECK(candidate(*with, "bad").fresh);
    CHECK_FALSE(candidate(*with, "bad").stale);
    auto checked = maintain::inspect_store(*store, &*m, toolchain);
    REQUIRE(checked);
    REQUIRE(checked->entries.size() == 1);
    CHECK(checked->entries[0].state == maintain::EntryState::fresh);

    // The header both include changed: both stale, by the stage's rule; a
    // manifest that drops them makes both orphans.
    dir.write(stage.include, "#define INC 2\n");
    auto edited = maintain::gc_candidates(*store, &*m, toolchain);
    REQUIRE(edited);
    CHECK(candidate(*edited, "k").stale);
    CHECK(candidate(*edited, "bad").stale);
    auto after = maintain::inspect_store(*store, &*m, toolchain);
    REQUIRE(after);
    CHECK(after->entries[0].state == maintain::EntryState::stale);
    auto none = manifest::parse_manifest("[[kernel]]\nname = \"other\"\nsource = \"k." + stage.ext + "\"\n" +
                                             (stage.name == "cuda" ? "language = \"cuda\"\narch = [\"sm_80\"]\n" : ""),
                                         "kcache.toml", dir.path());
    REQUIRE(none);
    auto orphans = maintain::gc_candidates(*store, &*none, toolchain);
    REQUIRE(orphans);
    CHECK(candidate(*orphans, "k").orphan);
    CHECK(candidate(*orphans, "bad").orphan);
  }
}
