// Format versions 2 and 3's record transform (lib/kcache/bundle/transform.cpp,
// FORMAT.md "Record transform"): lossless for every record shape the writer
// may meet, and every lie in a transformed record is refused before its
// bytes are believed.
#include "test_bundle_support.hpp"

#include "kcache/util/hash.hpp"

using namespace kcache;
using namespace kcache::test;

namespace {

/// A small SPIR-V module: header, then `n` OpNop-like instructions of 2..4 words.
Bytes spirv_module(int n, bool malformed_tail = false) {
  Bytes b;
  auto w = [&](std::uint32_t v) {
    for (int k = 0; k < 4; ++k) b.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
  };
  for (std::uint32_t v : {0x07230203u, 0x00010500u, 0x000b000du, 64u, 0u}) w(v);
  for (int i = 0; i < n; ++i) {
    const std::uint32_t count = 2 + static_cast<std::uint32_t>(i % 3);
    w(count << 16 | static_cast<std::uint32_t>(59 + i % 7));
    for (std::uint32_t q = 1; q < count; ++q) w(static_cast<std::uint32_t>(i * 3 + q));
  }
  if (malformed_tail) {
    w(0x00ff0001u);  // claims 255 words: the writer stops splitting here
    w(7);
  }
  return b;
}

Entry entry_with(Bytes payload, PayloadKind kind = PayloadKind::spirv) {
  Entry e = make_entries(1).front();
  e.payload = std::move(payload);
  e.payload_kind = kind;
  seal_payload(e);
  return e;
}

Bytes transformed(const Entry& e, const Bytes& record, std::uint16_t version) {
  Bytes out(record.size() + bundle::internal::k_transform_prefix);
  bundle::internal::transform_record(record, bundle::index_entry(e), e.payload, out, version);
  return out;
}

Result<Bytes> restored(const Entry& e, const Bytes& stored, std::uint16_t version) {
  Bytes record(bundle::index_entry(e).record_size);
  KCACHE_CHECK(bundle::internal::restore_record(stored, bundle::index_entry(e), record, version));
  return record;
}

/// Word `i` of the operand stream of a split or delta record (its planes
/// follow the meta and the head planes).
std::uint32_t stored_operand(const Entry& e, const Bytes& stored, std::size_t i) {
  const std::size_t n_heads = stored[10] | stored[11] << 8;
  const std::size_t n_operands = e.payload.size() / 4 - n_heads;
  const std::size_t at = bundle::internal::k_transform_prefix + encode_entry(e).size() - e.payload.size() + 4 * n_heads;
  std::uint32_t v = 0;
  for (int b = 0; b < 4; ++b) v |= std::uint32_t{stored[at + b * n_operands + i]} << (8 * b);
  return v;
}

}  // namespace

TEST_CASE("record transform round-trips every payload shape byte for byte") {
  std::vector<std::pair<std::string, Entry>> cases = {
      {"SPIR-V", entry_with(spirv_module(40))},
      {"SPIR-V with a malformed instruction", entry_with(spirv_module(10, true))},
      {"SPIR-V header only", entry_with(spirv_module(0))},
      {"not a multiple of 4", entry_with(Bytes{1, 2, 3, 4, 5, 6, 7})},
      {"pipeline-cache blob", entry_with(Bytes(301, 0xab), PayloadKind::pipeline_cache)},
      {"empty payload", entry_with(Bytes{})},
  };
  for (std::uint16_t version : {2, 3})
    for (const auto& item : cases) {
      const auto& name = item.first;  // named, not bound: clang 14 cannot capture a binding
      const auto& e = item.second;
      CAPTURE(version);
      CAPTURE(name);
      auto record = encode_entry(e);
      auto stored = transformed(e, record, version);
      auto back = restored(e, stored, version);
      REQUIRE_MESSAGE(back.has_value(), back.error().message);
      CHECK(*back == record);
    }
  // A split record zeroes what the reader recomputes: the key (32 bytes) and
  // both XXH3 digests, so it carries fewer distinct bytes than the record.
  auto e = entry_with(spirv_module(40));
  auto stored = transformed(e, encode_entry(e), 2);
  CHECK(stored[0] == 1);     // split
  CHECK(stored[1] == 0x07);  // key, payload digest and record digest elided
  // Version 3 codes the operands as differences within (opcode, index):
  // spirv_module's instruction i has opcode 59 + i % 7 and operands
  // i * 3 + q, so the first operand of instruction 7 (opcode 59 again: 22
  // after instruction 0's 1) is stored as zigzag(22 - 1) = 42.
  auto delta = transformed(e, encode_entry(e), 3);
  CHECK(delta[0] == 2);  // delta
  CHECK(delta[1] == 0x07);
  CHECK(stored_operand(e, stored, 5) == 1);  // split: instruction 0's operand, verbatim
  CHECK(stored_operand(e, delta, 5) == 2);   // delta: zigzag(1 - 0)
  std::size_t first_of_7 = 5;
  for (int i = 0; i < 7; ++i) first_of_7 += 1 + static_cast<std::size_t>(i % 3);
  CHECK(stored_operand(e, stored, first_of_7) == 22);
  CHECK(stored_operand(e, delta, first_of_7) == 42u);
  // Not SPIR-V, or no instruction: nothing to take differences of, so split.
  CHECK(transformed(entry_with(spirv_module(0)), encode_entry(entry_with(spirv_module(0))), 3)[0] == 1);
  auto blob = entry_with(Bytes(301, 0xab), PayloadKind::pipeline_cache);
  CHECK(transformed(blob, encode_entry(blob), 3)[0] == 1);
}

TEST_CASE("record transform: a version-2 bundle cannot hold the delta form") {
  auto e = entry_with(spirv_module(20));
  auto delta = transformed(e, encode_entry(e), 3);
  REQUIRE(delta[0] == 2);
  auto r = restored(e, delta, 2);
  REQUIRE(!r.has_value());
  CHECK(r.error().category == Category::corruption);
  CHECK_MESSAGE(r.error().message.find("unknown form 2 for format version 2") != std::string::npos, r.error().message);
  // A changed difference rebuilds other bytes: the rebuilt record no longer
  // equals the original (the caller's index digest then refuses it).
  auto changed = delta;
  changed[changed.size() - 1] ^= 1;
  auto back = restored(e, changed, 3);
  CHECK((!back.has_value() || *back != encode_entry(e)));
}

TEST_CASE("record transform refuses lies in a transformed record") {
  for (std::uint16_t version : {2, 3}) {
    CAPTURE(version);
    auto e = entry_with(spirv_module(20));
    const auto record = encode_entry(e);
    const auto good = transformed(e, record, version);
    auto refused = [&](Bytes stored, std::string_view what) {
      CAPTURE(what);
      auto r = restored(e, stored, version);
      REQUIRE_MESSAGE(!r.has_value(), "accepted: ", what);
      CHECK(r.error().category == Category::corruption);
      CHECK_MESSAGE(r.error().message.find("record transform") != std::string::npos, r.error().message);
    };
    auto with = [&](std::size_t at, std::uint8_t v) {
      Bytes b = good;
      b[at] = v;
      return b;
    };
    refused(with(0, 9), "unknown form");
    refused(with(1, 0x80), "unknown elision flag");
    refused(with(9, 0x7f), "payload offset past the record");
    refused(with(13, 0x7f), "more instruction words than payload words");
    refused(with(5, 0x7f), "key offset past the payload");
    Bytes verbatim(good.size(), 0);
    verbatim[3] = 1;  // form 0 with a non-zero prefix byte
    refused(verbatim, "verbatim prefix not zero");
    // An elided field that is not zero (the key's first byte, right after
    // the 14-byte prefix and the key offset).
    const std::size_t key_at = good[2] | good[3] << 8;
    refused(with(bundle::internal::k_transform_prefix + key_at, 1), "elided key not zero");
    // A head word whose count runs past the module: the first instruction's
    // word count lives in its high bytes' planes.
    const std::size_t heads_at = bundle::internal::k_transform_prefix + record.size() - e.payload.size();
    const std::size_t n_heads = good[10] | good[11] << 8;
    refused(with(heads_at + 2 * n_heads, 0xff), "instruction word count past the module");
    refused(with(heads_at + 2 * n_heads, 0x00), "instruction word count 0");
  }
}
