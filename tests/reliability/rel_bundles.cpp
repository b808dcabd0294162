// B1-B4 (docs/reliability.md) at library level: hostile bundles go through the
// real importer (transfer::import_bundle) into a real LMDB store that holds
// other entries, and every one must be refused with the store unchanged
// (same last transaction id, same canonical dump digest; checked after every
// single case). Complements tests/unit/test_bundle_hostile.cpp, which checks
// the reader's messages on a small bundle: here the cases are exhaustive over
// a realistic bundle's first and last 4 KiB and every bit of its head, and
// every figure (cases, refusals, time and peak RSS maxima) is printed.
// tests/reliability/b_bundles_cli.sh does the same through `kcache import`.
#include "reliability_support.hpp"
#include "test_bundle_support.hpp"

#include "kcache/core/key_binding.hpp"
#include "kcache/transfer/transfer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <map>

using namespace kcache;
using namespace kcache::test;
using reliability::figure;

namespace {

std::string join(const std::map<std::string, std::size_t>& m) {
  std::string out;
  for (const auto& [k, v] : m) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", v, k);
  return out;
}

/// A store with 32 entries in spirv/vulkan1.2 and 8 in a vulkan namespace,
/// none of which any hostile bundle carries (so an accepted bundle would
/// show as a changed store, not as a no-op).
struct Target {
  TempDir dir;
  std::unique_ptr<store::Store> store;
  reliability::StoreState before;

  Target() {
    auto s = store::open_lmdb_store(dir.path() / "store");
    REQUIRE_MESSAGE(s.has_value(), s.error().message);
    store = std::move(*s);
    REQUIRE(store->put(spirv_namespace("vulkan1.2"), entries("resident", 32)).has_value());
    REQUIRE(store->put(vulkan_ns(), entries("resident-device", 8)).has_value());
    before = state();
  }
  reliability::StoreState state() {
    auto st = reliability::store_state(*store);
    REQUIRE_MESSAGE(st.has_value(), st.error().message);
    return *st;
  }
  /// Entries with valid SPIR-V payloads (so a well-formed bundle of them imports).
  static std::vector<Entry> entries(const std::string& prefix, std::size_t n) {
    std::vector<Entry> out;
    for (std::size_t i = 0; i < n; ++i) {
      Entry e = make_entry(i);
      e.kernel = fmt::format("{}_{}[T=f32,N={}]", prefix, i / 8, i);
      e.id_fields = {{"name", e.kernel}};
      e.payload = reliability::spirv_module(600 + 97 * (i % 13), e.kernel);
      seal_payload(e);
      e.ir_fields = {{"expanded_source", util::hash_bytes(e.payload).hex()}};
      e.key = bound_key(e);  // bound to its fields, as every built record's
      out.push_back(std::move(e));
    }
    return out;
  }
};

/// Counts for one test id.
struct Tally {
  std::size_t cases = 0, refused = 0, accepted = 0, changed = 0;
  std::map<std::string, std::size_t> categories;
  double max_ms = 0;
  std::uint64_t peak_rss_kib = 0;  ///< growth over the whole run (0 when not measurable)
  std::string text() const {
    return fmt::format("{} cases, {} refused ({}), {} accepted, {} changed the store; max {:.1f} ms per case{}", cases,
                       refused, join(categories), accepted, changed, max_ms,
                       peak_rss_kib ? fmt::format(", peak RSS growth {} KiB", peak_rss_kib) : std::string());
  }
};

/// One import of `bytes` (through a memfd, as `kcache import -` reads a
/// pipe) into `t`; records the outcome in `tally` and returns the error.
std::optional<Error> attempt(Target& t, Tally& tally, std::span<const std::uint8_t> bytes,
                             const transfer::ImportOptions& options) {
  int fd = ::memfd_create("bundle", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  REQUIRE(::lseek(fd, 0, SEEK_SET) == 0);
  transfer::BundleStream in;
  in.fd = fd;
  auto t0 = std::chrono::steady_clock::now();
  auto r = transfer::import_bundle(*t.store, in, options);
  tally.max_ms =
      std::max(tally.max_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  ::close(fd);
  ++tally.cases;
  std::optional<Error> error;
  if (!r) {
    ++tally.refused;
    ++tally.categories[std::string(category_name(r.error().category))];
    error = r.error();
  } else if (!r->refused.empty()) {
    ++tally.refused;
    ++tally.categories["entries refused"];
    error = r->refused.front().error;
  } else {
    ++tally.accepted;
  }
  if (t.state() != t.before) ++tally.changed;
  return error;
}

transfer::ImportOptions spirv_target(std::vector<bundle::PublicKey> trusted = {}) {
  transfer::ImportOptions o;
  o.target.fingerprint = "vulkan1.2";
  o.trusted = std::move(trusted);
  return o;
}

bundle::KeyPair key_from(std::uint8_t fill) {
  std::array<std::uint8_t, 32> seed;
  seed.fill(fill);
  return bundle::keypair_from_seed(seed);
}

/// A realistic bundle: 96 entries in several frames, optionally signed.
Bytes base_bundle(const bundle::KeyPair* sign = nullptr) {
  bundle::WriteOptions options;
  options.block_bytes = 24u << 10;
  options.sign = sign;
  return write_to_bytes(spirv_namespace("vulkan1.2"), Target::entries("shipped", 96), options);
}

void require_all_refused(const Tally& t) {
  CHECK(t.accepted == 0);
  CHECK(t.changed == 0);
  CHECK(t.refused == t.cases);
}

}  // namespace

TEST_CASE("positive control: the base bundles import into a copy of the target") {
  // Without this, a test that refuses everything would pass for the wrong reason.
  const auto key = key_from(3);
  for (const auto* sign : {static_cast<const bundle::KeyPair*>(nullptr), &key}) {
    Target t;
    Tally tally;
    auto options = spirv_target(sign ? std::vector{key.public_key} : std::vector<bundle::PublicKey>{});
    auto e = attempt(t, tally, base_bundle(sign), options);
    REQUIRE_MESSAGE(!e, e->message);
    CHECK(tally.accepted == 1);
    CHECK(t.state().entries == t.before.entries + 96);
  }
}

TEST_CASE("B1: truncation at every offset of the first and last 4 KiB, and random ones") {
  Target t;
  const Bytes bytes = base_bundle();
  REQUIRE(bytes.size() > 8192);
  Tally tally;
  const auto base = begin_peak_measure();
  const auto options = spirv_target();
  attempt(t, tally, {}, options);  // the empty file
  for (std::size_t len = 0; len < 4096; ++len) attempt(t, tally, std::span(bytes).first(len), options);
  for (std::size_t len = bytes.size() - 4096; len < bytes.size(); ++len)
    attempt(t, tally, std::span(bytes).first(len), options);
  Rng rng(11);
  for (int k = 0; k < 250 * reliability::soak(); ++k)
    attempt(t, tally, std::span(bytes).first(rng.below(static_cast<std::uint32_t>(bytes.size()))), options);
  tally.peak_rss_kib = base ? peak_growth_kib(base) : 0;
  figure("B1", fmt::format("library import of a {}-byte bundle cut short: {}", bytes.size(), tally.text()));
  require_all_refused(tally);
}

TEST_CASE("B2: every bit of the head flipped alone, then random flips everywhere") {
  Target t;
  const auto key = key_from(5);
  const Bytes bytes = base_bundle(&key);
  const std::size_t head = head_size(bytes);
  const auto options = spirv_target({key.public_key});
  Tally systematic, random;
  const auto base = begin_peak_measure();
  for (std::size_t bit = 0; bit < head * 8; ++bit) {
    auto damaged = bytes;
    damaged[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    attempt(t, systematic, damaged, options);
  }
  Rng rng(12);
  for (int k = 0; k < 1000 * reliability::soak(); ++k) {
    auto damaged = bytes;
    const int flips = k % 4 == 0 ? 1 + static_cast<int>(rng.below(8)) : 1;
    for (int f = 0; f < flips; ++f) {
      auto bit = rng.below(static_cast<std::uint32_t>(bytes.size() * 8));
      damaged[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    }
    if (damaged == bytes) continue;
    attempt(t, random, damaged, options);
  }
  systematic.peak_rss_kib = random.peak_rss_kib = base ? peak_growth_kib(base) : 0;
  figure("B2", fmt::format("signed {}-byte bundle, trust configured: every head bit ({} bits): {}", bytes.size(),
                           head * 8, systematic.text()));
  figure("B2", fmt::format("random 1-8 bit flips anywhere: {}", random.text()));
  require_all_refused(systematic);
  require_all_refused(random);
}

TEST_CASE("B3: fingerprints, versions, signatures, duplicates, trailing bytes, invalid modules, long keys") {
  Target t;
  Tally tally;
  std::size_t head_refusals = 0, named = 0, field_cases = 0;
  const auto signer = key_from(7), stranger = key_from(8);
  auto refused_from_head = [&](std::span<const std::uint8_t> bytes, const std::vector<bundle::PublicKey>& trusted,
                               const FingerprintRecord& target) {
    auto r = bundle::BundleReader::open(bytes);
    if (!r) return true;
    if (!diff_fingerprints(r->header().ns.record, target).empty()) return true;
    return !trusted.empty() && !bundle::verify_signature(r->header(), trusted);
  };

  SUBCASE("each fingerprint field changed alone") {
    const Namespace ns = vulkan_ns();
    const auto entries = Target::entries("device", 4);
    transfer::ImportOptions options;
    options.target.fingerprint = ns.fingerprint;  // the store holds this namespace: compared field by field
    for (std::size_t f = 0; f < ns.record.fields.size(); ++f) {
      FingerprintRecord changed = ns.record;
      changed.fields[f].second += "0";
      // (a) a genuine bundle for another device: refused as a mismatch naming the field.
      auto other = write_to_bytes(vulkan_namespace(changed), entries);
      auto e = attempt(t, tally, other, options);
      ++field_cases;
      if (e && e->category == Category::fingerprint_mismatch &&
          e->message.find(changed.fields[f].first) != std::string::npos)
        ++named;
      else FAIL_CHECK("field ", changed.fields[f].first, ": ", (e ? e->message : "accepted"));
      head_refusals += refused_from_head(other, {}, ns.record);
      // (b) the record changed under the old short fingerprint: a forgery the reader refuses.
      auto h = one_block_header(ns, entries);
      h.ns.record = changed;
      auto forged = assemble(h, bundle::internal::compress_frame(records_of(entries), 3, 20, true));
      e = attempt(t, tally, forged, options);
      CHECK_MESSAGE((e && e->category == Category::corruption), (e ? e->message : "accepted"));
      head_refusals += refused_from_head(forged, {}, ns.record);
    }
    // spirv: the target environment is the whole fingerprint.
    auto other_target = write_to_bytes(spirv_namespace("vulkan1.3"), Target::entries("t13", 4));
    auto e = attempt(t, tally, other_target, spirv_target());
    CHECK_MESSAGE((e && e->category == Category::fingerprint_mismatch), (e ? e->message : "accepted"));
    head_refusals += refused_from_head(other_target, {}, spirv_namespace("vulkan1.2").record);
    figure("B3", fmt::format("each of {} fingerprint fields changed alone (genuine and forged): {} mismatches naming "
                             "the field, {} of {} refused from the head alone",
                             ns.record.fields.size(), named, head_refusals, 2 * field_cases + 1));
    CHECK(named == field_cases);
    CHECK(head_refusals == 2 * field_cases + 1);
  }

  SUBCASE("versions, signatures, duplicates, trailing bytes") {
    const Bytes plain = base_bundle();
    const Bytes signed_bytes = base_bundle(&signer);
    const std::vector trusted{signer.public_key};
    const auto target = spirv_namespace("vulkan1.2").record;
    std::vector<std::pair<std::string, Bytes>> cases;
    for (std::uint16_t v : {0, 2, 9}) {
      auto b = plain;
      b[4] = static_cast<std::uint8_t>(v);
      b[5] = static_cast<std::uint8_t>(v >> 8);
      cases.emplace_back(fmt::format("format version {}", v), b);
    }
    auto p = split(signed_bytes);
    auto bad_sig = p.header;
    bad_sig.signature->signature[10] ^= 1;
    cases.emplace_back("bad signature", assemble(bad_sig, p.frames));
    auto wrong_key = p.header;
    wrong_key.signature->public_key = stranger.public_key;  // key id no longer matches
    cases.emplace_back("signature block naming another key", assemble(wrong_key, p.frames));
    cases.emplace_back("missing signature", plain);
    cases.emplace_back("untrusted signer", base_bundle(&stranger));
    auto entries = Target::entries("dup", 4);
    entries[3].kernel = entries[1].kernel;
    cases.emplace_back("duplicate keys", assemble(one_block_header(spirv_namespace("vulkan1.2"), entries),
                                                  bundle::internal::compress_frame(records_of(entries), 3, 20, true)));
    auto trailing = signed_bytes;
    trailing.push_back(0);
    cases.emplace_back("trailing bytes", trailing);
    for (const auto& item : cases) {
      const auto& what = item.first;  // named, not bound: clang 14 cannot capture a binding
      const auto& bytes = item.second;
      auto e = attempt(t, tally, bytes, spirv_target(trusted));
      CHECK_MESSAGE(e.has_value(), what, " was accepted");
      if (e) MESSAGE(what, ": ", e->message);
      if (what != "trailing bytes") head_refusals += refused_from_head(bytes, trusted, target);
    }
    figure("B3", fmt::format("versions 0/2/9, bad/foreign/missing/untrusted signatures, duplicate keys, trailing "
                             "bytes: {} of {} refused, {} of {} from the head alone (trailing bytes need the end)",
                             tally.refused, tally.cases, head_refusals, cases.size() - 1));
    CHECK(head_refusals == cases.size() - 1);
  }

  SUBCASE("one invalid module or one over-long key refuses the whole bundle") {
    auto entries = Target::entries("mixed", 12);
    entries[7].payload = spirv_like(1, 1, 64);  // SPIR-V-shaped, not valid
    seal_payload(entries[7]);
    auto e = attempt(t, tally, write_to_bytes(spirv_namespace("vulkan1.2"), entries), spirv_target());
    CHECK_MESSAGE(e.has_value(), "a bundle with an invalid module was accepted");
    entries = Target::entries("long", 12);
    entries[11].kernel = std::string(512, 'k');  // store keys hold at most 511 bytes
    e = attempt(t, tally, write_to_bytes(spirv_namespace("vulkan1.2"), entries), spirv_target());
    CHECK_MESSAGE(e.has_value(), "a bundle with a 512-byte kernel name was accepted");
    if (e) MESSAGE("512-byte key: ", e->message);
    figure("B3", fmt::format("11 good entries + 1 invalid module, 11 + 1 512-byte key: {}", tally.text()));
  }
  require_all_refused(tally);
}

TEST_CASE("B4: bombs, lying sizes, huge windows, a million tiny entries: refused in bounded memory and time") {
  Target t;
  Tally tally;
  const auto entries = Target::entries("bomb", 3);
  const auto h = one_block_header(spirv_namespace("vulkan1.2"), entries);
  const Bytes records = records_of(entries);
  std::uint64_t max_rss = 0;
  auto measured = [&](const std::string& what, const Bytes& bytes) {
    const auto base = begin_peak_measure();
    auto e = attempt(t, tally, bytes, spirv_target());
    const auto growth = base ? peak_growth_kib(base) : 0;
    max_rss = std::max(max_rss, growth);
    CHECK_MESSAGE(e.has_value(), what, " was accepted");
    MESSAGE(what, ": ", growth, " KiB: ", (e ? e->message : ""));
  };
  measured("frame expanding to 4 GiB", assemble(h, handmade_frame(records, 4ull << 30, records.size())));
  measured("frame expanding to 4 GiB inside one record", assemble(h, handmade_frame({}, 4ull << 30, records.size())));
  measured("header declaring a 2^30 window", assemble(one_block_header(spirv_namespace("vulkan1.2"), entries, 30), {}));
  auto lying = h;
  lying.index[1].record_size = 1288490189;
  measured("record declaring 1.2 GiB", assemble(lying, {}));
  {
    // 10^6 index entries of minimal records: the most the default limits
    // allow, written straight from FORMAT.md's index layout (as the unit test).
    constexpr std::uint32_t n = 1'000'000, per_block = 1000;
    bundle::BundleHeader big;
    big.ns = spirv_namespace("vulkan1.2");
    big.compression = {3, 20, false, 1u << 20};
    auto prefix = bundle::internal::encode_header_body(big);
    prefix.resize(prefix.size() - 16);
    util::ByteWriter w;
    w.raw(bundle::internal::k_magic);
    w.u16(1);
    w.u16(0);
    w.u32(0);
    w.raw(prefix);
    auto record_size = [](std::uint32_t i) {
      return bundle::internal::k_min_record_size + 4 + 1 + std::to_string(i).size();
    };
    std::uint64_t total = 0;
    for (std::uint32_t i = 0; i < n; ++i) total += record_size(i);
    w.u32(n);
    w.u64(total);
    w.u32(n / per_block);
    for (std::uint32_t b = 0; b < n / per_block; ++b) w.u32(per_block);
    const std::array<std::uint8_t, 32> zeros{};
    for (std::uint32_t i = 0; i < n; ++i) {
      w.str("k" + std::to_string(i));
      w.raw(zeros);
      w.u8(1);
      w.u64(4);
      w.u64(record_size(i));
      w.raw(zeros);
    }
    auto& bytes = w.bytes();
    const auto header_size = static_cast<std::uint32_t>(bytes.size() - 12);
    for (int k = 0; k < 4; ++k) bytes[8 + k] = static_cast<std::uint8_t>(header_size >> (8 * k));
    w.raw(bundle::digest_bytes(bytes).bytes);
    bundle::internal::append_trailer(bytes);
    measured(fmt::format("10^6 tiny entries ({} MiB head)", bytes.size() >> 20), bytes);
  }
  figure("B4", fmt::format("bombs (4 GiB frames), 2^30 window, 1.2 GiB record, 10^6 tiny entries: {}; max peak RSS "
                           "growth {} KiB{}",
                           tally.text(), max_rss, max_rss ? "" : " (not measurable in this build)"));
  require_all_refused(tally);
  if (!k_sanitized) CHECK(max_rss < 512 * 1024);
  CHECK(tally.max_ms < 30'000);
}
