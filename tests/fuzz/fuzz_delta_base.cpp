// libFuzzer entry point for a delta bundle's base check (docs/reliability.md
// F1; issue 40): what a store must hold for a delta to apply, and what the
// delta may remove from it (transfer::plan_delta).
//
// Structure-aware: the input describes a store's entries and a delta of
// format 5 or 6 over a small alphabet of kernel names and keys, so that
// kept, removed and held kernels collide often. The delta is written by the
// bundle writer and read back by the reader (the version-6 fields round
// trip), then planned under each authority (none, --replace, a trusted
// signature, both). Any outcome is fine except a crash, a sanitizer report,
// or a plan that breaks the rules: nothing removed without authority, no
// removal of a kernel the delta does not name or the store does not hold,
// of an entry whose key is not BASE's (format 6) or that was built after
// the delta (format 5), a plan over a store lacking a kept kernel, or a
// refusal that is not printable text.
#include "kcache/bundle/bundle.hpp"
#include "kcache/transfer/transfer.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace kcache;

Key key_of(unsigned n) {
  Key k;
  k.id.bytes.fill(static_cast<std::uint8_t>(0x10 + n));
  k.ir.bytes.fill(static_cast<std::uint8_t>(0x80 + n));
  return k;
}

std::string name_of(unsigned n) { return "k" + std::to_string(n % 24) + (n % 5 == 0 ? "[T=float]" : ""); }

/// Aborts unless `plan` keeps every rule for `header` over `held`.
void check_plan(const bundle::BundleHeader& header, const transfer::HeldEntries& held,
                const transfer::DeltaAuthority& authority, const Result<transfer::DeltaPlan>& plan) {
  const auto& d = *header.delta;
  if (!plan) {
    const auto& e = plan.error();
    if (e.message.empty() || !util::is_printable_utf8(e.message)) std::abort();
    if (e.category != Category::not_found && e.category != Category::fingerprint_mismatch &&
        e.category != Category::validation_failed)
      std::abort();
    return;
  }
  for (const auto& k : d.kept)
    if (!held.contains(k)) std::abort();  // applied to a store without BASE's kept entries
  const bool keyed = header.format_version >= 6;
  if (!plan->remove.empty() && !authority.replace && !(keyed && authority.trusted)) std::abort();
  std::set<std::string> seen;
  for (const auto* list : {&plan->remove, &plan->not_removed})
    for (const auto& k : *list)
      if (!seen.insert(k).second) std::abort();  // a kernel both removed and kept, or twice
  for (const auto& k : plan->remove) {
    std::size_t i = 0;
    while (i < d.removed.size() && d.removed[i] != k) ++i;
    if (i == d.removed.size()) std::abort();  // not a kernel the delta removes
    auto it = held.find(k);
    if (it == held.end()) std::abort();
    if (keyed ? it->second.key != d.removed_keys[i] : it->second.created > header.created) std::abort();
  }
  for (const auto& k : d.removed)
    if (held.contains(k) && !seen.contains(k)) std::abort();  // a held kernel neither removed nor kept
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint8_t flags = data[0];
  const std::uint16_t version = flags & 1 ? 6 : 5;
  const std::uint64_t created = 1'000 + data[1] * 10;
  transfer::HeldEntries held;
  std::vector<std::pair<std::string, Key>> kept, removed;
  std::set<std::string> named;
  // Each 3 bytes: what happens to one kernel name, which key the delta
  // claims for it, which key (and build time) the store holds it under.
  for (std::size_t at = 2; at + 3 <= size && at < 2 + 3 * 64; at += 3) {
    const std::uint8_t op = data[at], n = data[at + 1], keys = data[at + 2];
    const std::string name = name_of(n);
    const Key claimed = key_of(keys & 3), stored = key_of((keys >> 2) & 3);
    if (op & 4) held.insert_or_assign(name, transfer::HeldEntry{stored, 1'000 + (keys >> 4) * 200u});
    if (!named.insert(name).second) continue;
    if ((op & 3) == 1) kept.emplace_back(name, claimed);
    else if ((op & 3) == 2) removed.emplace_back(name, claimed);
  }
  bundle::BundleHeader h;
  h.ns = spirv_namespace("vulkan1.2");
  h.tool_versions = {{"kcache", "fuzz"}};
  h.created = created;
  bundle::DeltaBase d;
  d.base_digest.bytes.fill(0xcd);
  d.base_entries = static_cast<std::uint32_t>(kept.size() + removed.size() + (flags >> 6));
  for (const auto& [k, key] : kept) {
    d.kept.push_back(k);
    d.kept_tags.push_back(bundle::kept_entry_tag(k, key) ^ ((flags & 8) ? 1u : 0u));
  }
  d.kept_digest = bundle::kept_entries_digest(kept);
  if (flags & 16) d.kept_digest.bytes[0] ^= 1;
  for (const auto& [k, key] : removed) d.removed.push_back(k), d.removed_keys.push_back(key);
  d.base_name = flags & 32 ? "base.kcb" : "";
  h.delta = d;

  // Through the writer and the reader: what an importer sees is what was written.
  std::ostringstream out(std::ios::binary);
  bundle::WriteOptions options;
  options.delta_format_version = version;
  if (!bundle::write_bundle(out, h, bundle::entries_from({}), options)) std::abort();
  const std::string bytes = out.str();
  auto reader =
      bundle::BundleReader::open(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  if (!reader || !reader->header().delta) std::abort();
  const bundle::BundleHeader& read = reader->header();
  if (read.format_version != version || read.delta->kept != d.kept || read.delta->removed != d.removed ||
      read.delta->kept_digest != d.kept_digest)
    std::abort();
  if (version >= 6 && !(*read.delta == d)) std::abort();

  for (bool replace : {false, true})
    for (bool trusted : {false, true}) {
      const transfer::DeltaAuthority authority{replace, trusted};
      check_plan(read, held, authority, transfer::plan_delta(read, held, authority, "fuzz delta"));
    }
  return 0;
}
