#include "kcache/build/reproducible.hpp"

#include "kcache/util/hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace kcache::build {
namespace {

using definition::KernelSpec;

std::span<const std::uint8_t> bytes_of(const std::vector<std::uint32_t>& words) {
  return {reinterpret_cast<const std::uint8_t*>(words.data()), words.size() * 4};
}

void check_one(const KernelSpec& spec, definition::FileCache& files, const ReproducibleOptions& options,
               ReproducibleKernel& out) {
  PhaseTimes times;
  auto def = compile::expand(spec, files, times);
  if (!def) {
    out.state = Reproducibility::failed;
    out.error = def.error();
    return;
  }
  out.key = {definition::compute_id(spec).hash,
             definition::compute_ir(*def, options.toolchain->fields(spec.optimize)).hash};
  std::optional<Result<compile::Compiled>> compiled[2];
  for (int i = 0; i < 2; ++i) {
    if (options.before_compile) options.before_compile(i);
    else dirty_heap(i == 0 ? 0x00 : 0x7F);
    compiled[i] = compile::compile(spec, *def, times);
  }
  const auto& a = *compiled[0];
  auto& b = *compiled[1];
  if (b && options.tamper_second) options.tamper_second(spec, b->spirv);
  if (!a || !b) {
    bool same_failure = !a && !b && a.error().category == b.error().category && a.error().message == b.error().message;
    out.state = same_failure ? Reproducibility::failed : Reproducibility::differs;
    out.error = !a ? a.error() : b.error();
    if (!same_failure)
      out.error->message =
          fmt::format("compile {} failed, compile {} did not: {}", !a ? 1 : 2, !a ? 2 : 1, out.error->message);
    return;
  }
  auto x = bytes_of(a->spirv), y = bytes_of(b->spirv);
  out.bytes[0] = x.size();
  out.bytes[1] = y.size();
  out.digest[0] = util::hash_bytes(x);
  out.digest[1] = util::hash_bytes(y);
  if (x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin())) return;
  out.state = Reproducibility::differs;
  auto [ix, iy] = std::mismatch(x.begin(), x.end(), y.begin(), y.end());
  out.first_difference = static_cast<std::size_t>(ix - x.begin());
}

}  // namespace

void dirty_heap(std::uint8_t pattern) {
  // Many blocks per size so that whole allocator pages of each size class
  // are refilled, not one block that the next allocation may not pick.
  std::vector<std::unique_ptr<std::uint8_t[]>> blocks;
  for (std::size_t size = 16; size <= (std::size_t{1} << 20); size += size / 2) {
    std::size_t count = std::max<std::size_t>(2, (std::size_t{1} << 20) / size);
    for (std::size_t i = 0; i < count; ++i) {
      blocks.emplace_back(new std::uint8_t[size]);
      std::memset(blocks.back().get(), pattern, size);
    }
  }
}

std::string_view reproducibility_name(Reproducibility r) {
  switch (r) {
    case Reproducibility::reproducible: return "reproducible";
    case Reproducibility::differs: return "differs";
    case Reproducibility::failed: return "failed";
  }
  return "?";
}

std::size_t ReproducibleResult::count(Reproducibility r) const {
  return static_cast<std::size_t>(
      std::count_if(kernels.begin(), kernels.end(), [r](const ReproducibleKernel& k) { return k.state == r; }));
}

Result<ReproducibleResult> check_reproducible(const manifest::Manifest& manifest, const ReproducibleOptions& options) {
  Stopwatch total;
  PhaseTime wall;
  std::vector<const KernelSpec*> specs;
  for (const auto& k : manifest.kernels)
    if (!options.shard || in_shard(k.name, *options.shard)) specs.push_back(&k);
  ReproducibleResult result;
  result.kernels.resize(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    result.kernels[i].kernel = specs[i]->name;
    result.kernels[i].ns = spirv_namespace(specs[i]->target).name();
  }
  definition::FileCache files(manifest.root);
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::condition_variable finished;
  std::size_t done = 0;
  unsigned wanted = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  unsigned thread_count = static_cast<unsigned>(std::min<std::size_t>(wanted, specs.size()));
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 0; t < thread_count; ++t)
      workers.emplace_back([&] {
        for (std::size_t j; (j = next.fetch_add(1)) < specs.size();) {
          check_one(*specs[j], files, options, result.kernels[j]);
          std::lock_guard lock(mutex);
          ++done;
          finished.notify_one();
        }
      });
    for (std::size_t reported = 0; reported < specs.size();) {
      std::unique_lock lock(mutex);
      finished.wait(lock, [&] { return done > reported; });
      reported = done;
      lock.unlock();
      if (options.on_progress) options.on_progress(reported, specs.size());
    }
  }
  total.lap(wall);
  result.wall_ms = wall.wall_ms;
  return result;
}

}  // namespace kcache::build
