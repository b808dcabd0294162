// Is a stored record still right for a kernel, by what it recorded, and if
// not, why? The direct rule (ccache's direct mode): id and toolchain fields
// compared, every recorded input re-hashed, nothing preprocessed. Shared by
// the build engine's warm path, the launcher's hit path (which loads no
// compiler, so this module links none), inspect (stale marks, --why) and the
// remotes' direct values (direct_key).
//
// Thread-safety: functions are reentrant; FileCache is thread-safe.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/core/failure.hpp"
#include "kcache/definition/definition.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::freshness {

enum class Freshness { fresh, stale, missing };
std::string_view freshness_name(Freshness f);

/// One reason an entry is stale: a field with its stored and current value.
/// Field names: id fields ("define:T", "entry", "target", ...), toolchain
/// fields ("glslang", "spirv-tools", "optimizer", "key_schema") and
/// "input:<path>" for a source or include whose content hash changed, or an
/// include candidate that was absent (old value k_absent) and now exists.
using Change = definition::FieldChange;

struct Assessment {
  Freshness state = Freshness::missing;
  std::vector<Change> changes;
  /// True when the verdict needed no preprocessing (ccache's direct mode).
  bool direct = true;
};

/// What a stored record says a kernel was made from: its key, the fields
/// behind it and the files it read. Entries and failure records
/// (core/failure.hpp) both carry these, so one rule decides whether either is
/// still current. Borrows from the record it views.
struct Recorded {
  const Key& key;
  bool ir_known;  ///< false: key.ir was never computed (cannot match an expansion)
  const std::vector<Field>& id_fields;
  const std::vector<Field>& ir_fields;
  const std::vector<InputFile>& inputs;
};
Recorded recorded(const Entry& entry);
Recorded recorded(const EntryHead& head);
Recorded recorded(const Failure& failure);

/// Whether a record's recorded inputs may decide its freshness without an
/// expansion here (docs/design.md "The key binds everything"): a record
/// built here or confirmed by a build here; an imported record's inputs are
/// its own claim until an expansion here gives its key.
inline bool inputs_believed(OriginKind origin) { return origin != OriginKind::imported; }

/// Compares what `stored` recorded with the current kernel without
/// preprocessing: id fields, toolchain fields and every recorded input's
/// content hash. fresh means a hit (for a failure record: the failure is
/// still current); stale means "expand to be sure" (an input changed) or
/// definitely stale (an option or the toolchain changed).
Assessment check_direct(const definition::HashedFields& id, const std::vector<Field>& toolchain, const Recorded& stored,
                        definition::FileCache& files);
inline Assessment check_direct(const definition::HashedFields& id, const std::vector<Field>& toolchain,
                               const Entry& stored, definition::FileCache& files) {
  return check_direct(id, toolchain, recorded(stored), files);
}

/// Where remotes file a record for direct mode (SecondaryTier::
/// fetch_direct): a hash of a domain string, the kernel's id hash, the key
/// schema and `toolchain` (its toolchain fields, key schema excluded) —
/// everything check_direct compares but the inputs, which the record
/// carries and the reader checks against its own files. Computed before any
/// preprocessing, so a runner with an empty store asks for it first.
Hash128 direct_key(const definition::HashedFields& id, const std::vector<Field>& toolchain);

/// The ir fields without the expanded-source hash: what check_direct
/// compares against the current toolchain.
std::vector<Field> toolchain_part(const std::vector<Field>& ir_fields);

/// The value a Change shows for an input recorded absent (an include
/// candidate probed in vain) and for a recorded file that is gone.
inline constexpr std::string_view k_absent = "<absent>";
inline constexpr std::string_view k_missing = "<missing>";

/// How the recorded `inputs` differ from the project now: a file whose
/// content hash changed or that is gone, and an absent include candidate
/// (InputFile::absent) that now holds a file. The one input rule of the
/// warm path, inspect and --why.
std::vector<Change> input_changes(const std::vector<InputFile>& inputs, definition::FileCache& files);

/// One-line summary of changes: "define:T float → int; input:include/a.glsl changed".
std::string describe_changes(const std::vector<Change>& changes, std::size_t max = 3);

}  // namespace kcache::freshness
