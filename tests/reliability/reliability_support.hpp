// Shared by the reliability tier's programs (docs/reliability.md "How each is tested"):
// the "store unchanged" fingerprint of a store, and figure lines.
//
// "Store unchanged" = the same last transaction id and the same digest of a
// canonical dump, before and after. The canonical dump is, per namespace in
// key order: its name and full fingerprint record, then per entry in kernel
// order its re-encoded record (the entry format has one encoding per entry,
// so re-encoding gives the stored bytes) and its usage record. Reading it
// decodes every record, so a dump also checks every entry's digests: a
// corrupt record is an error, not a different digest.
//
// Thread-safety: plain functions over a Store (which is thread-safe).
#pragma once

#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/bytes.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

namespace kcache::reliability {

/// What "store unchanged" compares, plus counts for the figures.
struct StoreState {
  std::uint64_t txn = 0;  ///< last committed transaction id
  std::uint64_t namespaces = 0;
  std::uint64_t entries = 0;
  std::string digest;  ///< BLAKE2b-256 hex of the canonical dump
  bool operator==(const StoreState&) const = default;
  /// "txn=12 namespaces=1 entries=76 digest=ab12..." (one line).
  std::string line() const {
    return fmt::format("txn={} namespaces={} entries={} digest={}", txn, namespaces, entries, digest);
  }
};

/// Reads `store` in one snapshot; corruption when any record fails its checks.
inline Result<StoreState> store_state(store::Store& store) {
  StoreState state;
  // The id first: a write committed between the two reads shows up as a
  // changed digest or a changed id on the next call, never as a false match.
  state.txn = KCACHE_TRY(store.last_transaction_id());
  bundle::internal::Blake2b hash;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespaces())) {
      ++state.namespaces;
      util::ByteWriter w;
      w.str("namespace");
      w.str(info.ns.name());
      w.u32(static_cast<std::uint32_t>(info.ns.record.fields.size()));
      for (const auto& [k, v] : info.ns.record.fields) {
        w.str(k);
        w.str(v);
      }
      hash.update(w.bytes());
      KCACHE_CHECK(reader.scan_facts(info.ns.name(), [&](Entry&& e, const store::EntryFacts& facts) {
        ++state.entries;
        util::ByteWriter u;
        u.str("entry");
        u.blob(encode_entry(e));
        u.u8(facts.usage ? 1 : 0);
        if (facts.usage) {
          u.u64(facts.usage->written);
          u.u64(facts.usage->last_used);
        }
        hash.update(u.bytes());
        return true;
      }));
    }
    // Scans skip a damaged record (and list it); here a damaged record is the
    // corruption the crash and concurrency tests exist to catch.
    if (!reader.damaged().empty()) return tl::unexpected(reader.damaged().front().error);
    return {};
  }));
  state.digest = hash.peek().hex();
  return state;
}

/// A valid SPIR-V compute module (an empty `main`, local size 1x1x1) of about
/// `bytes` bytes: the size comes from an OpSourceExtension string holding
/// `salt` and padding, so different salts give different payloads. It passes
/// spirv-val for vulkan1.0..1.3, so `kcache verify` accepts entries made from
/// it. Written by hand from the SPIR-V spec (ids: 1 main, 2 void, 3 fn type,
/// 4 label).
inline std::vector<std::uint8_t> spirv_module(std::size_t bytes, const std::string& salt) {
  std::string text = salt;
  if (text.size() + 80 < bytes) text.append(bytes - 80 - text.size(), '.');
  std::vector<std::uint32_t> w = {0x07230203u, 0x00010000u, 0, 5, 0};
  auto op = [&](std::uint16_t opcode, std::initializer_list<std::uint32_t> operands) {
    w.push_back(static_cast<std::uint32_t>(operands.size() + 1) << 16 | opcode);
    w.insert(w.end(), operands);
  };
  op(17, {1});                                                        // OpCapability Shader
  op(14, {0, 1});                                                     // OpMemoryModel Logical GLSL450
  op(15, {5, 1, 0x6e69616du, 0});                                     // OpEntryPoint GLCompute %1 "main"
  op(16, {1, 17, 1, 1, 1});                                           // OpExecutionMode %1 LocalSize 1 1 1
  const std::size_t text_words = text.size() / 4 + 1;                 // NUL-terminated, zero-padded
  w.push_back(static_cast<std::uint32_t>(text_words + 1) << 16 | 4);  // OpSourceExtension
  const std::size_t at = w.size();
  w.resize(at + text_words, 0);
  std::memcpy(w.data() + at, text.data(), text.size());
  op(19, {2});           // %2 = OpTypeVoid
  op(33, {3, 2});        // %3 = OpTypeFunction %2
  op(54, {2, 1, 0, 3});  // %1 = OpFunction %2 None %3
  op(248, {4});          // %4 = OpLabel
  op(253, {});           // OpReturn
  op(56, {});            // OpFunctionEnd
  std::vector<std::uint8_t> out(w.size() * 4);
  std::memcpy(out.data(), w.data(), out.size());
  return out;
}

/// Prints a figure line ("FIGURES B1: ...") and appends it to the file named
/// by $KCACHE_FIGURES (set by ctest), which scripts/test shows at the end.
inline void figure(const std::string& id, const std::string& text) {
  std::string line = fmt::format("FIGURES {}: {}\n", id, text);
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  if (const char* path = std::getenv("KCACHE_FIGURES"); path && *path) std::ofstream(path, std::ios::app) << line;
}

/// The soak multiplier: $KCACHE_SOAK as a positive integer, else 1.
inline int soak() {
  const char* s = std::getenv("KCACHE_SOAK");
  int n = s ? std::atoi(s) : 1;
  return n > 0 ? n : 1;
}

}  // namespace kcache::reliability
