// The build engine's rules (build/stage.hpp), run as the same cases over
// every stage that compiles in this process: SPIR-V through glslang and, where
// the CUDA toolkit's NVRTC is found (KCACHE_TEST_NVRTC), CUDA. Each case is
// one rule the engine states once: hit, stale, a failure remembered and
// cleared by an input change, a remote hit, a poisoned remote value refused,
// a full store, and the key binding everything (a record whose fields were
// changed behind its key, an imported record whose inputs claim another
// expansion). The pipeline stage runs the same engine over a Vulkan device;
// its cases are tests/cli/dev_vulkan_build.sh and remote_device.sh.
#include "kcache/core/key_binding.hpp"
#include "kcache/engine/run.hpp"
#include "kcache/manifest/manifest.hpp"

#include "failing_store.hpp"
#include "test_support.hpp"

#include <atomic>
#include <map>
#include <mutex>

namespace kcache::engine {
namespace {

/// What differs between stages: sources, manifest and namespace.
struct StageCase {
  std::string name;
  std::string ns;
  std::string source;   ///< the kernel's file
  std::string include;  ///< a file it includes
  std::string manifest;
  std::string (*good)(const std::string& value);
  std::string broken;
  std::string content_field;  ///< an ir field that stands for the inputs' content
};

std::string glsl(const std::string& value) {
  return "#version 450\n#include \"inc.glsl\"\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = " +
         value + " + INC; }\n";
}

std::string cuda(const std::string& value) {
  return "#include \"inc.cuh\"\nextern \"C\" __global__ void k(float* d) { d[0] = " + value + " + INC; }\n";
}

std::vector<StageCase> stage_cases() {
  std::vector<StageCase> out;
  out.push_back({"spirv", "spirv/vulkan1.2", "k.comp", "inc.glsl", "[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\n",
                 glsl, "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { no_such_function(); }\n",
                 "expanded_source"});
#ifdef KCACHE_TEST_NVRTC
  out.push_back({"cuda", "cuda/sm_80", "k.cu", "inc.cuh",
                 "[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nlanguage = \"cuda\"\narch = [\"sm_80\"]\n", cuda,
                 "extern \"C\" __global__ void k(float* d) { d[0] = no_such_value; }\n", "inputs"});
#endif
  return out;
}

/// A remote as the engine sees it, in memory: publish() keeps what it is
/// offered; fetch() serves it through the engine's check, as a real remote
/// does after its own (lib/kcache/remote).
class MemoryTier final : public SecondaryTier {
 public:
  std::optional<Entry> fetch(const Namespace& ns, std::string_view, const Key& key, const EntryCheck& check) override {
    ++fetches;
    std::lock_guard lock(m_mutex);
    auto it = values.find(slot(ns.name(), key));
    if (it == values.end()) return std::nullopt;
    if (check && !check(it->second)) {
      ++refused;
      return std::nullopt;
    }
    return it->second;
  }
  void publish(const Namespace& ns, const Entry& e, const std::optional<Hash128>& direct) override {
    ++publishes;
    if (direct) publish_direct(ns, e, *direct);
    std::lock_guard lock(m_mutex);
    values[slot(ns.name(), e.key)] = e;
  }
  std::optional<Entry> fetch_direct(const Namespace& ns, std::string_view, const Hash128& id, const Hash128& direct,
                                    const EntryCheck& check) override {
    ++direct_fetches;
    std::lock_guard lock(m_mutex);
    auto it = direct_values.find(ns.name() + "/" + direct.hex());
    if (it == direct_values.end() || it->second.key.id != id) return std::nullopt;
    if (check && !check(it->second)) {
      ++refused;
      return std::nullopt;
    }
    return it->second;
  }
  void publish_direct(const Namespace& ns, const Entry& e, const Hash128& direct) override {
    std::lock_guard lock(m_mutex);
    direct_values[ns.name() + "/" + direct.hex()] = e;
  }
  std::vector<SecondaryStats> stats() const override { return {}; }

  static std::string slot(const std::string& ns, const Key& key) { return ns + "/" + key.id.hex() + key.ir.hex(); }
  std::map<std::string, Entry> values;
  std::map<std::string, Entry> direct_values;  ///< by namespace and direct key
  std::atomic<int> fetches{0}, publishes{0}, refused{0}, direct_fetches{0};

 private:
  std::mutex m_mutex;
};

struct Project {
  const StageCase& stage;
  test::TempDir dir;
  util::FixedClock clock{1'700'000'000};

  explicit Project(const StageCase& s) : stage(s) {
    dir.write(s.include, "#define INC 1\n");
    dir.write(s.source, s.good("2"));
    dir.write("kcache.toml", s.manifest);
  }
  /// Builds the project into `store`; the one receipt of the stage's kernel.
  Receipt build(store::Store& store, SecondaryTier* tier = nullptr) {
    auto m = manifest::parse_manifest(stage.manifest, "kcache.toml", dir.path());
    REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
    RunOptions options;
    options.build.jobs = 2;
    options.build.clock = &clock;
    options.build.origin = "test_engine_stages";
    options.build.secondary = tier;
    options.record_usage = false;
#ifdef KCACHE_TEST_NVRTC
    options.build.nvrtc_path = KCACHE_TEST_NVRTC;
#endif
    auto r = run(*m, store, options);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
    REQUIRE(r->result.receipts.size() == 1);
    const Receipt& receipt = r->result.receipts.front();
    CHECK(receipt.ns == stage.ns);
    return receipt;
  }
};

std::optional<Entry> stored(store::Store& store, const std::string& ns) {
  std::optional<Entry> out;
  auto r = store.read([&](store::Reader& reader) -> Result<void> {
    out = KCACHE_TRY(reader.get(ns, "k"));
    return {};
  });
  REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
  return out;
}

/// Writes `e` into `store` as it is: no check stands between a test and the
/// store, as none stands between a damaged disk (or an older kcache) and it.
void put_raw(store::Store& store, const std::string& ns, Entry e) {
  std::optional<Namespace> n;
  auto read = store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& rec : KCACHE_TRY(reader.namespace_records()))
      if (rec.ns.name() == ns) n = rec.ns;
    return {};
  });
  REQUIRE(read);
  REQUIRE(n);
  // A put of a key the store holds keeps the stored record: remove it first.
  const std::string kernel = e.kernel;
  REQUIRE(store.remove(ns, std::span(&kernel, 1)));
  auto r = store.put(*n, std::span(&e, 1));
  REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
}

}  // namespace

TEST_CASE("engine rules hold for every stage") {
  for (const StageCase& stage : stage_cases()) {
    CAPTURE(stage.name);
    // doctest tells subcases apart by name: one set per stage.
    auto named = [&](const char* what) { return stage.name + ": " + what; };
    Project p(stage);
    auto store = store::make_memory_store(p.clock);

    SUBCASE(named("compiled, then a hit that reads no compiler").c_str()) {
      CHECK(outcome_name(p.build(*store).outcome) == "compiled");
      Receipt hit = p.build(*store);
      CHECK(outcome_name(hit.outcome) == "hit");
      CHECK(hit.reason.empty());
      CHECK(hit.times[Phase::glslang].wall_ms == 0);
      CHECK(hit.times[Phase::nvrtc].wall_ms == 0);
    }
    SUBCASE(named("an include's edit makes the entry stale").c_str()) {
      p.build(*store);
      p.dir.write(stage.include, "#define INC 7\n");
      Receipt r = p.build(*store);
      CHECK(outcome_name(r.outcome) == "stale_replaced");
      CHECK(r.reason.find(stage.include) != std::string::npos);
      CHECK(outcome_name(p.build(*store).outcome) == "hit");
    }
    SUBCASE(named("a failure is remembered, and an input change clears it").c_str()) {
      p.dir.write(stage.source, stage.broken);
      Receipt first = p.build(*store);
      CHECK(outcome_name(first.outcome) == "failed");
      CHECK(!first.remembered);
      Receipt second = p.build(*store);
      CHECK(outcome_name(second.outcome) == "failed");
      CHECK(second.remembered);
      CHECK(second.failed_phase == first.failed_phase);
      p.dir.write(stage.source, stage.good("3"));
      CHECK(outcome_name(p.build(*store).outcome) == "compiled");
    }
    SUBCASE(named("a failed rebuild keeps the previous entry").c_str()) {
      p.build(*store);
      p.dir.write(stage.source, stage.broken);
      Receipt r = p.build(*store);
      CHECK(outcome_name(r.outcome) == "failed");
      CHECK(r.kept_stale);
      CHECK(stored(*store, stage.ns).has_value());
    }
    SUBCASE(named("a remote serves a kernel another store built").c_str()) {
      MemoryTier tier;
      CHECK(outcome_name(p.build(*store, &tier).outcome) == "compiled");
      CHECK(tier.publishes.load() == 1);
      auto other = store::make_memory_store(p.clock);
      Receipt r = p.build(*other, &tier);
      CHECK(outcome_name(r.outcome) == "remote_hit");
      CHECK(tier.fetches.load() >= 1);
      auto e = stored(*other, stage.ns);
      REQUIRE(e);
      CHECK(e->origin_kind == OriginKind::confirmed);
      CHECK(outcome_name(p.build(*other, &tier).outcome) == "hit");
    }
    SUBCASE(named("a runner with an empty store is served by recorded inputs, not preprocessing").c_str()) {
      MemoryTier tier;
      CHECK(outcome_name(p.build(*store, &tier).outcome) == "compiled");
      const bool direct = stage.name == "spirv";  // the stages whose toolchain is known up front
      CHECK(tier.direct_values.size() == (direct ? 1u : 0u));
      tier.fetches = 0;
      tier.direct_fetches = 0;
      auto fresh = store::make_memory_store(p.clock);
      Receipt r = p.build(*fresh, &tier);
      CHECK(outcome_name(r.outcome) == "remote_hit");
      if (direct) {
        CHECK(tier.direct_fetches.load() == 1);
        CHECK(tier.fetches.load() == 0);  // no key asked: none computed
        CHECK(r.times[Phase::expand].wall_ms == 0);
        REQUIRE(stored(*fresh, stage.ns));
        CHECK(stored(*fresh, stage.ns)->origin_kind == OriginKind::confirmed);
        CHECK(outcome_name(p.build(*fresh, &tier).outcome) == "hit");
      }
    }
    SUBCASE(named("a direct value recorded for other inputs is refused, then served by key").c_str()) {
      if (stage.name != "spirv") return;
      MemoryTier tier;
      p.build(*store, &tier);
      tier.fetches = 0;
      // The same include, edited in a way the preprocessor erases: the
      // recorded hash differs, the expansion (so the key) does not.
      p.dir.write(stage.include, "#define INC 1\n// a comment\n");
      auto fresh = store::make_memory_store(p.clock);
      Receipt r = p.build(*fresh, &tier);
      CHECK(tier.refused.load() == 1);
      CHECK(outcome_name(r.outcome) == "remote_hit");
      CHECK(tier.fetches.load() == 1);
      // Served by key, it is offered again under this checkout's inputs.
      auto e = stored(*fresh, stage.ns);
      REQUIRE(e);
      CHECK(tier.direct_values.begin()->second.inputs == e->inputs);
      auto third = store::make_memory_store(p.clock);
      CHECK(outcome_name(p.build(*third, &tier).outcome) == "remote_hit");
      CHECK(tier.fetches.load() == 1);  // the third is served by its inputs
      CHECK(tier.refused.load() == 1);
    }
    SUBCASE(named("a remote value whose fields were changed behind its key is refused").c_str()) {
      MemoryTier tier;
      p.build(*store, &tier);
      REQUIRE(tier.values.size() == 1);
      const auto honest_fields = tier.values.begin()->second.id_fields;
      // Another entry point (or policy, or specialization) under the same
      // key, wherever the remote files it.
      for (auto* values : {&tier.values, &tier.direct_values})
        for (auto& [slot, poisoned] : *values)
          for (auto& [k, v] : poisoned.id_fields)
            if (k == "entry") v = "other";
      auto victim = store::make_memory_store(p.clock);
      Receipt r = p.build(*victim, &tier);
      CHECK(outcome_name(r.outcome) == "compiled");
      CHECK(tier.refused.load() == (stage.name == "spirv" ? 2 : 1) /* direct, then by key */);
      auto e = stored(*victim, stage.ns);
      REQUIRE(e);
      CHECK(e->id_fields == honest_fields);
    }
    SUBCASE(named("a remote value dated in the future is refused").c_str()) {
      MemoryTier tier;
      p.build(*store, &tier);
      REQUIRE(tier.values.size() == 1);
      // Year 2100: stored, it would turn every later good bundle into a rollback.
      for (auto* values : {&tier.values, &tier.direct_values})
        for (auto& [slot, value] : *values) value.created = 4'102'444'800;
      auto victim = store::make_memory_store(p.clock);
      Receipt r = p.build(*victim, &tier);
      CHECK(outcome_name(r.outcome) == "compiled");
      CHECK(tier.refused.load() == (stage.name == "spirv" ? 2 : 1) /* direct, then by key */);
      REQUIRE(stored(*victim, stage.ns));
      CHECK(stored(*victim, stage.ns)->created == p.clock.now());
    }
    SUBCASE(named("a full store refuses the write: refused_write, not a hit").c_str()) {
      test::FailingStore failing(store::make_memory_store(p.clock));
      failing.fail(test::FailingStore::Op::put, Category::store_full, "map full");
      Receipt r = p.build(failing);
      CHECK(outcome_name(r.outcome) == "refused_write");
      REQUIRE(r.error);
      CHECK(r.error->category == Category::store_full);
      failing.heal_all();
      CHECK(outcome_name(p.build(failing).outcome) == "compiled");
    }
    SUBCASE(named("a stored record whose fields were changed behind its key is never a hit").c_str()) {
      p.build(*store);
      auto e = stored(*store, stage.ns);
      REQUIRE(e);
      const auto honest = *e;
      for (auto& [k, v] : e->id_fields)
        if (k == "entry") v = "other";
      put_raw(*store, stage.ns, *e);
      Receipt r = p.build(*store);
      CHECK(outcome_name(r.outcome) == "compiled");
      CHECK(r.reason.find("does not match its id fields") != std::string::npos);
      CHECK(stored(*store, stage.ns)->id_fields == honest.id_fields);
    }
    SUBCASE(named("an imported record is believed only once an expansion here gives its key").c_str()) {
      p.build(*store);
      auto e = stored(*store, stage.ns);
      REQUIRE(e);
      // Self-consistent, but its content field claims another expansion of
      // the same inputs: the record of a build that did not come from them.
      Entry forged = *e;
      for (auto& [k, v] : forged.ir_fields)
        if (k == stage.content_field) v = std::string(32, 'f');
      forged.key.ir = hash_fields([&] {
        std::vector<Field> hashed;
        for (const auto& f : forged.ir_fields)
          if (!is_product_field(IrRule::fields, f.first)) hashed.push_back(f);
        return hashed;
      }());
      REQUIRE(check_key_binding(forged));
      forged.origin_kind = OriginKind::imported;
      put_raw(*store, stage.ns, forged);
      Receipt r = p.build(*store);
      CHECK(outcome_name(r.outcome) == "stale_replaced");
      CHECK(stored(*store, stage.ns)->key == e->key);

      // The honest record imported: one expansion confirms it, then the warm path.
      Entry honest = *e;
      honest.origin_kind = OriginKind::imported;
      put_raw(*store, stage.ns, honest);
      Receipt confirmed = p.build(*store);
      CHECK(outcome_name(confirmed.outcome) == "hit");
      CHECK(stored(*store, stage.ns)->origin_kind == OriginKind::confirmed);
      Receipt warm = p.build(*store);
      CHECK(outcome_name(warm.outcome) == "hit");
      CHECK(warm.times[Phase::expand].wall_ms == 0);
    }
  }
}

}  // namespace kcache::engine
