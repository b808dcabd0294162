#include "kcache/engine/explain.hpp"

#include "kcache/compile/compiler.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kcache::engine {
namespace {

const std::string* find_field(const std::vector<Field>& fields, std::string_view name) {
  for (const auto& [k, v] : fields)
    if (k == name) return &v;
  return nullptr;
}

/// The manifest `name` an entry was expanded from: its recorded name without
/// the "[K=v,...]" suffix when it recorded variant values.
std::string base_name_of(const Entry& e) {
  const std::string* name = find_field(e.id_fields, "name");
  std::string full = name ? *name : e.kernel;
  bool has_variant = std::any_of(e.id_fields.begin(), e.id_fields.end(),
                                 [](const Field& f) { return f.first.starts_with("variant:"); });
  if (has_variant)
    if (auto bracket = full.find('['); bracket != std::string::npos) full.resize(bracket);
  return full;
}

}  // namespace

std::string_view change_kind_name(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::input: return "input";
    case ChangeKind::define: return "define";
    case ChangeKind::variant: return "variant";
    case ChangeKind::entry: return "entry";
    case ChangeKind::spec_constant: return "spec_constant";
    case ChangeKind::target: return "target";
    case ChangeKind::optimize: return "optimize";
    case ChangeKind::option: return "option";
    case ChangeKind::toolchain: return "toolchain";
    case ChangeKind::schema: return "schema";
    case ChangeKind::fingerprint: return "fingerprint";
    case ChangeKind::expand: return "expand";
    case ChangeKind::other: return "other";
  }
  return "other";
}

ChangeKind change_kind(std::string_view field) {
  if (field.starts_with("input:")) return ChangeKind::input;
  if (field.starts_with("define:")) return ChangeKind::define;
  if (field.starts_with("variant:")) return ChangeKind::variant;
  if (field.starts_with("spec_constant:")) return ChangeKind::spec_constant;
  if (field.starts_with("fingerprint:") || field == "backend") return ChangeKind::fingerprint;
  if (field.starts_with("include_dir:")) return ChangeKind::option;
  if (field == "entry") return ChangeKind::entry;
  if (field == "target") return ChangeKind::target;
  if (field == "optimize") return ChangeKind::optimize;
  if (field == "source" || field == "stage" || field == "language" || field == "name") return ChangeKind::option;
  if (field == "glslang" || field == "spirv-tools" || field == "optimizer") return ChangeKind::toolchain;
  if (field == "key_schema") return ChangeKind::schema;
  if (field == "expand") return ChangeKind::expand;
  return ChangeKind::other;
}

std::vector<Change> essential_changes(std::vector<Change> changes) {
  auto changed = [&](std::string_view name) -> const Change* {
    for (const auto& c : changes)
      if (c.name == name) return &c;
    return nullptr;
  };
  bool optimize_changed = changed("optimize") != nullptr;
  bool variant_changed =
      std::any_of(changes.begin(), changes.end(), [](const Change& c) { return c.name.starts_with("variant:"); });
  std::vector<Change> out;
  for (const auto& c : changes) {
    // The recipe field names the level it is for ("… (size)"): a level change
    // changes it as a consequence, not as a second reason.
    if (c.name == "optimizer" && optimize_changed) continue;
    if (c.name == "name" && variant_changed) continue;
    if (c.name.starts_with("define:")) {
      const Change* v = changed("variant:" + c.name.substr(7));
      if (v && v->old_value == c.old_value && v->new_value == c.new_value) continue;
    }
    out.push_back(c);  // a copy: `changed` still looks at every change
  }
  return out;
}

bool remembered_failure(const Explanation& e) { return e.state != Freshness::fresh && e.failure && e.failure->current; }

std::string describe(const Explanation& e, std::size_t max) {
  if (remembered_failure(e)) {
    const Failure& f = e.failure->failure;
    std::string_view first_line = std::string_view(f.message).substr(0, f.message.find('\n'));
    return fmt::format("failed (remembered, {}{}): {} in {}: {}; `kcache build --retry-failed` compiles it again",
                       util::iso_time(f.created), e.state == Freshness::stale ? "; previous entry kept, stale" : "",
                       category_name(f.category), failure_phase_name(f.phase), first_line);
  }
  switch (e.state) {
    case Freshness::fresh: return "fresh";
    case Freshness::stale: return e.changes.empty() ? "stale" : "stale: " + describe_changes(e.changes, max);
    case Freshness::missing: break;
  }
  if (e.compared_ns.empty())
    return fmt::format("not in {} (no entry of this kernel or its variants in the store)", e.ns);
  std::string what = e.changes.empty() ? "no recorded input differs" : describe_changes(e.changes, max);
  if (e.compared_kernel == e.kernel) return fmt::format("not in {}; {} has it: {}", e.ns, e.compared_ns, what);
  std::string where = e.compared_ns == e.ns ? "" : " in " + e.compared_ns;
  return fmt::format("not in {}; nearest stored variant {}{} differs in: {}", e.ns, e.compared_kernel, where, what);
}

Explainer::Explainer(store::Reader& reader, definition::FileCache& files, const compile::Toolchain& toolchain)
    : m_reader(reader), m_files(files), m_toolchain(toolchain) {}

Result<const std::vector<store::NamespaceRecord>*> Explainer::namespaces() {
  if (!m_namespaces) m_namespaces = KCACHE_TRY(m_reader.namespace_records());
  return &*m_namespaces;
}

Result<const std::multimap<std::string, Entry>*> Explainer::by_base_name(const std::string& ns) {
  auto it = m_siblings.find(ns);
  if (it != m_siblings.end()) return &it->second;
  std::multimap<std::string, Entry> index;
  // A corrupt record only hides one candidate: skip it rather than fail the
  // explanation (verify reports it).
  auto scanned = m_reader.scan(ns, [&](Entry&& e) {
    e.payload.clear();
    e.payload.shrink_to_fit();
    index.emplace(base_name_of(e), std::move(e));
    return true;
  });
  if (!scanned && scanned.error().category != Category::corruption) return tl::unexpected(scanned.error());
  return &m_siblings.emplace(ns, std::move(index)).first->second;
}

std::vector<Change> Explainer::namespace_changes(const std::string& stored_ns, const Namespace& wanted) {
  std::vector<Change> out;
  auto ns_list = namespaces();
  if (!ns_list) return out;
  for (const auto& info : **ns_list) {
    if (info.ns.name() != stored_ns) continue;
    if (info.ns.backend != wanted.backend) {
      out.push_back({"backend", info.ns.backend, wanted.backend});
    } else if (info.ns.backend != "spirv") {
      // A spirv namespace's record is its target, already an id field.
      for (auto& d : diff_fingerprints(info.ns.record, wanted.record))
        out.push_back({"fingerprint:" + d.field, std::move(d.ours), std::move(d.theirs)});
    }
  }
  return out;
}

std::vector<Change> Explainer::changes_since(const definition::KernelSpec& spec, const Recorded& stored, bool spirv) {
  if (spirv) return essential_changes(assess(spec, stored, m_files, m_toolchain).changes);
  // A pipeline-cache entry records the SPIR-V entry's identity and inputs
  // but a pipeline recipe instead of a toolchain (device/pipeline_entry.hpp).
  auto id = definition::compute_id(spec);
  std::vector<Change> changes;
  if (stored.key.id != id.hash) changes = definition::diff_fields(stored.id_fields, id.fields);
  for (auto& c : input_changes(stored.inputs, m_files)) changes.push_back(std::move(c));
  return essential_changes(std::move(changes));
}

Result<Explanation> Explainer::explain(const definition::KernelSpec& spec, const std::optional<Namespace>& wanted_ns) {
  Namespace wanted = wanted_ns ? *wanted_ns : spirv_namespace(spec.target);
  Explanation e;
  e.kernel = spec.name;
  e.ns = wanted.name();

  // A failure record is explained by the rule its stage applies: for the
  // SPIR-V stage build's own (assess); for the device stage, the kernel's
  // identity and inputs, as a pipeline entry (its recipe key needs the
  // stored module, which the device stage compares when it runs).
  if (auto failed = m_reader.failure(e.ns, spec.name); failed && *failed) {
    Explanation::StoredFailure sf;
    sf.changes = changes_since(spec, recorded(**failed), (*failed)->phase != FailurePhase::pipeline);
    sf.current = sf.changes.empty();
    sf.failure = std::move(**failed);
    e.failure = std::move(sf);
  }

  auto here = m_reader.get(e.ns, spec.name);
  if (!here && here.error().category != Category::corruption) return tl::unexpected(here.error());
  for (const auto& info : *KCACHE_TRY(namespaces())) {
    std::string name = info.ns.name();
    if (name == e.ns) continue;
    auto there = m_reader.get(name, spec.name);
    if (there && *there) e.elsewhere.push_back(name);
  }

  e.compared_ns = e.ns;
  e.compared_kernel = spec.name;
  if (!here) {
    e.state = Freshness::stale;
    e.changes.push_back({"record", "stored", "unreadable: " + here.error().message});
    return e;
  }
  if (*here && (*here)->payload_kind != PayloadKind::spirv) {
    // A device namespace: fresh unless the kernel's identity or inputs
    // changed (the device itself is the namespace).
    e.changes = changes_since(spec, recorded(**here), false);
    e.state = e.changes.empty() ? Freshness::fresh : Freshness::stale;
    return e;
  }
  if (*here) {
    Assessment a = assess(spec, **here, m_files, m_toolchain);
    e.state = a.state;
    e.changes = essential_changes(std::move(a.changes));
    return e;
  }
  e.compared_ns.clear();
  e.compared_kernel.clear();
  KCACHE_CHECK(explain_absent(spec, wanted, e));
  return e;
}

Result<void> Explainer::explain_absent(const definition::KernelSpec& spec, const Namespace& wanted, Explanation& e) {
  auto compare = [&](const Entry& stored) {
    return changes_since(spec, recorded(stored), stored.payload_kind == PayloadKind::spirv);
  };
  // The same kernel in another namespace explains a changed target or
  // device; prefer the candidate with the fewest differences, the same
  // backend first.
  std::optional<std::pair<std::size_t, std::vector<Change>>> best;
  for (const auto& other : e.elsewhere) {
    auto stored = KCACHE_TRY(m_reader.get(other, spec.name));
    if (!stored) continue;
    auto changes = namespace_changes(other, wanted);
    for (auto& c : compare(*stored)) changes.push_back(std::move(c));
    bool other_backend =
        std::any_of(changes.begin(), changes.end(), [](const Change& c) { return c.name == "backend"; });
    std::size_t score = changes.size() + (other_backend ? 1000 : 0);
    if (!best || score < best->first) {
      best.emplace(score, std::move(changes));
      e.compared_ns = other;
      e.compared_kernel = spec.name;
    }
  }
  if (best) {
    e.changes = std::move(best->second);
    return {};
  }

  // A changed variant value renames the kernel: the closest stored variant
  // of the same manifest kernel names the value that changed.
  const auto& index = *KCACHE_TRY(by_base_name(e.ns));
  auto [first, last] = index.equal_range(spec.base_name);
  for (auto it = first; it != last; ++it) {
    if (it->second.kernel == spec.name) continue;
    auto changes = compare(it->second);
    if (!best || changes.size() < best->first) {
      best.emplace(changes.size(), std::move(changes));
      e.compared_ns = e.ns;
      e.compared_kernel = it->second.kernel;
    }
  }
  if (best) e.changes = std::move(best->second);
  return {};
}

}  // namespace kcache::engine
