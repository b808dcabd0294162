#include "kcache/transfer/transfer.hpp"

#include "kcache/bundle/release.hpp"
#include "kcache/compile/compiler.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/util/glob.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace kcache::transfer {
namespace {

/// "a (N entries), b (M entries)", or "none". Only an error names them, so
/// only then are the entries counted (O(entries)); a store that cannot count
/// them still gets the names.
std::string list_names(store::Reader& reader, const std::vector<store::NamespaceRecord>& records) {
  std::string out;
  if (auto counted = reader.namespaces()) {
    for (const auto& info : *counted)
      out += fmt::format("{}{} ({} entries)", out.empty() ? "" : ", ", info.ns.name(), info.entries);
  } else {
    for (const auto& r : records) out += fmt::format("{}{}", out.empty() ? "" : ", ", r.ns.name());
  }
  return out.empty() ? "none" : out;
}

Result<Namespace> choose_namespace(const ExportSelection& sel, store::Reader& reader, const std::string& store_label) {
  if (sel.backend.empty() != sel.fingerprint.empty())
    return fail(Category::invalid_argument, "--backend and --fingerprint go together (or use --namespace {}/{})",
                sel.backend.empty() ? "BACKEND" : sel.backend, sel.fingerprint.empty() ? "FP" : sel.fingerprint);
  std::string wanted = !sel.ns_name.empty()  ? sel.ns_name
                       : sel.backend.empty() ? ""
                                             : sel.backend + "/" + sel.fingerprint;
  if (!wanted.empty()) KCACHE_CHECK(parse_namespace_name(wanted));
  // The namespace records alone (O(namespaces)): no entry is decoded to
  // choose, so no entry of another namespace is met damaged.
  auto namespaces = KCACHE_TRY(reader.namespace_records());
  if (!wanted.empty()) {
    for (const auto& info : namespaces)
      if (info.ns.name() == wanted) return info.ns;
    return fail(Category::not_found, "{} has no namespace '{}'; it holds: {}", store_label, wanted,
                list_names(reader, namespaces));
  }
  if (namespaces.size() == 1) return namespaces.front().ns;
  if (namespaces.empty()) return fail(Category::not_found, "{} holds no namespaces: nothing to export", store_label);
  return fail(Category::invalid_argument, "{} holds {} namespaces; choose one with --namespace: {}", store_label,
              namespaces.size(), list_names(reader, namespaces));
}

bool selected(const ExportSelection& sel, std::string_view kernel) {
  if (sel.kernels && !sel.kernels->contains(kernel)) return false;
  if (sel.kernel_globs.empty()) return true;
  return std::any_of(sel.kernel_globs.begin(), sel.kernel_globs.end(),
                     [&](const std::string& g) { return util::match_glob(g, kernel); });
}

}  // namespace

bool is_remote_origin(const Entry& e) {
  // remote/tier.cpp: "remote URL" (test_transfer_delta.cpp holds the two together).
  return e.origin_kind != OriginKind::built && e.origin_detail.starts_with("remote ");
}

std::vector<Field> bundle_tool_versions() {
  const auto& v = compile::Toolchain::installed().versions();
  return {{"kcache", KCACHE_VERSION}, {"glslang", v.glslang}, {"spirv-tools", v.spirv_tools}};
}

namespace {

/// BASE of a delta (export --since): its kernels' keys, and its kernels in
/// its order.
struct DeltaBaseIndex {
  std::map<std::string, Key, std::less<>> keys;
  std::vector<std::string> order;
};

/// Reads BASE's index: a whole bundle of namespace `ns`, else invalid_argument.
Result<DeltaBaseIndex> read_delta_base(const std::filesystem::path& since, const Namespace& ns) {
  auto base_head = KCACHE_TRY(bundle::BundleReader::open_file(since));
  const auto& bh = base_head.header();
  if (bh.delta)
    return fail(Category::invalid_argument, "--since {}: a delta bundle; name the whole bundle it applies to",
                since.string());
  if (!(bh.ns == ns))
    return fail(Category::invalid_argument, "--since {} holds {}, not {}", since.string(), bh.ns.name(), ns.name());
  DeltaBaseIndex out;
  for (const auto& ie : bh.index) out.keys.emplace(ie.kernel, ie.key), out.order.push_back(ie.kernel);
  return out;
}

/// The delta's fields against BASE: what it keeps of BASE (under BASE's
/// key), what it removes (BASE's kernels neither kept nor shipped, with
/// their keys in BASE), BASE's digest and name.
Result<bundle::DeltaBase> delta_of(const std::filesystem::path& since, const DeltaBaseIndex& base,
                                   const std::set<std::string, std::less<>>& kept,
                                   const std::vector<bundle::IndexEntry>& shipped_index) {
  bundle::DeltaBase d;
  d.base_digest = KCACHE_TRY(bundle::describe_section(since)).digest;
  d.base_entries = static_cast<std::uint32_t>(base.order.size());
  // Messages name BASE by this; a name a reader would refuse is left out.
  d.base_name = since.filename().string();
  if (d.base_name.size() > bundle::k_max_delta_base_name || !util::is_printable_utf8(d.base_name)) d.base_name.clear();
  std::vector<std::pair<std::string, Key>> with_keys;
  std::set<std::string_view> shipped;
  for (const auto& ie : shipped_index) shipped.insert(ie.kernel);
  for (const auto& k : base.order) {
    if (kept.contains(k)) {
      d.kept.push_back(k);
      d.kept_tags.push_back(bundle::kept_entry_tag(k, base.keys.at(k)));
      with_keys.emplace_back(k, base.keys.at(k));
    } else if (!shipped.contains(k)) {
      // Its key in BASE: an importer removes only that build of it.
      d.removed.push_back(k);
      d.removed_keys.push_back(base.keys.at(k));
    }
  }
  d.kept_digest = bundle::kept_entries_digest(with_keys);
  return d;
}

/// export_bundle inside the caller's snapshot.
Result<ExportResult> export_from(store::Reader& reader, const ExportSelection& selection, const BundleStream& out,
                                 const ExportOptions& options) {
  ExportResult result;
  result.ns = KCACHE_TRY(choose_namespace(selection, reader, "the store"));
  bundle::BundleHeader header;
  header.ns = result.ns;
  header.tool_versions = bundle_tool_versions();
  header.created = options.created;
  std::string ns_name = result.ns.name();
  // Pass 1 indexes (one entry decoded at a time); pass 2 fetches each entry
  // again as the writer asks for it. Both run in this one snapshot, so a
  // concurrent build cannot change an entry between the passes.
  // A delta: BASE's kernels and keys; an entry under the same key is kept
  // (BASE ships it), any other is added or replaced.
  DeltaBaseIndex base;
  if (!options.since.empty()) base = KCACHE_TRY(read_delta_base(options.since, result.ns));
  std::set<std::string, std::less<>> kept;
  std::uint64_t newest = 0;
  // A signature says "built by the signer": a remote's value was not.
  std::vector<std::string> from_remotes;
  KCACHE_CHECK(reader.scan(ns_name, [&](Entry&& e) {
    if (selected(selection, e.kernel)) {
      if (auto it = base.keys.find(e.kernel); it != base.keys.end() && it->second == e.key) {
        kept.insert(e.kernel);
        return true;
      }
      if (options.write.sign && !options.sign_remote_entries && is_remote_origin(e)) from_remotes.push_back(e.kernel);
      header.index.push_back(bundle::index_entry(e));
      newest = std::max(newest, e.created);
    }
    return true;
  }));
  if (!from_remotes.empty())
    return fail(Category::invalid_argument,
                "--sign: {} entries of {} came from a remote cache, not from a build here ('{}'{}): a signature "
                "vouches for them as this machine's builds; rebuild them without the remote, export without --sign, "
                "or pass --sign-remote-entries to sign them anyway",
                from_remotes.size(), ns_name, util::shown_untrusted(from_remotes.front()),
                from_remotes.size() > 1 ? fmt::format(" and {} more", from_remotes.size() - 1) : "");
  if (!options.since.empty()) {
    header.delta = KCACHE_TRY(delta_of(options.since, base, kept, header.index));
    result.kept = header.delta->kept.size();
    result.removed = header.delta->removed.size();
  }
  if (options.created == 0) header.created = newest;
  for (const auto& d : reader.damaged())
    if (d.ns == ns_name && selected(selection, d.kernel)) result.damaged.push_back(d);
  // (A delta that keeps what the globs match ships nothing, and says so.)
  if (header.index.empty() && kept.empty() && !selection.kernel_globs.empty())
    return fail(Category::not_found, "no entry of {} matches --kernel {}{}", ns_name,
                fmt::join(selection.kernel_globs, " --kernel "),
                result.damaged.empty()
                    ? ""
                    : fmt::format(" but {} damaged ones (run kcache verify; rebuild them)", result.damaged.size()));
  for (const auto& ie : header.index) {
    result.record_bytes += ie.record_size;
    result.payload_bytes += ie.payload_size;
  }
  result.entries = header.index.size();
  bundle::EntrySource source = [&](std::size_t i) -> Result<Entry> {
    auto e = KCACHE_TRY(reader.get(ns_name, header.index[i].kernel));
    if (!e) return fail(Category::corruption, "entry '{}' vanished from its snapshot", header.index[i].kernel);
    return std::move(*e);
  };
  // Both passes read this one snapshot, so no record can differ from its
  // index entry: the writer's second BLAKE2b of every record is skipped.
  auto write = options.write;
  write.check_records = false;
  KCACHE_CHECK(bundle::write_stream(out, header, source, write));
  if (options.write.sign) result.signer = bundle::key_id(options.write.sign->public_key);
  result.bundle_bytes = bundle::written_size(out);
  return result;
}

/// The sections of a release: the namespaces named, and for a device class
/// its pipelines with the SPIR-V modules they were built from. SPIR-V first,
/// so that an importer has met a pipeline's module before the pipeline.
Result<std::vector<ExportSelection>> release_sections(store::Reader& reader, const ReleaseSelection& sel) {
  std::vector<ExportSelection> out;
  for (const auto& name : sel.namespaces) {
    ExportSelection s;
    s.ns_name = name;
    s.kernel_globs = sel.kernel_globs;
    out.push_back(std::move(s));
  }
  if (!sel.for_device.empty()) {
    ExportSelection pipelines;
    pipelines.ns_name = "vulkan/" + sel.for_device;
    pipelines.kernel_globs = sel.kernel_globs;
    const auto ns = KCACHE_TRY(choose_namespace(pipelines, reader, "the store"));
    std::map<std::string, std::set<std::string, std::less<>>> modules;  // spirv namespace -> kernels
    std::optional<Error> bad;
    KCACHE_CHECK(reader.scan(ns.name(), [&](Entry&& e) {
      if (!selected(pipelines, e.kernel)) return true;
      auto recipe = device::read_pipeline_recipe(e);
      if (!recipe) {
        bad = std::move(recipe).error().context(fmt::format("pipeline '{}' of {}", e.kernel, ns.name()));
        return false;
      }
      modules[recipe->spirv_namespace].insert(e.kernel);
      return true;
    }));
    if (bad) return tl::unexpected(std::move(*bad));
    if (modules.empty())
      return fail(Category::not_found, "the store holds no pipelines of {}{}: build for that device first", ns.name(),
                  sel.kernel_globs.empty() ? "" : " matching --kernel");
    for (auto& [spirv, kernels] : modules) {
      for (const auto& k : kernels) {
        auto e = KCACHE_TRY(reader.get(spirv, k));
        if (!e)
          return fail(Category::not_found,
                      "pipeline '{}' of {} was built from a SPIR-V module of {} that this store does not hold: "
                      "rebuild it, or import {} first",
                      k, ns.name(), spirv, spirv);
      }
      ExportSelection s;
      s.ns_name = spirv;
      s.kernels = std::move(kernels);
      out.push_back(std::move(s));
    }
    out.push_back(std::move(pipelines));
  }
  std::stable_partition(out.begin(), out.end(),
                        [](const ExportSelection& s) { return s.ns_name.starts_with("spirv/"); });
  std::set<std::string> seen;
  for (const auto& s : out)
    if (!seen.insert(s.ns_name).second)
      return fail(Category::invalid_argument, "namespace {} is named twice (a release holds each once)", s.ns_name);
  return out;
}

}  // namespace

Result<ExportResult> export_bundle(store::Store& store, const ExportSelection& selection, const BundleStream& out,
                                   const ExportOptions& options) {
  ExportResult result;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    result = KCACHE_TRY(export_from(reader, selection, out, options));
    return {};
  }));
  return result;
}

Result<ReleaseExportResult> export_release(store::Store& store, const ReleaseSelection& selection,
                                           const BundleStream& out, const ExportOptions& options) {
  if (selection.scratch.empty())
    return fail(Category::invalid_argument, "a release is assembled in a scratch folder; none was given");
  ReleaseExportResult result;
  std::vector<std::filesystem::path> files;
  // A section's creation time is its newest entry's, so that a namespace
  // that did not change exports to the same bytes in the next release: a
  // registry then already has its layer (remote/OCI.md).
  ExportOptions section_options = options;
  section_options.created = 0;
  if (!options.since.empty())
    return fail(Category::invalid_argument, "a release holds whole namespaces: --since writes a delta of one");
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    auto sections = KCACHE_TRY(release_sections(reader, selection));
    for (std::size_t i = 0; i < sections.size(); ++i) {
      BundleStream part;
      part.path = selection.scratch / fmt::format("section-{}.kcb", i);
      result.sections.push_back(KCACHE_TRY(export_from(reader, sections[i], part, section_options)));
      files.push_back(part.path);
    }
    return {};
  }));
  KCACHE_CHECK(bundle::write_release(out, options.created, files));
  result.bundle_bytes = bundle::written_size(out);
  return result;
}

}  // namespace kcache::transfer
