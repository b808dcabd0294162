// Why-stale explanations (build/explain.hpp) over the memory store:
// one edit gives one reason; a missing kernel is explained by its nearest
// stored relative (another namespace, another variant, another device).
#include "kcache/engine/build.hpp"
#include "kcache/engine/explain.hpp"
#include "kcache/engine/record_rules.hpp"
#include "kcache/manifest/manifest.hpp"

#include "test_support.hpp"

#include <sys/stat.h>

namespace kcache::engine {
namespace {

const char* k_shader =
    "#version 450\nlayout(local_size_x = 1) in;\n"
    "layout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n";

struct Project {
  test::TempDir dir;
  std::unique_ptr<store::Store> store = store::make_memory_store();

  manifest::Manifest manifest(const std::string& toml) {
    auto m = manifest::parse_manifest(toml, "kcache.toml", dir.path());
    REQUIRE_MESSAGE(m.has_value(), m.error().message);
    return std::move(*m);
  }
  void build(const std::string& toml) {
    auto m = manifest(toml);
    auto r = engine::build(m, *store, {});
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    REQUIRE(!r->any_failed());
  }
  Explanation explain(const std::string& toml, const std::string& kernel, std::optional<Namespace> wanted = {}) {
    auto m = manifest(toml);
    definition::FileCache files(m.root);
    std::optional<Explanation> out;
    auto r = store->read([&](store::Reader& reader) -> Result<void> {
      Explainer explainer(reader, files, compile::Toolchain::installed());
      for (const auto& spec : m.kernels)
        if (spec.name == kernel) out = KCACHE_TRY(explainer.explain(spec, wanted));
      return {};
    });
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    REQUIRE(out.has_value());
    return *out;
  }
};

std::string names(const std::vector<Change>& changes) {
  std::string out;
  for (const auto& c : changes) out += (out.empty() ? "" : ",") + c.name;
  return out;
}

}  // namespace

TEST_CASE("one manifest edit gives exactly one reason") {
  Project p;
  p.dir.write("k.comp", k_shader);
  const std::string base =
      "[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\noptimize = \"performance\"\n"
      "defines = { VALUE = 1 }\n";
  p.build(base);
  CHECK(p.explain(base, "k").state == Freshness::fresh);

  auto e =
      p.explain("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\noptimize = \"size\"\ndefines = { VALUE = 1 }\n", "k");
  CHECK(e.state == Freshness::stale);
  CHECK(names(e.changes) == "optimize");  // the recipe field follows the level: not a second reason
  CHECK(e.changes[0].old_value == "performance");
  CHECK(e.changes[0].new_value == "size");

  e = p.explain("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\noptimize = \"performance\"\ndefines = { VALUE = 2 }\n",
                "k");
  CHECK(names(e.changes) == "define:VALUE");

  // A target change moves the kernel to another namespace: missing there,
  // explained by the entry in the old one.
  e = p.explain(base + "target = \"vulkan1.3\"\n", "k");
  CHECK(e.state == Freshness::missing);
  CHECK(e.ns == "spirv/vulkan1.3");
  CHECK(e.compared_ns == "spirv/vulkan1.2");
  CHECK(names(e.changes) == "target");
  CHECK(describe(e).find("spirv/vulkan1.2 has it: target vulkan1.2 → vulkan1.3") != std::string::npos);

  p.dir.write("k.comp", std::string(k_shader) + "uint unused_helper() { return 7u; }\n");
  e = p.explain(base, "k");
  CHECK(e.state == Freshness::stale);
  CHECK(names(e.changes) == "input:k.comp");
  CHECK(change_kind(e.changes[0].name) == ChangeKind::input);
}

TEST_CASE("a header created where an #include now finds it first is the reason, and the build compiles again") {
  Project p;
  p.dir.write("s/k.comp",
              "#version 450\n#include \"v.glsl\"\nlayout(local_size_x = 1) in;\n"
              "layout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = V; }\n");
  p.dir.write("b/v.glsl", "#define V 1u\n");
  const std::string toml = "[[kernel]]\nname = \"k\"\nsource = \"s/k.comp\"\ninclude_dirs = [\"a\", \"b\"]\n";
  p.build(toml);
  CHECK(p.explain(toml, "k").state == Freshness::fresh);
  // Beside the including file (searched first for a quoted name), then in
  // the earlier include folder: each is the one reason, named as a candidate.
  unsigned value = 1;
  for (const char* path : {"a/v.glsl", "s/v.glsl"}) {
    CAPTURE(path);
    p.dir.write(path, "#define V " + std::to_string(++value) + "u\n");
    auto e = p.explain(toml, "k");
    CHECK(e.state == Freshness::stale);
    CHECK(names(e.changes) == std::string("input:") + path);
    REQUIRE(!e.changes.empty());
    CHECK(e.changes[0].old_value == k_absent);
    CHECK(describe(e).find(std::string("include candidate ") + path + " now exists") != std::string::npos);
    auto m = p.manifest(toml);
    auto r = engine::build(m, *p.store, {});
    REQUIRE(r);
    CHECK(r->count(Outcome::stale_replaced) == 1);
    CHECK(p.explain(toml, "k").state == Freshness::fresh);
  }
}

TEST_CASE("a changed variant value is explained by the nearest stored variant") {
  Project p;
  p.dir.write("k.comp", k_shader);
  p.build("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\n[kernel.variants]\nVALUE = [1, 2]\nW = [4]\n");
  auto e = p.explain("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\n[kernel.variants]\nVALUE = [1, 3]\nW = [4]\n",
                     "k[VALUE=3,W=4]");
  CHECK(e.state == Freshness::missing);
  CHECK(e.compared_kernel == "k[VALUE=1,W=4]");  // ties go to the first by name
  CHECK(names(e.changes) == "variant:VALUE");
  CHECK(e.changes[0].new_value == "3");

  auto none = p.explain("[[kernel]]\nname = \"other\"\nsource = \"k.comp\"\ndefines = { VALUE = 1 }\n", "other");
  CHECK(none.state == Freshness::missing);
  CHECK(none.compared_ns.empty());
  CHECK(describe(none).starts_with("not in spirv/vulkan1.2 (no entry"));
}

TEST_CASE("a device namespace explains a changed fingerprint field by name") {
  Project p;
  p.dir.write("k.comp", k_shader);
  const std::string toml = "[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = { VALUE = 1 }\n";
  p.build(toml);
  // A pipeline-cache entry stored for one driver version; the device now
  // reports another.
  Entry spirv;
  REQUIRE(p.store->read([&](store::Reader& r) -> Result<void> {
    spirv = KCACHE_TRY(r.get("spirv/vulkan1.2", "k")).value();
    return {};
  }));
  FingerprintRecord old_record{{{"vendorID", "0x10de"}, {"driverVersion", "575.64"}}};
  FingerprintRecord new_record{{{"vendorID", "0x10de"}, {"driverVersion", "580.159"}}};
  Entry blob = spirv;
  blob.payload_kind = PayloadKind::pipeline_cache;
  blob.ir_fields = {{"pipeline_scheme", "1"}};
  blob.payload.assign(64, 1);
  seal_payload(blob);
  REQUIRE(p.store->put(vulkan_namespace(old_record), std::vector<Entry>{blob}));

  auto e = p.explain(toml, "k", vulkan_namespace(new_record));
  CHECK(e.state == Freshness::missing);
  CHECK(e.compared_ns == vulkan_namespace(old_record).name());
  REQUIRE(names(e.changes) == "fingerprint:driverVersion");
  CHECK(e.changes[0].old_value == "575.64");
  CHECK(e.changes[0].new_value == "580.159");
  CHECK(change_kind(e.changes[0].name) == ChangeKind::fingerprint);

  // The same device: fresh, and no toolchain fields are expected of a blob.
  CHECK(p.explain(toml, "k", vulkan_namespace(old_record)).state == Freshness::fresh);
  const RecordRules* rules = record_rules("vulkan");
  REQUIRE(rules);
  CHECK(rules->toolchain_changes(recorded(blob), compile::Toolchain::installed()).empty());
}

TEST_CASE("essential_changes keeps independent reasons") {
  std::vector<Change> in = {{"variant:T", "a", "b"},
                            {"define:T", "a", "b"},
                            {"define:U", "1", "2"},
                            {"name", "k[T=a]", "k[T=b]"},
                            {"optimizer", "x (size)", "y (size)"}};
  CHECK(names(essential_changes(in)) == "variant:T,define:U,optimizer");
}

TEST_CASE("record_run logs the run and touches the hits") {
  Project p;
  p.dir.write("k.comp", k_shader);
  const std::string toml = "[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = { VALUE = 1 }\n";
  auto m = p.manifest(toml);
  auto first = build(m, *p.store, {});
  REQUIRE(first);
  REQUIRE(record_run(*p.store, *first, util::system_clock()));
  auto second = build(m, *p.store, {});
  REQUIRE(second);
  REQUIRE(record_run(*p.store, *second, util::system_clock()));
  std::vector<store::RunRecord> runs;
  REQUIRE(p.store->read([&](store::Reader& r) {
    return r.runs([&](store::RunRecord&& run) {
      runs.push_back(std::move(run));
      return true;
    });
  }));
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].compiled == 1);
  CHECK(runs[1].hits == 1);
  CHECK(runs[1].command == "build");
  CHECK(runs[0].phases.size() == k_phase_count);
}

}  // namespace kcache::engine

namespace kcache::engine {
namespace {

/// The stored entry of `kernel` with `inputs` appended, written back: what a
/// hostile bundle's record (or a tampered store) would hold.
void plant_inputs(store::Store& s, const std::string& kernel, const std::vector<InputFile>& inputs) {
  Entry e;
  REQUIRE(s.read([&](store::Reader& r) -> Result<void> {
    e = KCACHE_TRY(r.get("spirv/vulkan1.2", kernel)).value();
    return {};
  }));
  for (const auto& i : inputs) e.inputs.push_back(i);
  auto put = s.put(spirv_namespace("vulkan1.2"), std::vector<Entry>{e});
  REQUIRE_MESSAGE(put.has_value(), put.error().message);
  REQUIRE(s.read([&](store::Reader& r) -> Result<void> {
    Entry back = KCACHE_TRY(r.get("spirv/vulkan1.2", kernel)).value();
    CHECK(back.inputs.size() == e.inputs.size());
    return {};
  }));
}

}  // namespace

/// The stored entry's recorded input paths, '|'-joined.
std::string stored_inputs(store::Store& s, const std::string& kernel) {
  std::string out;
  REQUIRE(s.read([&](store::Reader& r) -> Result<void> {
    Entry e = KCACHE_TRY(r.get("spirv/vulkan1.2", kernel)).value();
    for (const auto& i : e.inputs) out += (out.empty() ? "" : "|") + i.path;
    return {};
  }));
  return out;
}

TEST_CASE("a recorded input outside the project is never read; a build rewrites the record") {
  Project p;
  p.dir.write("k.comp", k_shader);
  // The outside file has the very hash the record claims: were it read, the
  // entry would pass the direct check as fresh.
  auto outside = p.dir.write("../outside-" + p.dir.path().filename().string(), "secret\n");
  const std::string rel = "../" + outside.filename().string();
  const std::string toml = "[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = { VALUE = 1 }\n";
  p.build(toml);
  plant_inputs(*p.store, "k",
               {{rel, util::hash_string("secret\n")}, {outside.string(), util::hash_string("secret\n")}});

  auto m = p.manifest(toml);
  definition::FileCache files(m.root);
  const auto& spec = m.kernels.at(0);
  std::optional<Entry> stored;
  REQUIRE(p.store->read([&](store::Reader& r) -> Result<void> {
    stored = KCACHE_TRY(r.get("spirv/vulkan1.2", "k"));
    return {};
  }));
  auto direct = check_direct(definition::compute_id(spec), compile::Toolchain::installed().fields(spec.optimize),
                             stored.value(), files);
  CHECK(direct.state == Freshness::stale);
  CHECK(names(direct.changes) == "input:" + rel + ",input:" + outside.string());
  // The kernel itself reads neither: expanded, it is what the store holds.
  CHECK(p.explain(toml, "k").state == Freshness::fresh);

  // A build re-expands instead of trusting the record, and rewrites it with
  // the inputs the kernel really read.
  auto r = engine::build(m, *p.store, {});
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r->count(Outcome::hit) == 1);
  CHECK(stored_inputs(*p.store, "k") == "k.comp");
}

TEST_CASE("recorded inputs naming /dev/zero or a FIFO neither hang nor get hashed") {
  Project p;
  p.dir.write("k.comp", k_shader);
  REQUIRE(::mkfifo((p.dir.path() / "pipe").c_str(), 0600) == 0);  // no writer: a blocking open hangs
  std::filesystem::create_symlink("/dev/zero", p.dir.path() / "zero");
  const std::string toml = "[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = { VALUE = 1 }\n";
  p.build(toml);
  plant_inputs(*p.store, "k", {{"/dev/zero", {}}, {"pipe", {}}, {"zero", {}}});

  auto m = p.manifest(toml);
  definition::FileCache files(m.root);
  const auto& spec = m.kernels.at(0);
  std::optional<Entry> stored;
  REQUIRE(p.store->read([&](store::Reader& r) -> Result<void> {
    stored = KCACHE_TRY(r.get("spirv/vulkan1.2", "k"));
    return {};
  }));
  auto a = assess(spec, stored.value(), files, compile::Toolchain::installed());
  CHECK(a.state == Freshness::fresh);  // after expanding: the kernel reads none of them
  CHECK(!a.direct);
  auto direct = check_direct(definition::compute_id(spec), compile::Toolchain::installed().fields(spec.optimize),
                             stored.value(), files);
  CHECK(names(direct.changes) == "input:/dev/zero,input:pipe,input:zero");
  CHECK(p.explain(toml, "k").state == Freshness::fresh);
  auto r = engine::build(m, *p.store, {});
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(stored_inputs(*p.store, "k") == "k.comp");
}

}  // namespace kcache::engine
