// The one rule for what a stored entry is worth against a manifest: fresh,
// stale, orphan, or unknown. `kcache inspect` shows it; `kcache gc` removes
// by it. Keeping it in one place keeps the two from disagreeing.
//
// Thread-safety: an EntryClassifier is used by one thread.
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/core/entry.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/engine/freshness.hpp"
#include "kcache/manifest/manifest.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::maintain {

enum class EntryState {
  /// No manifest was given and nothing says stale; or a device (vulkan)
  /// entry of a manifest kernel: the manifest does not say which device.
  unknown,
  fresh,   ///< a build of the manifest would hit it
  stale,   ///< it can never hit again: an input, option or the toolchain changed
  orphan,  ///< the manifest has no such kernel, or builds it for another target
};
/// "-", "fresh", "stale", "orphan" (inspect's table and JSON).
std::string_view entry_state_name(EntryState s);

struct Classification {
  EntryState state = EntryState::unknown;
  /// For stale: why (stored → current), essential changes only.
  std::vector<engine::Change> changes;
  /// Built by another toolchain (key schema, glslang, SPIRV-Tools, optimiser
  /// recipe), or stored in a vulkan namespace of fingerprint schema 1 (its id
  /// named one card, so no lookup reaches it): can never hit again whatever
  /// the manifest says. Set for any state, so an orphan can be stale too.
  bool toolchain_stale = false;
};

/// Classifies entries against an optional manifest.
/// Each question is the stage's that writes the record's namespace
/// (engine::record_rules); this class holds no backend names.
///   - A record of a namespace its stage calls stale (stale_namespace: a
///     vulkan namespace of fingerprint schema 1) is stale, always.
///   - Without a manifest: stale when built by another toolchain (as far as
///     the stage can tell without loading its compiler), else unknown.
///   - With one: orphan when the manifest has no kernel of that name, or the
///     record is in a namespace the stage no longer puts it in (another
///     target, an arch it no longer lists); a record of a namespace the
///     manifest does not place kernels in (a device's) is unknown; the rest
///     are fresh or stale by the stage's warm-path rule (assess).
class EntryClassifier {
 public:
  /// `manifest` may be null; both it and `toolchain` must outlive this.
  EntryClassifier(const manifest::Manifest* manifest, const compile::Toolchain& toolchain);

  Classification classify(const Namespace& ns, const Entry& entry);
  /// The same rule for a failure record: fresh = still current (a build
  /// would report it without compiling), stale = the next build compiles
  /// the kernel again anyway.
  Classification classify(const Namespace& ns, const Failure& failure);
  /// The manifest kernel stored as (spirv namespace, kernel), or null.
  const definition::KernelSpec* wanted(const std::string& ns, const std::string& kernel) const;
  /// Every (spirv namespace, kernel) the manifest builds.
  const std::map<std::pair<std::string, std::string>, const definition::KernelSpec*>& wanted() const {
    return m_wanted;
  }

 private:
  /// classify's rule over what entries and failure records both record,
  /// by the rules of the stage that writes `ns` (build/record_rules.hpp).
  Classification classify_recorded(const Namespace& ns, const std::string& kernel, const engine::Recorded& stored);

  const manifest::Manifest* m_manifest;
  const compile::Toolchain& m_toolchain;
  std::map<std::pair<std::string, std::string>, const definition::KernelSpec*> m_wanted;
  std::map<std::string, const definition::KernelSpec*, std::less<>> m_by_name;
  std::optional<definition::FileCache> m_files;
};

}  // namespace kcache::maintain
