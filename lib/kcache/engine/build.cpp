// What every stage's results share: receipts, outcomes, shards, the run
// record. The stages are spirv_stage.cpp, device_stage.cpp and
// cuda_stage.cpp over the engine of stage.hpp.
#include "kcache/engine/build.hpp"

#include "kcache/util/hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace kcache::engine {

void Receipt::report_remembered(const Failure& f) {
  outcome = Outcome::failed;
  remembered = true;
  key = f.key;
  failed_phase = std::string(failure_phase_name(f.phase));
  failed_at = f.created;
  error = Error{f.category, f.message};
}

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::hit: return "hit";
    case Outcome::compiled: return "compiled";
    case Outcome::stale_replaced: return "stale_replaced";
    case Outcome::failed: return "failed";
    case Outcome::refused_write: return "refused_write";
    case Outcome::remote_hit: return "remote_hit";
  }
  return "?";
}

Result<Shard> parse_shard(std::string_view text) {
  unsigned k = 0, n = 0;
  char slash = 0;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%u%c%u", &k, &slash, &n) != 3 || slash != '/' || k < 1 || n < 1 || k > n ||
      s != fmt::format("{}/{}", k, n))
    return fail(Category::invalid_argument, "--shard '{}' must be K/N with 1 ≤ K ≤ N, e.g. --shard 2/4", text);
  return Shard{k, n};
}

bool in_shard(std::string_view kernel, const Shard& shard) {
  auto h = util::hash_string(kernel);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | h.bytes[i];
  return v % shard.count == shard.index - 1;
}

std::size_t BuildResult::remembered() const {
  return static_cast<std::size_t>(
      std::count_if(receipts.begin(), receipts.end(), [](const Receipt& r) { return r.remembered; }));
}

std::size_t BuildResult::count(Outcome o) const {
  return static_cast<std::size_t>(
      std::count_if(receipts.begin(), receipts.end(), [o](const Receipt& r) { return r.outcome == o; }));
}

std::optional<Error> unstored_error(const BuildResult& result) {
  // A handful of names is enough to find them in the per-kernel report;
  // a full map refuses dozens at once.
  constexpr std::size_t k_named = 5;
  std::vector<const Receipt*> refused;
  for (const auto& r : result.receipts)
    if (r.outcome == Outcome::refused_write) refused.push_back(&r);
  if (refused.empty()) return std::nullopt;
  std::string names;
  for (std::size_t i = 0; i < refused.size() && i < k_named; ++i)
    names += fmt::format("{}{}", i ? ", " : "", refused[i]->kernel);
  if (refused.size() > k_named) names += fmt::format(" and {} more", refused.size() - k_named);
  const Error* first = nullptr;
  for (const Receipt* r : refused)
    if (r->error) {
      first = &*r->error;
      break;
    }
  std::size_t kept = result.count(Outcome::hit) + result.count(Outcome::compiled) +
                     result.count(Outcome::stale_replaced) + result.count(Outcome::remote_hit);
  return Error{first ? first->category : Category::store_full,
               fmt::format("{} of {} kernels compiled but could not be stored: {} ({}); the other {} kernels are "
                           "in the store (stored or found fresh); make room (a larger KCACHE_MAP_SIZE, free disk, "
                           "`kcache gc`) and build again",
                           refused.size(), result.receipts.size(), names,
                           first ? first->message : std::string("the store refused the write"), kept)};
}

Result<void> record_run(store::Store& store, const BuildResult& result, const util::Clock& clock,
                        const store::Invocation* invocation) {
  store::UsageBatch batch;
  batch.time = clock.now();
  for (const auto& r : result.receipts)
    if (r.outcome == Outcome::hit) batch.used.emplace_back(r.ns, r.kernel);
  store::RunRecord run;
  run.time = batch.time;
  run.command = invocation ? invocation->tool : "build";
  if (invocation) run.invocation = *invocation;
  run.kernels = static_cast<std::uint32_t>(result.receipts.size());
  run.hits = static_cast<std::uint32_t>(result.count(Outcome::hit));
  run.compiled = static_cast<std::uint32_t>(result.count(Outcome::compiled));
  run.stale_replaced = static_cast<std::uint32_t>(result.count(Outcome::stale_replaced));
  run.failed = static_cast<std::uint32_t>(result.count(Outcome::failed));
  run.refused_write = static_cast<std::uint32_t>(result.count(Outcome::refused_write));
  run.wall_us = static_cast<std::uint64_t>(result.wall_ms * 1000);
  run.bytes_written = result.bytes_written;
  for (std::size_t i = 0; i < k_phase_count; ++i) {
    const auto& t = result.totals.times[i];
    run.phases.push_back({std::string(phase_name(static_cast<Phase>(i))), static_cast<std::uint64_t>(t.wall_ms * 1000),
                          static_cast<std::uint64_t>(t.cpu_ms * 1000)});
  }
  run.remote_hit = static_cast<std::uint32_t>(result.count(Outcome::remote_hit));
  for (const auto& s : result.secondary) {
    run.remote_misses += static_cast<std::uint32_t>(s.misses);
    run.remote_refused += static_cast<std::uint32_t>(s.refused);
    run.remote_errors += static_cast<std::uint32_t>(s.errors);
    run.remote_bytes_read += s.bytes_read;
    run.remote_bytes_written += s.bytes_written;
  }
  batch.run = std::move(run);
  return store.record_usage(batch);
}

}  // namespace kcache::engine
