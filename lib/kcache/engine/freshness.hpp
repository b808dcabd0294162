// The build engine's freshness: the direct rule (freshness/freshness.hpp,
// which the launcher's hit path shares without linking a compiler) under the
// engine module's names, and assess(), which expands a kernel when only its
// inputs changed.
//
// Thread-safety: functions are reentrant; FileCache is thread-safe.
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/freshness/freshness.hpp"

namespace kcache::engine {

using freshness::Assessment;
using freshness::Change;
using freshness::check_direct;
using freshness::describe_changes;
using freshness::direct_key;
using freshness::Freshness;
using freshness::freshness_name;
using freshness::input_changes;
using freshness::inputs_believed;
using freshness::k_absent;
using freshness::k_missing;
using freshness::recorded;
using freshness::Recorded;
using freshness::toolchain_part;

}  // namespace kcache::engine

namespace kcache::engine {

/// As check_direct, then, when only inputs changed, expands the kernel to
/// tell a real change from one the preprocessor erases (comments, unused
/// macros): fresh if the expanded definition hashes the same. Expansion
/// errors make the entry stale with an "expand" change naming the error.
Assessment assess(const definition::KernelSpec& spec, const Recorded& stored, definition::FileCache& files,
                  const compile::Toolchain& toolchain);
inline Assessment assess(const definition::KernelSpec& spec, const Entry& stored, definition::FileCache& files,
                         const compile::Toolchain& toolchain) {
  return assess(spec, recorded(stored), files, toolchain);
}
inline Assessment assess(const definition::KernelSpec& spec, const Failure& stored, definition::FileCache& files,
                         const compile::Toolchain& toolchain) {
  return assess(spec, recorded(stored), files, toolchain);
}

}  // namespace kcache::engine
