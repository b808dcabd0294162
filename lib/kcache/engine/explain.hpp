// Why did a kernel miss? Compares what the store holds for a manifest kernel
// with what the current manifest and toolchain would produce, and names every
// input that differs with its stored and current value (`inspect
// --why`, `build --explain`). Differences follow from the fields each entry
// recorded when it was built (core/entry.hpp: id_fields, ir_fields, inputs)
// and from the namespace records (fingerprints), so an explanation needs no
// compile and, unless only file contents changed, no preprocessing.
//
// A missing kernel is explained by the nearest stored relative: the same
// kernel in another namespace (a changed target or device), else the closest
// variant of the same manifest kernel in its namespace (a changed variant
// value renames the kernel, so the old entry is only a relative).
//
// Thread-safety: an Explainer borrows a Reader and is valid only inside the
// store's read() callback that handed the Reader out, on that thread.
#pragma once

#include "kcache/core/namespace.hpp"
#include "kcache/definition/definition.hpp"
#include "kcache/engine/freshness.hpp"
#include "kcache/store/store.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::engine {

/// What a change is about. Persisted by name in `--json` output
/// ("kind"); names are append-only.
enum class ChangeKind {
  input,          ///< "input:<path>": a source or include file's content hash
  define,         ///< "define:<NAME>"
  variant,        ///< "variant:<NAME>": a variant value (the kernel's name follows it)
  entry,          ///< "entry": entry point
  spec_constant,  ///< "spec_constant:<id>"
  target,         ///< "target": target environment
  optimize,       ///< "optimize": optimisation level
  option,         ///< "source", "stage", "language", "include_dir:<n>", "name"
  toolchain,      ///< "glslang", "spirv-tools", "optimizer" (the optimiser's recipe)
  schema,         ///< "key_schema": kcache's key schema version
  fingerprint,    ///< "fingerprint:<field>": a device fingerprint field; "backend"
  expand,         ///< "expand": the current sources no longer preprocess
  other,          ///< anything else ("id", "record")
};
std::string_view change_kind_name(ChangeKind kind);
/// The kind of a change by its field name (see ChangeKind).
ChangeKind change_kind(std::string_view field);

/// Drops the changes that only follow from another one, so that one edit
/// gives one reason: "optimizer" (recipe) when "optimize" changed, "define:K"
/// when "variant:K" changed the same way, "name" when a variant changed.
std::vector<Change> essential_changes(std::vector<Change> changes);

/// A kernel's state against the store, with the reasons.
struct Explanation {
  std::string kernel;
  std::string ns;  ///< the namespace the current manifest and toolchain put it in
  Freshness state = Freshness::missing;
  /// The stored entry the changes are against: (namespace, kernel). For a
  /// fresh or stale kernel it is (ns, kernel); for a missing one the nearest
  /// relative, or empty when the store has none.
  std::string compared_ns;
  std::string compared_kernel;
  std::vector<Change> changes;  ///< stored → current; essential_changes only
  /// Other namespaces that hold an entry of this exact kernel name.
  std::vector<std::string> elsewhere;
  /// The failure record of this kernel in `ns`, if the store has one.
  struct StoredFailure {
    Failure failure;
    /// Still current (a build would report it without compiling); else
    /// `changes` says what changed since it failed.
    bool current = false;
    std::vector<Change> changes;
  };
  std::optional<StoredFailure> failure;
};

/// Whether `e` is a kernel a build would report as failed from the store
/// without compiling: no fresh entry, and a current failure record.
bool remembered_failure(const Explanation& e);

/// "fresh", "stale: input:inc/a.glsl changed (0c1d2e3f… → 4a5b6c7d…)",
/// "failed (remembered, 2026-01-02T03:04:05Z): spirv-val: <first line>",
/// "not in spirv/vulkan1.3; spirv/vulkan1.2 has it: target vulkan1.2 →
/// vulkan1.3", "not in store (no entry of this kernel or its variants)".
/// At most `max` changes are listed, then "and N more".
std::string describe(const Explanation& e, std::size_t max = 4);

/// Explains manifest kernels against one store snapshot. Remembers what it
/// read (namespace records; each namespace's entries once a variant search
/// needed them, payloads dropped), so explaining many kernels scans each
/// namespace at most once.
class Explainer {
 public:
  Explainer(store::Reader& reader, definition::FileCache& files, const compile::Toolchain& toolchain);

  /// Explains `spec` for `wanted` (default: the spirv namespace of its
  /// target; a device namespace for the vulkan backend). Errors: the store's
  /// read errors; a corrupt entry of this kernel is explained as stale with
  /// a "record" change rather than failing.
  Result<Explanation> explain(const definition::KernelSpec& spec, const std::optional<Namespace>& wanted = {});

 private:
  Result<const std::vector<store::NamespaceRecord>*> namespaces();
  Result<const std::multimap<std::string, Entry>*> by_base_name(const std::string& ns);
  std::vector<Change> namespace_changes(const std::string& stored_ns, const Namespace& wanted);
  /// What changed since `stored` was made for `spec`: by build's rule for a
  /// SPIR-V record (`spirv`), else the kernel's identity and inputs.
  std::vector<Change> changes_since(const definition::KernelSpec& spec, const Recorded& stored, bool spirv);
  /// `e` for a kernel with no entry in its namespace: the closest stored
  /// record elsewhere (another namespace, then another variant) and what
  /// differs from it.
  Result<void> explain_absent(const definition::KernelSpec& spec, const Namespace& wanted, Explanation& e);

  store::Reader& m_reader;
  definition::FileCache& m_files;
  const compile::Toolchain& m_toolchain;
  std::optional<std::vector<store::NamespaceRecord>> m_namespaces;
  std::map<std::string, std::multimap<std::string, Entry>> m_siblings;
};

}  // namespace kcache::engine
