// The remotes of a run as build's secondary tier, over an in-memory backend
// (the real servers are exercised by tests/cli/remote_*.sh): what is
// accepted, what is refused and why, and that failures are counted and a
// failing remote is skipped.
#include "kcache/remote/tier.hpp"

#include "kcache/compile/compiler.hpp"
#include "kcache/core/key_binding.hpp"
#include "kcache/remote/value.hpp"
#include "kcache/util/hash.hpp"
#include "kcache/util/text.hpp"
#include "test_support.hpp"

#include <map>
#include <mutex>

using namespace kcache;
using namespace kcache::remote;

namespace {

/// A map, or a server that fails every request.
class MemoryBackend final : public Backend {
 public:
  std::map<std::string, std::vector<std::uint8_t>> values;
  bool down = false;
  int requests = 0;
  Result<std::optional<std::vector<std::uint8_t>>> get(const std::string& key, std::size_t) override {
    ++requests;
    if (down) return fail(Category::io_error, "connection refused");
    auto it = values.find(key);
    if (it == values.end()) return std::optional<std::vector<std::uint8_t>>{};
    return std::optional(it->second);
  }
  Result<void> put(const std::string& key, std::span<const std::uint8_t> value) override {
    ++requests;
    if (down) return fail(Category::io_error, "connection refused");
    values[key].assign(value.begin(), value.end());
    return {};
  }
  Result<bool> exists(const std::string& key) override { return values.count(key) > 0; }
  Result<void> remove(const std::string& key) override {
    values.erase(key);
    return {};
  }
  Result<std::optional<std::map<std::string, std::uint64_t>>> count_values(const std::string&) override {
    return std::optional<std::map<std::string, std::uint64_t>>{};
  }
};

/// A real, valid module (spirv-val must pass it).
Entry compiled_entry() {
  test::TempDir dir;
  dir.write("k.comp",
            "#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer B { float d[]; };\n"
            "void main() { d[gl_GlobalInvocationID.x] *= 2.0; }\n");
  definition::KernelSpec spec;
  spec.name = spec.base_name = "k";
  spec.source = "k.comp";
  definition::FileCache files(dir.path());
  PhaseTimes t;
  auto def = compile::expand(spec, files, t);
  REQUIRE(def);
  auto c = compile::compile(spec, *def, t);
  REQUIRE(c);
  Entry e;
  e.kernel = "k";
  e.id_fields = {{"name", "k"}, {"source", "k.comp"}};
  e.ir_fields = {{"expanded_source", e.kernel}};
  e.key = bound_key(e);  // bound to its fields, as every built record's
  e.inputs = def->inputs;
  e.payload.resize(c->spirv.size() * 4);
  std::memcpy(e.payload.data(), c->spirv.data(), e.payload.size());
  seal_payload(e);
  e.created = 1700000000;
  e.origin_detail = "built by test";
  return e;
}

RemoteUrl url(std::string text) { return *parse_remote_url(text); }

}  // namespace

TEST_CASE("a compiled entry goes round a remote and comes back checked") {
  const Namespace ns = spirv_namespace("vulkan1.2");
  const Entry e = compiled_entry();
  auto backend = std::make_unique<MemoryBackend>();
  auto* mem = backend.get();
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::move(backend));
  TierOptions options;
  options.remotes = {url("redis://mem")};
  RemoteTier tier(options, std::move(backends));

  CHECK_FALSE(tier.fetch(ns, "k", e.key));  // empty: a miss
  tier.publish(ns, e);
  REQUIRE(mem->values.size() == 1);
  CHECK(mem->values.begin()->first == value_key("", ns.name(), e.key));
  auto got = tier.fetch(ns, "k", e.key);
  REQUIRE(got);
  CHECK(got->payload == e.payload);
  CHECK(got->origin_kind == OriginKind::imported);
  CHECK(got->origin_detail == "remote redis://mem/0");
  // Asked for another kernel or key under the same remote key: refused.
  Key other = e.key;
  other.ir = util::hash_string("other");
  mem->values[value_key("", ns.name(), other)] = mem->values.begin()->second;
  CHECK_FALSE(tier.fetch(ns, "k", other));
  auto s = tier.stats();
  REQUIRE(s.size() == 1);
  CHECK(s[0].hits == 1);
  CHECK(s[0].misses == 1);
  CHECK(s[0].refused == 1);
  CHECK(s[0].writes == 1);
  CHECK(s[0].refusals.at(0).find("not the 'k' asked for") != std::string::npos);
  CHECK_FALSE(s[0].authenticated);
}

TEST_CASE("check_value: a module spirv-val refuses, a foreign namespace, an untrusted signer") {
  const Namespace ns = spirv_namespace("vulkan1.2");
  Entry e = compiled_entry();
  auto record = encode_entry(e);
  auto value = *encode_value(ns.name(), record);
  CHECK(RemoteTier::check_value(value, ns, "k", e.key, {}, "x"));
  auto foreign = RemoteTier::check_value(value, spirv_namespace("vulkan1.1"), "k", e.key, {}, "x");
  REQUIRE_FALSE(foreign);
  CHECK(foreign.error().message.find("holds namespace spirv/vulkan1.2, not spirv/vulkan1.1") != std::string::npos);

  std::array<std::uint8_t, 32> seed{};
  auto signer = bundle::keypair_from_seed(seed);
  std::vector<bundle::PublicKey> trusted{signer.public_key};
  auto unsigned_refused = RemoteTier::check_value(value, ns, "k", e.key, trusted, "x");
  REQUIRE_FALSE(unsigned_refused);
  CHECK(unsigned_refused.error().message.find("unsigned") != std::string::npos);
  auto signed_value = *encode_value(ns.name(), record, &signer);
  CHECK(RemoteTier::check_value(signed_value, ns, "k", e.key, trusted, "x"));

  // Valid record, invalid module: the same check as import (spirv-val).
  Entry broken = e;
  broken.payload.resize(broken.payload.size() - 4);  // OpFunctionEnd cut off
  seal_payload(broken);
  auto bad = RemoteTier::check_value(*encode_value(ns.name(), encode_entry(broken)), ns, "k", e.key, {}, "x");
  CHECK_FALSE(bad);
  // Signed by a trusted key, spirv-val is not run again: the signer's build
  // validated it and the signature binds its record (checked once, where it
  // was made); by an untrusted one, or unsigned, it is.
  auto vouched = *encode_value(ns.name(), encode_entry(broken), &signer);
  CHECK(RemoteTier::check_value(vouched, ns, "k", e.key, trusted, "x"));
  CHECK_FALSE(RemoteTier::check_value(vouched, ns, "k", e.key, {}, "x"));
  // A record naming a path outside the project (validate_entry_record).
  Entry escaping = e;
  escaping.inputs[0].path = "../../etc/passwd";
  auto esc = RemoteTier::check_value(*encode_value(ns.name(), encode_entry(escaping)), ns, "k", e.key, {}, "x");
  REQUIRE_FALSE(esc);
}

TEST_CASE("a failing remote is counted, skipped after max-failures, and the next one serves") {
  const Namespace ns = spirv_namespace("vulkan1.2");
  const Entry e = compiled_entry();
  auto down = std::make_unique<MemoryBackend>();
  down->down = true;
  auto* down_ptr = down.get();
  auto up = std::make_unique<MemoryBackend>();
  up->values[value_key("", ns.name(), e.key)] = *encode_value(ns.name(), encode_entry(e));
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::move(down));
  backends.push_back(std::move(up));
  TierOptions options;
  options.remotes = {url("redis://down?max-failures=2"), url("redis://up?read-only")};
  RemoteTier tier(options, std::move(backends));
  for (int i = 0; i < 5; ++i) CHECK(tier.fetch(ns, "k", e.key));
  tier.publish(ns, e);
  auto s = tier.stats();
  CHECK(s[0].errors == 2);
  CHECK(down_ptr->requests == 2);  // skipped after the second failure, also for publish
  CHECK(s[0].skipped.find("2 consecutive failures") != std::string::npos);
  CHECK(s[0].warnings.at(0).find("connection refused") != std::string::npos);
  CHECK(s[1].hits == 5);
  CHECK(s[1].writes == 0);  // read-only
  CHECK_FALSE(s[1].writable);
}

TEST_CASE("a stage's own check refuses a value that passed the import's, counted with its reason") {
  const Namespace ns = spirv_namespace("vulkan1.2");
  const Entry e = compiled_entry();
  auto backend = std::make_unique<MemoryBackend>();
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::move(backend));
  TierOptions options;
  options.remotes = {url("redis://mem")};
  RemoteTier tier(options, std::move(backends));
  tier.publish(ns, e);
  int asked = 0;
  engine::EntryCheck refuse = [&](const Entry& got) -> Result<void> {
    ++asked;
    CHECK(got.kernel == "k");
    return fail(Category::corruption, "remote value: a pipeline built from another module");
  };
  CHECK_FALSE(tier.fetch(ns, "k", e.key, refuse));
  CHECK(asked == 1);
  engine::EntryCheck accept = [](const Entry&) -> Result<void> { return {}; };
  CHECK(tier.fetch(ns, "k", e.key, accept));
  auto s = tier.stats();
  CHECK(s[0].refused == 1);
  CHECK(s[0].hits == 1);
  CHECK(s[0].refusals.at(0) == "k: remote value: a pipeline built from another module");
  // Values are written compressed (version 2) and read back whole.
  CHECK(s[0].bytes_written < encode_entry(e).size());
}

TEST_CASE("a URL's trust= keys make that remote accept only values they signed; --trust adds to every remote") {
  const Namespace ns = spirv_namespace("vulkan1.2");
  const Entry e = compiled_entry();
  std::array<std::uint8_t, 32> seed{};
  seed[0] = 7;
  const auto signer = bundle::keypair_from_seed(seed);
  seed[0] = 8;
  const auto other = bundle::keypair_from_seed(seed);
  const auto unsigned_value = *encode_value(ns.name(), encode_entry(e));
  const auto signed_value = *encode_value(ns.name(), encode_entry(e), &signer);
  const std::string trust = "?trust=" + util::to_hex(signer.public_key.bytes);

  // Two remotes holding the same unsigned value: the one whose URL trusts
  // the signer refuses it, the other (no trust) serves it, unauthenticated.
  auto run = [&](const std::vector<std::uint8_t>& value, const std::vector<std::string>& urls,
                 std::vector<bundle::PublicKey> cli_trust) {
    std::vector<std::unique_ptr<Backend>> backends;
    TierOptions options;
    for (const auto& u : urls) {
      auto b = std::make_unique<MemoryBackend>();
      b->values[value_key("", ns.name(), e.key)] = value;
      backends.push_back(std::move(b));
      options.remotes.push_back(url(u));
    }
    options.trusted = std::move(cli_trust);
    RemoteTier tier(options, std::move(backends));
    auto got = tier.fetch(ns, "k", e.key);
    return std::pair{got.has_value(), tier.stats()};
  };
  auto mixed = run(unsigned_value, {"redis://a" + trust, "redis://b"}, {});
  CHECK(mixed.first);
  const auto& stats = mixed.second;
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].refused == 1);
  CHECK(stats[0].authenticated);
  CHECK(stats[0].refusals.at(0).find("unsigned") != std::string::npos);
  CHECK(stats[1].hits == 1);
  CHECK_FALSE(stats[1].authenticated);

  // Signed by the trusted key: served by the trusting remote.
  auto signed_run = run(signed_value, {"redis://a" + trust}, {});
  CHECK(signed_run.first);
  CHECK(signed_run.second[0].hits == 1);
  // Signed by the trusted key, but --trust names only another key for every
  // remote: the URL's key still counts for its remote (trust adds up).
  auto both = run(signed_value, {"redis://a" + trust}, {other.public_key});
  CHECK(both.first);
  // --trust alone, for a remote without trust=: the signer is not trusted.
  auto cli_only = run(signed_value, {"redis://b"}, {other.public_key});
  CHECK_FALSE(cli_only.first);
  CHECK(cli_only.second[0].refused == 1);
}

TEST_CASE("trust= takes 64 hex digits, at most k_max_trusted_keys of them") {
  const std::string key(64, 'a');
  auto one = parse_remote_url("redis://h?trust=" + key + "&trust=" + key);  // repeated: kept once
  REQUIRE(one);
  REQUIRE(one->trust.size() == 1);
  CHECK(one->trust[0][0] == 0xaa);
  for (const std::string& bad :
       {std::string("redis://h?trust="), "redis://h?trust=" + std::string(63, 'a'),
        "redis://h?trust=" + std::string(65, 'a'), "redis://h?trust=" + std::string(64, 'g')}) {
    INFO(bad);
    auto r = parse_remote_url(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("trust needs a public key") != std::string::npos);
  }
  std::string many = "redis://h?";
  for (std::size_t i = 0; i <= k_max_trusted_keys; ++i) many += fmt::format("trust={:064x}&", i + 1);
  auto r = parse_remote_url(many);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("more than 16 trust= keys") != std::string::npos);
}

TEST_CASE("refused values count toward max-failures: a hostile remote is skipped, not paid for by every kernel") {
  const Namespace ns = spirv_namespace("vulkan1.2");
  const Entry e = compiled_entry();
  auto hostile = std::make_unique<MemoryBackend>();
  auto* hostile_ptr = hostile.get();
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::move(hostile));
  TierOptions options;
  options.remotes = {url("redis://hostile?max-failures=2")};
  RemoteTier tier(options, std::move(backends));
  // Every key holds bytes that are no value (damaged, or a bomb refused by its size).
  std::vector<Key> keys;
  for (int i = 0; i < 5; ++i) {
    Key k = e.key;
    k.ir = util::hash_string("kernel " + std::to_string(i));
    keys.push_back(k);
    hostile_ptr->values[value_key("", ns.name(), k)] = std::vector<std::uint8_t>(64, 0xEE);
  }
  for (const auto& k : keys) CHECK_FALSE(tier.fetch(ns, "k", k));
  auto s = tier.stats();
  CHECK(s[0].refused == 2);
  CHECK(hostile_ptr->requests == 2);
  CHECK(s[0].skipped.find("2 consecutive failures") != std::string::npos);
  CHECK(s[0].skipped.find("bad magic") != std::string::npos);

  // A hit in between starts the count again: occasional damage never skips a remote.
  auto mixed = std::make_unique<MemoryBackend>();
  auto* mixed_ptr = mixed.get();
  std::vector<std::unique_ptr<Backend>> more;
  more.push_back(std::move(mixed));
  RemoteTier tier2(options, std::move(more));
  mixed_ptr->values[value_key("", ns.name(), e.key)] = *encode_value(ns.name(), encode_entry(e));
  for (int i = 0; i < 3; ++i) {
    mixed_ptr->values[value_key("", ns.name(), keys[i])] = std::vector<std::uint8_t>(64, 0xEE);
    CHECK_FALSE(tier2.fetch(ns, "k", keys[i]));
    CHECK(tier2.fetch(ns, "k", e.key));
  }
  auto s2 = tier2.stats();
  CHECK(s2[0].refused == 3);
  CHECK(s2[0].hits == 3);
  CHECK(s2[0].skipped.empty());
}

TEST_CASE("direct values: written only signed, read only from remotes with trusted keys") {
  const Namespace ns = spirv_namespace("vulkan1.2");
  const Entry e = compiled_entry();
  const Hash128 direct = util::hash_string("direct key of k");
  auto signer = bundle::generate_keypair();
  REQUIRE(signer);
  auto make_tier = [&](std::vector<std::string> urls, std::optional<bundle::KeyPair> sign,
                       std::vector<MemoryBackend*>& mems) {
    std::vector<std::unique_ptr<Backend>> backends;
    for (std::size_t i = 0; i < urls.size(); ++i) {
      backends.push_back(std::make_unique<MemoryBackend>());
      mems.push_back(static_cast<MemoryBackend*>(backends.back().get()));
    }
    TierOptions options;
    for (auto& u : urls) options.remotes.push_back(url(u));
    options.sign = std::move(sign);
    return std::make_unique<RemoteTier>(options, std::move(backends));
  };
  const std::string trust = "redis://mem?trust=" + util::to_hex(signer->public_key.bytes);

  // Unsigned writer: no direct value (no reader would believe it).
  std::vector<MemoryBackend*> unsigned_mems;
  auto unsigned_tier = make_tier({"redis://mem"}, std::nullopt, unsigned_mems);
  unsigned_tier->publish_direct(ns, e, direct);
  CHECK(unsigned_mems[0]->values.empty());

  // Signed writer: filed under the direct key.
  std::vector<MemoryBackend*> mems;
  auto writer = make_tier({"redis://mem"}, *signer, mems);
  writer->publish_direct(ns, e, direct);
  REQUIRE(mems[0]->values.count(value_direct_key("", ns.name(), direct)) == 1);
  const auto value = mems[0]->values.begin()->second;

  // A compiled entry offered by key and by inputs at once: one value, under
  // both keys (signed); unsigned, by key only.
  std::vector<MemoryBackend*> both;
  auto both_tier = make_tier({"redis://mem"}, *signer, both);  // owns the backends
  both_tier->publish(ns, e, direct);
  REQUIRE(both[0]->values.size() == 2);
  CHECK(both[0]->values.at(value_key("", ns.name(), e.key)) ==
        both[0]->values.at(value_direct_key("", ns.name(), direct)));
  std::vector<MemoryBackend*> keyed_only;
  auto keyed_tier = make_tier({"redis://mem"}, std::nullopt, keyed_only);
  keyed_tier->publish(ns, e, direct);
  CHECK(keyed_only[0]->values.size() == 1);
  CHECK(keyed_only[0]->values.count(value_key("", ns.name(), e.key)) == 1);

  // A reader without trusted keys does not ask; one with them gets it,
  // whatever its key's ir half, once the id half is the one asked.
  std::vector<MemoryBackend*> readers;
  auto reader = make_tier({"redis://mem", trust}, std::nullopt, readers);
  for (auto* m : readers) m->values[value_direct_key("", ns.name(), direct)] = value;
  auto got = reader->fetch_direct(ns, "k", e.key.id, direct, {});
  REQUIRE(got);
  CHECK(got->key == e.key);
  CHECK(got->inputs == e.inputs);
  CHECK(readers[0]->requests == 0);  // the untrusted remote was not asked
  CHECK(readers[1]->requests == 1);
  CHECK_FALSE(reader->fetch_direct(ns, "k", util::hash_string("another id"), direct, {}));
  // The engine's check (inputs) refuses: counted as a refusal.
  CHECK_FALSE(reader->fetch_direct(ns, "k", e.key.id, direct, [](const Entry&) -> Result<void> {
    return fail(Category::corruption, "recorded for other inputs");
  }));
  auto s = reader->stats();
  CHECK(s[1].hits == 1);
  CHECK(s[1].refused == 2);

  // Unsigned bytes under the direct key of a trusting remote: refused.
  auto unsigned_value = encode_value(ns.name(), encode_entry(e));
  REQUIRE(unsigned_value);
  auto refused = RemoteTier::check_direct_value(*unsigned_value, ns, "k", e.key.id,
                                                std::vector<bundle::PublicKey>{signer->public_key}, "x");
  CHECK_FALSE(refused);
  auto no_keys = RemoteTier::check_direct_value(value, ns, "k", e.key.id, {}, "x");
  REQUIRE_FALSE(no_keys);
  CHECK(no_keys.error().category == Category::invalid_argument);
}
