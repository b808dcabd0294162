// `kcache build --check-reproducible`: compiles every kernel of a manifest
// twice, once in this process and once in a child process whose heap is
// dirtied with another pattern, and compares the bytes. kcache's model is "same key,
// same bytes" (docs/design.md "Keys"); a compiler that reads memory it never
// wrote breaks it silently (docs/design.md "Deterministic compiles"), and
// this is the check that names every kernel it happens to.
//
// Nothing is read from or written to a store: the check is about the
// compiler, not about what is stored.
//
// Thread-safety: check_reproducible() uses its own threads and forks; call
// it while no other thread of the process runs (fork copies only the caller,
// and a lock another thread held would stay held in the child).
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/engine/build.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kcache::engine {

/// Leaves the calling thread's heap dirty: allocates blocks of many sizes
/// (16 B to 1 MiB, ~24 MiB in all), fills them with `pattern` and frees
/// them, so that the next allocations of those sizes reuse memory holding
/// `pattern` unless the allocator zero-fills. Pattern 0x00 mimics fresh
/// pages; 0x7F makes a double whose high half is read uninitialised a huge
/// number (+inf once narrowed to float16).
void dirty_heap(std::uint8_t pattern);

struct ReproducibleOptions {
  unsigned jobs = 0;  ///< compile threads; 0 = number of cores
  std::optional<Shard> shard;
  /// Runs on the compiling thread just before compile 0 (in this process)
  /// and compile 1 (in the child) of each kernel (the argument). Default:
  /// dirty_heap(0x00), then dirty_heap(0x7F).
  std::function<void(int compile)> before_compile;
  /// Test seam (fault injection), never set in production: may alter the
  /// words of a kernel's second compile, so that a test proves the
  /// comparison reports a difference. Called on the compiling thread.
  std::function<void(const definition::KernelSpec&, std::vector<std::uint32_t>& second)> tamper_second;
  /// Called on the calling thread as each kernel's two modules are compared.
  std::function<void(std::size_t done, std::size_t total)> on_progress;
  /// The compilers as keys see them; never null.
  const compile::Toolchain* toolchain = &compile::Toolchain::installed();
};

/// One kernel's verdict. Persisted by name in --json ("reproducible",
/// "differs", "failed"); names are append-only.
enum class Reproducibility { reproducible, differs, failed };
std::string_view reproducibility_name(Reproducibility r);

struct ReproducibleKernel {
  std::string kernel;
  std::string ns;  ///< the namespace it would be stored in
  Key key;         ///< its key (id and ir), as a build would store it
  Reproducibility state = Reproducibility::reproducible;
  std::size_t bytes[2] = {0, 0};  ///< module size of each compile
  Hash128 digest[2];              ///< content hash (XXH3-128) of each module
  /// Byte offset of the first difference (differs only; the shorter size
  /// when one module is a prefix of the other).
  std::size_t first_difference = 0;
  std::optional<Error> error;  ///< failed: why (expansion, compile, or only one of the two compiles failed)
};

struct ReproducibleResult {
  std::vector<ReproducibleKernel> kernels;  ///< in manifest order
  double wall_ms = 0;
  std::size_t count(Reproducibility r) const;
  bool all_reproducible() const { return count(Reproducibility::reproducible) == kernels.size(); }
};

/// Expands each kernel of `manifest` (or of its shard) once and compiles it
/// twice: here, then in a child process forked after the first compiles
/// (io_error if it cannot start or dies). A kernel whose two compiles fail the same way is `failed`, not
/// `differs`; one whose compiles disagree on failing is `differs`.
Result<ReproducibleResult> check_reproducible(const manifest::Manifest& manifest, const ReproducibleOptions& options);

}  // namespace kcache::engine
