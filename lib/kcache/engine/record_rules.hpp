// The read side of the cache rule: what a stored record (an entry or a
// remembered failure) is worth here, answered by the stage that writes its
// namespace backend. `inspect`, `gc` and eviction (maintain) ask through
// record_rules(); they hold no backend names, so a stage's rule for reading
// its records lives beside its rule for writing them.
//
// Thread-safety: the rules are stateless; each call is reentrant.
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/definition/definition.hpp"
#include "kcache/engine/freshness.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::engine {

class RecordRules {
 public:
  virtual ~RecordRules() = default;

  /// The namespace backend whose records these rules read ("spirv", ...).
  virtual std::string_view backend() const = 0;

  /// Why every record of `ns` can never hit again whatever it holds (a
  /// namespace whose id no lookup reaches any more), or nullopt.
  virtual std::optional<Change> stale_namespace(const Namespace& ns) const;

  /// The toolchain fields of `stored` that differ from this kcache's:
  /// non-empty means it can never hit again here, whatever the manifest
  /// says. Empty where the stage cannot tell without loading its compiler
  /// (CUDA: NVRTC is loaded only to compile) or records no toolchain (a
  /// pipeline recipe).
  virtual std::vector<Change> toolchain_changes(const Recorded& stored, const compile::Toolchain& toolchain) const;

  /// The namespaces the stage stores `spec` in; empty when the manifest
  /// does not say (a device namespace: the manifest names no device).
  virtual std::vector<std::string> namespaces_of(const definition::KernelSpec& spec) const = 0;

  /// Whether a record of `spec` in `ns` (one of namespaces_of(spec)) would
  /// serve a build now: the stage's warm-path rule over the recorded
  /// fields and inputs (freshness.hpp).
  virtual Assessment assess(const definition::KernelSpec& spec, const Namespace& ns, const Recorded& stored,
                            definition::FileCache& files, const compile::Toolchain& toolchain) const = 0;
};

/// The rules of the stage that writes namespaces of `backend`; null for a
/// backend no stage writes (a namespace from a newer kcache).
const RecordRules* record_rules(std::string_view backend);

/// Every stage's rules, in stage order (spirv, vulkan, cuda).
std::span<const RecordRules* const> all_record_rules();

}  // namespace kcache::engine
