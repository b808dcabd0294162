#include "kcache/engine/reproducible.hpp"

#include "kcache/util/hash.hpp"

#include <fmt/format.h>

#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/worker_pool.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace kcache::engine {
namespace {

using definition::KernelSpec;

std::span<const std::uint8_t> bytes_of(const std::vector<std::uint32_t>& words) {
  return {reinterpret_cast<const std::uint8_t*>(words.data()), words.size() * 4};
}

/// One kernel's expansion, shared by both compiles.
struct Expanded {
  std::optional<Result<definition::Definition>> def;
};

/// The second compile's outcome as the child process reports it.
using CompileOutcome = Result<std::vector<std::uint32_t>>;

CompileOutcome compile_words(const KernelSpec& spec, const definition::Definition& def) {
  PhaseTimes times;
  auto compiled = compile::compile(spec, def, times);
  if (!compiled) return tl::unexpected(compiled.error());
  return std::move(compiled->spirv);
}

/// Appends one outcome to the child's report: u8 ok, then the words or the
/// error (u8 category, str message).
void put_outcome(util::ByteWriter& w, const CompileOutcome& o) {
  w.u8(o ? 1 : 0);
  if (o) {
    w.blob(bytes_of(*o));
  } else {
    w.u8(static_cast<std::uint8_t>(o.error().category));
    w.str(o.error().message);
  }
}

Result<CompileOutcome> get_outcome(util::ByteReader& r) {
  auto ok = r.u8();
  if (!ok) return fail(Category::io_error, "the second compile's process sent a truncated report");
  if (*ok) {
    auto bytes = r.blob(std::size_t{1} << 32);
    if (!bytes || bytes->size() % 4) return fail(Category::io_error, "the second compile's process sent a bad module");
    std::vector<std::uint32_t> words(bytes->size() / 4);
    std::memcpy(words.data(), bytes->data(), bytes->size());
    return CompileOutcome(std::move(words));
  }
  auto category = r.u8();
  auto message = r.str();
  if (!category || !message) return fail(Category::io_error, "the second compile's process sent a truncated report");
  return CompileOutcome(tl::unexpected(Error{static_cast<Category>(*category), std::move(*message)}));
}

/// The second compiles, in a child process forked from this one: its heap
/// starts as a copy of ours and is then dirtied with another pattern, so
/// nothing a compile could read uninitialised is what the first compile
/// saw. Called with no other thread running (fork copies only the caller).
/// The child writes one report to a pipe and leaves with _exit (no
/// destructors, no flush of the parent's buffers).
Result<std::vector<std::optional<CompileOutcome>>> compile_in_child(const std::vector<const KernelSpec*>& specs,
                                                                    const std::vector<Expanded>& expanded,
                                                                    const ReproducibleOptions& options,
                                                                    unsigned threads) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return util::os_error("pipe", "create", errno);
  util::UniqueFd read_end(fds[0]), write_end(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return util::os_error("a second compile process", "start", errno);
  if (pid == 0) {
    read_end.reset();
    std::vector<std::optional<CompileOutcome>> outcomes(specs.size());
    util::parallel_for(specs.size(), threads, [&](std::size_t i) {
      if (!expanded[i].def || !*expanded[i].def) return;
      if (options.before_compile) options.before_compile(1);
      else dirty_heap(0x7F);
      outcomes[i] = compile_words(*specs[i], **expanded[i].def);
      if (*outcomes[i] && options.tamper_second) options.tamper_second(*specs[i], **outcomes[i]);
    });
    util::ByteWriter w;
    for (const auto& o : outcomes) {
      w.u8(o ? 1 : 0);
      if (o) put_outcome(w, *o);
    }
    auto report = w.take();
    ::_exit(util::write_all(write_end.get(), report) ? 0 : 1);
  }
  write_end.reset();
  std::string report;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(read_end.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    report.append(buffer, static_cast<std::size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail(Category::io_error, "the second compile's process {}",
                WIFSIGNALED(status) ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                    : fmt::format("exited with status {}", WEXITSTATUS(status)));
  util::ByteReader r(util::as_bytes(report));
  std::vector<std::optional<CompileOutcome>> outcomes(specs.size());
  for (auto& o : outcomes) {
    auto present = r.u8();
    if (!present) return fail(Category::io_error, "the second compile's process sent a truncated report");
    if (*present) o = KCACHE_TRY(get_outcome(r));
  }
  return outcomes;
}

/// Compares the two outcomes of one kernel into `out`.
void compare(const CompileOutcome& a, const CompileOutcome& b, ReproducibleKernel& out) {
  if (!a || !b) {
    bool same_failure = !a && !b && a.error().category == b.error().category && a.error().message == b.error().message;
    out.state = same_failure ? Reproducibility::failed : Reproducibility::differs;
    out.error = !a ? a.error() : b.error();
    if (!same_failure)
      out.error->message =
          fmt::format("compile {} failed, compile {} did not: {}", !a ? 1 : 2, !a ? 2 : 1, out.error->message);
    return;
  }
  auto x = bytes_of(*a), y = bytes_of(*b);
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
  const unsigned threads = util::worker_threads(options.jobs);
  definition::FileCache files(manifest.root);
  // Expansion and the first compiles here; the second compiles in a child
  // process forked once these threads have ended.
  std::vector<Expanded> expanded(specs.size());
  std::vector<std::optional<CompileOutcome>> first(specs.size());
  util::parallel_for(specs.size(), threads, [&](std::size_t i) {
    const KernelSpec& spec = *specs[i];
    ReproducibleKernel& out = result.kernels[i];
    out.kernel = spec.name;
    out.ns = spirv_namespace(spec.target).name();
    PhaseTimes times;
    expanded[i].def = compile::expand(spec, files, times);
    const auto& def = *expanded[i].def;
    if (!def) return;
    out.key = {definition::compute_id(spec).hash,
               definition::compute_ir(*def, options.toolchain->fields(spec.optimize)).hash};
    if (options.before_compile) options.before_compile(0);
    else dirty_heap(0x00);
    first[i] = compile_words(spec, *def);
  });
  auto second = KCACHE_TRY(compile_in_child(specs, expanded, options, threads));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    ReproducibleKernel& out = result.kernels[i];
    if (!*expanded[i].def) {
      out.state = Reproducibility::failed;
      out.error = expanded[i].def->error();
    } else if (!second[i]) {
      return fail(Category::io_error, "the second compile's process did not compile {}", out.kernel);
    } else {
      compare(*first[i], *second[i], out);
    }
    if (options.on_progress) options.on_progress(i + 1, specs.size());
  }
  total.lap(wall);
  result.wall_ms = wall.wall_ms;
  return result;
}

}  // namespace kcache::engine
