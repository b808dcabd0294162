// Usage and run records (formats in layout_internal.hpp), shared by the LMDB
// and memory stores so both keep exactly the same bytes.
#include "kcache/store/layout_internal.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/hash.hpp"

#include <cstring>

namespace kcache::store::internal {
namespace {

constexpr std::uint8_t k_run_magic[4] = {'K', 'C', 'R', 1};
// Caps while decoding a run record: far above any real run.
constexpr std::uint32_t k_max_phases = 256;
constexpr std::size_t k_max_run_string = 4096;
constexpr std::size_t k_max_invocation_args = 4096;

tl::unexpected<Error> corrupt_run(std::uint64_t n, std::string_view what) {
  return fail(Category::corruption, "run log record {} is corrupt: {}", n, what);
}

}  // namespace

bool readable_schema(std::string_view version) {
  return version == "1" || version == "2" || version == k_schema_version;
}

std::vector<std::uint8_t> encode_usage(const EntryUsage& usage) {
  util::ByteWriter w;
  w.u64(usage.written);
  w.u64(usage.last_used);
  return w.take();
}

Result<EntryUsage> decode_usage(std::string_view key, std::span<const std::uint8_t> bytes) {
  if (bytes.size() < k_usage_record_bytes) {
    std::string shown(key);
    if (auto sep = shown.find(k_key_separator); sep != std::string::npos) shown[sep] = ':';
    return fail(Category::corruption, "usage record of '{}' is corrupt: {} bytes, expected at least {}", shown,
                bytes.size(), k_usage_record_bytes);
  }
  util::ByteReader r(bytes);
  EntryUsage usage;
  usage.written = *r.u64();
  usage.last_used = *r.u64();
  return usage;
}

std::optional<EntryUsage> touch_usage(const std::optional<EntryUsage>& stored, std::uint64_t used_at) {
  if (!stored) return EntryUsage{0, used_at};
  if (used_at < stored->last_used + k_last_used_resolution) return std::nullopt;
  return EntryUsage{stored->written, used_at};
}

std::string run_key(std::uint64_t n) {
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i) key[static_cast<std::size_t>(i)] = static_cast<char>(n >> (8 * (7 - i)));
  return key;
}

std::optional<std::uint64_t> run_number(std::string_view key) {
  if (key.size() != 8) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : key) n = n << 8 | static_cast<std::uint8_t>(c);
  return n;
}

std::vector<std::uint8_t> encode_run(const RunRecord& run) {
  util::ByteWriter w;
  w.raw(k_run_magic);
  const std::uint16_t version = run.evicted || run.evicted_bytes ? 4 : run.invocation ? 3 : 2;
  w.u16(version);
  w.u64(run.time);
  w.str(run.command);
  for (std::uint32_t v : {run.kernels, run.hits, run.compiled, run.stale_replaced, run.failed, run.refused_write})
    w.u32(v);
  w.u64(run.wall_us);
  w.u64(run.bytes_written);
  w.u32(static_cast<std::uint32_t>(run.phases.size()));
  for (const auto& p : run.phases) {
    w.str(p.name);
    w.u64(p.wall_us);
    w.u64(p.cpu_us);
  }
  for (std::uint32_t v : {run.remote_hit, run.remote_misses, run.remote_refused, run.remote_errors}) w.u32(v);
  w.u64(run.remote_bytes_read);
  w.u64(run.remote_bytes_written);
  if (version >= 3 && !run.invocation) w.u8(0);
  if (const auto& inv = run.invocation) {
    std::size_t bytes = inv->tool.size() + inv->directory.size() + inv->not_cacheable.size();
    for (const auto& a : inv->args) bytes += a.size();
    const bool keep_args = bytes <= k_max_invocation_bytes && inv->args.size() <= k_max_invocation_args;
    w.u8(1);
    w.str(inv->tool.substr(0, k_max_run_string));
    w.str(inv->directory.substr(0, k_max_run_string));
    w.u32(keep_args ? static_cast<std::uint32_t>(inv->args.size()) : 0);
    if (keep_args)
      for (const auto& a : inv->args) w.str(a);
    w.str(inv->not_cacheable.substr(0, k_max_run_string));
  }
  if (version >= 4) {
    w.u32(run.evicted);
    w.u64(run.evicted_bytes);
  }
  w.raw(util::hash_bytes(w.bytes()).bytes);
  return w.take();
}

Result<RunRecord> decode_run(std::uint64_t n, std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 4 + 2 + 16) return corrupt_run(n, "shorter than its fixed fields");
  if (std::memcmp(bytes.data(), k_run_magic, 4) != 0) return corrupt_run(n, "bad magic");
  auto body = bytes.first(bytes.size() - 16);
  util::ByteReader r(body);
  r.raw(4);
  auto version = r.u16();
  if (*version < k_run_min_version || *version > k_run_max_version)
    return fail(Category::version_mismatch, "run log record {} has version {}, outside the supported range {}..{}", n,
                *version, k_run_min_version, k_run_max_version);
  Hash128 stored;
  std::memcpy(stored.bytes.data(), bytes.data() + body.size(), 16);
  if (util::hash_bytes(body) != stored) return corrupt_run(n, "record digest mismatch");

  RunRecord run;
  auto time = r.u64();
  auto command = r.str(k_max_run_string);
  std::uint32_t* counts[] = {&run.kernels,        &run.hits,   &run.compiled,
                             &run.stale_replaced, &run.failed, &run.refused_write};
  for (auto* c : counts) *c = r.u32().value_or(0);
  auto wall = r.u64();
  auto written = r.u64();
  auto n_phases = r.u32();
  if (!time || !command || !wall || !written || !n_phases) return corrupt_run(n, "truncated");
  if (*n_phases > k_max_phases) return corrupt_run(n, "too many phases");
  run.time = *time;
  run.command = std::move(*command);
  run.wall_us = *wall;
  run.bytes_written = *written;
  for (std::uint32_t i = 0; i < *n_phases; ++i) {
    auto name = r.str(k_max_run_string);
    auto pw = r.u64();
    auto pc = r.u64();
    if (!name || !pw || !pc) return corrupt_run(n, "truncated phase list");
    run.phases.push_back({std::move(*name), *pw, *pc});
  }
  if (*version >= 2) {
    auto a = r.u32(), b = r.u32(), c = r.u32(), d = r.u32();
    auto rd = r.u64(), wr = r.u64();
    if (!a || !b || !c || !d || !rd || !wr) return corrupt_run(n, "truncated remote counts");
    run.remote_hit = *a, run.remote_misses = *b, run.remote_refused = *c, run.remote_errors = *d;
    run.remote_bytes_read = *rd, run.remote_bytes_written = *wr;
  }
  if (*version >= 3) {
    auto has = r.u8();
    if (!has || *has > 1) return corrupt_run(n, "bad invocation flag");
    if (*has == 1) {
      Invocation inv;
      auto tool = r.str(k_max_run_string);
      auto directory = r.str(k_max_run_string);
      auto n_args = r.u32();
      if (!tool || !directory || !n_args) return corrupt_run(n, "truncated invocation");
      if (*n_args > k_max_invocation_args) return corrupt_run(n, "too many invocation args");
      std::size_t bytes = tool->size() + directory->size();
      for (std::uint32_t i = 0; i < *n_args; ++i) {
        auto arg = r.str(k_max_invocation_bytes);
        if (!arg) return corrupt_run(n, "truncated invocation args");
        bytes += arg->size();
        if (bytes > k_max_invocation_bytes) return corrupt_run(n, "invocation longer than its bound");
        inv.args.push_back(std::move(*arg));
      }
      auto why = r.str(k_max_run_string);
      if (!why) return corrupt_run(n, "truncated invocation");
      inv.tool = std::move(*tool);
      inv.directory = std::move(*directory);
      inv.not_cacheable = std::move(*why);
      run.invocation = std::move(inv);
    }
  }
  if (*version >= 4) {
    auto evicted = r.u32();
    auto bytes = r.u64();
    if (!evicted || !bytes) return corrupt_run(n, "truncated eviction counts");
    run.evicted = *evicted;
    run.evicted_bytes = *bytes;
  }
  if (r.remaining() != 0) return corrupt_run(n, "trailing bytes");
  return run;
}

}  // namespace kcache::store::internal
