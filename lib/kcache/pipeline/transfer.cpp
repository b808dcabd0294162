#include "kcache/pipeline/transfer.hpp"

#include "kcache/compile/compiler.hpp"
#include "kcache/core/file.hpp"
#include "kcache/device/device.hpp"
#include "kcache/device/pipeline_entry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace kcache::pipeline {
namespace {

Result<bundle::BundleReader> open_reader(const BundleStream& in, const bundle::ReadLimits& limits) {
  if (in.fd < 0) return bundle::BundleReader::open_file(in.path, limits);  // its messages name the path
  auto reader = bundle::BundleReader::open(in.fd, limits);
  if (!reader) return tl::unexpected(std::move(reader).error().context(in.label()));
  return reader;
}

template <typename T>
Result<T> in_context(Result<T> r, const std::string& what) {
  if (!r) return tl::unexpected(std::move(r).error().context(what));
  return r;
}

std::string list_names(const std::vector<store::NamespaceInfo>& namespaces) {
  std::string out;
  for (const auto& info : namespaces)
    out += fmt::format("{}{} ({} entries)", out.empty() ? "" : ", ", info.ns.name(), info.entries);
  return out.empty() ? "none" : out;
}

Result<Namespace> choose_namespace(const ExportSelection& sel, const std::vector<store::NamespaceInfo>& namespaces,
                                   const std::string& store_label) {
  if (sel.backend.empty() != sel.fingerprint.empty())
    return fail(Category::invalid_argument, "--backend and --fingerprint go together (or use --namespace {}/{})",
                sel.backend.empty() ? "BACKEND" : sel.backend, sel.fingerprint.empty() ? "FP" : sel.fingerprint);
  std::string wanted = !sel.ns_name.empty() ? sel.ns_name : sel.backend.empty() ? "" : sel.backend + "/" + sel.fingerprint;
  if (!wanted.empty()) {
    KCACHE_CHECK(parse_namespace_name(wanted));
    for (const auto& info : namespaces)
      if (info.ns.name() == wanted) return info.ns;
    return fail(Category::not_found, "{} has no namespace '{}'; it holds: {}", store_label, wanted,
                list_names(namespaces));
  }
  if (namespaces.size() == 1) return namespaces.front().ns;
  if (namespaces.empty()) return fail(Category::not_found, "{} holds no namespaces: nothing to export", store_label);
  return fail(Category::invalid_argument, "{} holds {} namespaces; choose one with --namespace: {}", store_label,
              namespaces.size(), list_names(namespaces));
}

bool selected(const ExportSelection& sel, std::string_view kernel) {
  if (sel.kernel_globs.empty()) return true;
  return std::any_of(sel.kernel_globs.begin(), sel.kernel_globs.end(),
                     [&](const std::string& g) { return match_kernel_glob(g, kernel); });
}

std::uint64_t size_of(const std::filesystem::path& p) {
  std::error_code ec;
  auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : n;
}

Result<void> write_out(const BundleStream& out, const bundle::BundleHeader& header,
                       const bundle::EntrySource& source, const bundle::WriteOptions& options) {
  auto written = out.fd >= 0 ? bundle::write_bundle(out.fd, header, source, options)
                             : bundle::write_bundle_file(out.path, header, source, options);
  if (!written) return tl::unexpected(std::move(written).error().context("writing " + out.label()));
  return {};
}

/// "driverVersion: bundle 580.159 ≠ target 575.64; deviceID: ..."
std::string describe(const std::vector<FieldDifference>& diffs, std::string_view other) {
  std::string out;
  for (const auto& d : diffs)
    out += fmt::format("{}{}: bundle {} ≠ {} {}", out.empty() ? "" : "; ", d.field, d.ours, other, d.theirs);
  return out;
}

/// The record a bundle must match and a description of where it came from.
struct Target {
  FingerprintRecord record;
  std::string text;
};

Result<Target> resolve_target(store::Store& store, const Namespace& bundle_ns, const ImportTarget& t) {
  if (bundle_ns.backend == "spirv") {
    if (t.device)
      return fail(Category::invalid_argument,
                  "--device applies to vulkan bundles; this bundle is {} (portable SPIR-V): use --fingerprint "
                  "TARGET_ENV to require a target environment",
                  bundle_ns.name());
    // SPIR-V is portable: without an explicit target, the bundle's own
    // target environment is what every module is validated against.
    if (!t.fingerprint) return Target{bundle_ns.record, fmt::format("its own target {}", bundle_ns.fingerprint)};
    return Target{spirv_namespace(*t.fingerprint).record, fmt::format("--fingerprint {}", *t.fingerprint)};
  }
  if (t.fingerprint) {
    if (*t.fingerprint == bundle_ns.fingerprint)
      return Target{bundle_ns.record, fmt::format("--fingerprint {}", *t.fingerprint)};
    // The store may know the full record of the wanted namespace: then every
    // differing field can be named, not just the fingerprint id.
    std::optional<Namespace> known;
    KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
      for (auto& info : KCACHE_TRY(r.namespaces()))
        if (info.ns.backend == bundle_ns.backend && info.ns.fingerprint == *t.fingerprint) known = info.ns;
      return {};
    }));
    if (known) return Target{known->record, fmt::format("namespace {} of the store", known->name())};
    FingerprintRecord only_id{{{"fingerprint", *t.fingerprint}}};
    FingerprintRecord bundle_id{{{"fingerprint", bundle_ns.fingerprint}}};
    return fail(Category::fingerprint_mismatch, "bundle namespace {} does not match the target: {}", bundle_ns.name(),
                describe(diff_fingerprints(bundle_id, only_id), "target"));
  }
  auto dev = device::select_device_or_default(t.device.value_or(""));
  if (!dev) {
    auto e = std::move(dev).error();
    if (e.category == Category::device_unavailable)
      e.message = fmt::format("cannot check vulkan bundle {} against this machine: {} (or pass --fingerprint FP "
                              "to import for a known fingerprint)",
                              bundle_ns.name(), e.message);
    return tl::unexpected(std::move(e));
  }
  return Target{dev->record(), fmt::format("device '{}' ({})", dev->name, dev->fingerprint())};
}

/// What every entry must pass before it may be written (DESIGN.md "Bundles":
/// every SPIR-V module through the validator, every pipeline-cache header).
Result<void> validate_entry(const Entry& e, const Namespace& bundle_ns, const FingerprintRecord& target) {
  if (bundle_ns.backend == "spirv") {
    if (e.payload_kind != PayloadKind::spirv)
      return fail(Category::validation_failed, "a pipeline-cache blob in a spirv namespace");
    auto words = KCACHE_TRY(compile::spirv_words(e.payload));
    return compile::validate(words, bundle_ns.fingerprint);
  }
  if (e.payload_kind != PayloadKind::pipeline_cache)
    return fail(Category::validation_failed, "a SPIR-V module in a vulkan namespace (expected a pipeline-cache blob)");
  return device::check_blob_against_record(e.payload, target);
}

/// Validates a bundle's entries on worker threads while the caller keeps
/// reading: the bundle reader (decompression, digests) stays on the calling
/// thread, spirv-val runs on `jobs` threads. At most `window` entries are in
/// flight, so memory stays bounded whatever the bundle size, and results come
/// back in bundle order. Without this, import time is the validator's CPU
/// time: 41 s for a 200 MB bundle on 2 cores (scripts/bench_bundle).
class ValidationWindow {
 public:
  using Check = std::function<Result<void>(const Entry&)>;
  /// One entry and its verdict, in bundle order.
  struct Checked {
    Entry entry;
    Result<void> verdict;
  };

  ValidationWindow(unsigned jobs, Check check) : m_check(std::move(check)), m_window(4 * std::max(1u, jobs)) {
    for (unsigned t = 0; t < std::max(1u, jobs); ++t)
      m_workers.emplace_back([this](std::stop_token stop) { work(stop); });
  }
  ~ValidationWindow() {
    {
      // Under the lock, so no worker is between its predicate and its wait.
      std::lock_guard lock(m_mutex);
      for (auto& w : m_workers) w.request_stop();
    }
    m_wake.notify_all();
  }

  /// The next entry in bundle order with its verdict; nullopt when `read`
  /// has no more. Errors from `read` (damaged bytes) are returned at once.
  Result<std::optional<Checked>> next(const std::function<Result<std::optional<Entry>>()>& read) {
    while (!m_exhausted && m_slots.size() < m_window) {
      auto e = KCACHE_TRY(read());
      if (!e) {
        m_exhausted = true;
        break;
      }
      auto slot = std::make_shared<Slot>(Slot{std::move(*e), {}, false});
      m_slots.push_back(slot);
      std::lock_guard lock(m_mutex);
      m_todo.push_back(slot);
      m_wake.notify_one();
    }
    if (m_slots.empty()) return std::optional<Checked>{};
    auto slot = m_slots.front();
    m_slots.pop_front();
    std::unique_lock lock(m_mutex);
    m_done.wait(lock, [&] { return slot->done; });
    return std::optional<Checked>{Checked{std::move(slot->entry), std::move(slot->verdict)}};
  }

 private:
  struct Slot {
    Entry entry;
    Result<void> verdict;
    bool done = false;
  };

  void work(std::stop_token stop) {
    for (;;) {
      std::shared_ptr<Slot> slot;
      {
        std::unique_lock lock(m_mutex);
        m_wake.wait(lock, [&] { return stop.stop_requested() || !m_todo.empty(); });
        if (m_todo.empty()) return;
        slot = std::move(m_todo.front());
        m_todo.pop_front();
      }
      Result<void> verdict = m_check(slot->entry);
      std::lock_guard lock(m_mutex);
      slot->verdict = std::move(verdict);
      slot->done = true;
      m_done.notify_all();
    }
  }

  Check m_check;
  std::size_t m_window;
  bool m_exhausted = false;
  std::deque<std::shared_ptr<Slot>> m_slots;  // in flight, bundle order (caller's thread only)
  std::mutex m_mutex;
  std::condition_variable m_wake, m_done;
  std::deque<std::shared_ptr<Slot>> m_todo;  // guarded by m_mutex
  std::vector<std::jthread> m_workers;      // last: joined before the rest is destroyed
};

ImportAction classify(const Entry& incoming, const std::optional<Entry>& stored) {
  if (!stored) return ImportAction::imported;
  if (stored->key == incoming.key && stored->payload_digest == incoming.payload_digest &&
      stored->inputs == incoming.inputs)
    return ImportAction::already_present;
  return ImportAction::replaced;
}

}  // namespace

std::string BundleStream::label() const {
  if (fd == 0) return "bundle <stdin>";
  if (fd == 1) return "bundle <stdout>";
  if (fd >= 0) return fmt::format("bundle <fd {}>", fd);
  return "bundle " + path.string();
}

bool match_kernel_glob(std::string_view pattern, std::string_view name) {
  // Iterative wildcard match with one backtrack point: linear in practice
  // and never exponential, unlike naive recursion.
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p, ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<Field> bundle_tool_versions() {
  const auto& v = compile::toolchain_versions();
  return {{"kcache", KCACHE_VERSION}, {"glslang", v.glslang}, {"spirv-tools", v.spirv_tools}};
}

Result<ExportResult> export_bundle(store::Store& store, const ExportSelection& selection, const BundleStream& out,
                                   const bundle::WriteOptions& options) {
  ExportResult result;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    auto namespaces = KCACHE_TRY(reader.namespaces());
    result.ns = KCACHE_TRY(choose_namespace(selection, namespaces, "the store"));
    bundle::BundleHeader header;
    header.ns = result.ns;
    header.tool_versions = bundle_tool_versions();
    header.created = unix_now();
    std::string ns_name = result.ns.name();
    // Pass 1 indexes (one entry decoded at a time); pass 2 fetches each entry
    // again as the writer asks for it. Both run in this one snapshot, so a
    // concurrent build cannot change an entry between the passes.
    KCACHE_CHECK(reader.scan(ns_name, [&](Entry&& e) {
      if (selected(selection, e.kernel)) header.index.push_back(bundle::index_entry(e));
      return true;
    }));
    if (header.index.empty() && !selection.kernel_globs.empty())
      return fail(Category::not_found, "no entry of {} matches --kernel {}", ns_name,
                  fmt::join(selection.kernel_globs, " --kernel "));
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
    return write_out(out, header, source, options);
  }));
  if (options.sign) result.signer = bundle::key_id(options.sign->public_key);
  if (out.fd < 0) result.bundle_bytes = size_of(out.path);
  return result;
}

std::string_view import_action_name(ImportAction a) {
  switch (a) {
    case ImportAction::imported: return "imported";
    case ImportAction::already_present: return "already_present";
    case ImportAction::replaced: return "replaced";
    case ImportAction::refused: return "refused";
  }
  return "?";
}

Result<ImportResult> import_bundle(store::Store& store, const BundleStream& in, const ImportOptions& options) {
  auto reader = KCACHE_TRY(open_reader(in, options.limits));
  ImportResult result;
  result.header = reader.header();
  result.dry_run = options.dry_run;
  const Namespace& ns = result.header.ns;
  // Everything that needs only the head comes first: a foreign or untrusted
  // bundle is refused before a byte of payload is decompressed.
  auto target = KCACHE_TRY(resolve_target(store, ns, options.target));
  result.target = target.text;
  if (auto diffs = diff_fingerprints(ns.record, target.record); !diffs.empty())
    return fail(Category::fingerprint_mismatch, "{} ({}) does not match {}: {}", in.label(), ns.name(), target.text,
                describe(diffs, "target"));
  if (!options.trusted.empty())
    result.signer = KCACHE_TRY(in_context(bundle::verify_signature(result.header, options.trusted), in.label()));

  std::string origin = in.fd >= 0 ? in.label() : "bundle " + in.path.filename().string();
  // Reads, checks and validates the next entry; invalid entries are
  // recorded and skipped, so every refusal is listed, not just the first.
  auto read = [&]() -> Result<std::optional<Entry>> {
    auto e = KCACHE_TRY(in_context(reader.next(), in.label()));
    if (!e) KCACHE_CHECK(in_context(reader.finish(), in.label()));
    return e;
  };
  ValidationWindow window(options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency()),
                          [&](const Entry& e) { return validate_entry(e, ns, target.record); });
  auto next_valid = [&]() -> Result<std::optional<Entry>> {
    for (;;) {
      auto checked = KCACHE_TRY(window.next(read));
      if (!checked) return std::optional<Entry>{};
      if (!checked->verdict) {
        result.refused.push_back({checked->entry.kernel, std::move(checked->verdict).error()});
        continue;
      }
      checked->entry.origin_kind = OriginKind::imported;
      checked->entry.origin_detail = origin;
      return std::optional<Entry>{std::move(checked->entry)};
    }
  };

  if (options.dry_run) {
    KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
      while (auto e = KCACHE_TRY(next_valid())) {
        switch (classify(*e, KCACHE_TRY(r.get(ns.name(), e->kernel)))) {
          case ImportAction::imported: ++result.imported; break;
          case ImportAction::already_present: ++result.already_present; break;
          default: ++result.replaced; break;
        }
      }
      return {};
    }));
    return result;
  }

  // The write: one transaction fed one entry at a time. A refusal found
  // anywhere (or damage found by finish() at the very end) aborts it.
  static constexpr std::string_view k_refused = "entries refused";
  auto stream = [&]() -> Result<std::optional<Entry>> {
    auto e = KCACHE_TRY(next_valid());
    if (!e && !result.refused.empty()) return fail(Category::validation_failed, "{}", k_refused);
    if (!result.refused.empty()) {
      // Keep validating the rest to list every refusal, but write no more.
      while (KCACHE_TRY(next_valid())) {}
      return fail(Category::validation_failed, "{}", k_refused);
    }
    return e;
  };
  auto summary = store.put_stream(ns, stream);
  if (!summary) {
    if (!result.refused.empty() && summary.error().message == k_refused) return result;
    return tl::unexpected(std::move(summary).error());
  }
  result.imported = summary->written;
  result.replaced = summary->replaced;
  result.already_present = summary->already_present;
  result.written = summary->written + summary->replaced > 0;
  return result;
}

Result<MergeResult> merge_bundles(const std::vector<BundleStream>& inputs, const BundleStream& out,
                                  const bundle::WriteOptions& options) {
  if (inputs.empty()) return fail(Category::invalid_argument, "merge needs at least one input bundle");
  for (const auto& in : inputs)
    if (in.fd >= 0) return fail(Category::invalid_argument, "merge reads its inputs twice: give files, not {}", in.label());
  MergeResult result;
  result.inputs = inputs.size();

  // Pass 1: heads only. Namespaces must agree; the merged index takes each
  // kernel from the first bundle that has it.
  struct Source {
    std::size_t bundle;
    std::size_t position;  ///< in that bundle's index
  };
  std::vector<bundle::BundleHeader> heads;
  std::map<std::string, Source, std::less<>> first;
  std::vector<Source> order;
  // Same kernel and key but another record digest: equal only if the
  // payloads are (created time and origin may differ); decided in pass 2.
  std::vector<std::pair<Source, Source>> compare;
  for (std::size_t b = 0; b < inputs.size(); ++b) {
    auto reader = KCACHE_TRY(open_reader(inputs[b], {}));
    heads.push_back(reader.header());
    const auto& h = heads.back();
    if (b > 0 && !(h.ns == heads.front().ns)) {
      auto diffs = diff_fingerprints(heads.front().ns.record, h.ns.record);
      if (h.ns.backend != heads.front().ns.backend) diffs.insert(diffs.begin(), {"backend", heads.front().ns.backend, h.ns.backend});
      std::string text;
      for (const auto& d : diffs) text += fmt::format("{}{}: {} ≠ {}", text.empty() ? "" : "; ", d.field, d.ours, d.theirs);
      return fail(Category::fingerprint_mismatch, "cannot merge {} ({}) with {} ({}): {}", inputs[0].label(),
                  heads.front().ns.name(), inputs[b].label(), h.ns.name(), text);
    }
    for (std::size_t i = 0; i < h.index.size(); ++i) {
      const auto& ie = h.index[i];
      auto [it, fresh] = first.try_emplace(ie.kernel, Source{b, i});
      if (fresh) {
        order.push_back({b, i});
        continue;
      }
      const auto& kept = heads[it->second.bundle].index[it->second.position];
      if (kept.key != ie.key) {
        result.conflicts.push_back({ie.kernel, inputs[it->second.bundle].label(), inputs[b].label(), kept.key, ie.key, false});
      } else if (kept.digest == ie.digest) {
        ++result.duplicates;
      } else {
        compare.push_back({it->second, {b, i}});
      }
    }
  }
  result.ns = heads.front().ns;

  // Pass 2: read every input completely (digests, trailer) and collect the
  // payload digests that pass 1 could not decide.
  std::set<std::pair<std::size_t, std::size_t>> wanted;
  for (const auto& [a, b] : compare) wanted.insert({a.bundle, a.position}), wanted.insert({b.bundle, b.position});
  std::map<std::pair<std::size_t, std::size_t>, Hash128> payload_digest;
  for (std::size_t b = 0; b < inputs.size(); ++b) {
    auto reader = KCACHE_TRY(open_reader(inputs[b], {}));
    for (std::size_t i = 0;; ++i) {
      auto e = KCACHE_TRY(in_context(reader.next(), inputs[b].label()));
      if (!e) break;
      if (wanted.contains({b, i})) payload_digest[{b, i}] = e->payload_digest;
    }
    KCACHE_CHECK(in_context(reader.finish(), inputs[b].label()));
  }
  for (const auto& [a, b] : compare) {
    if (payload_digest[{a.bundle, a.position}] == payload_digest[{b.bundle, b.position}]) {
      ++result.duplicates;
      continue;
    }
    const auto& ie = heads[a.bundle].index[a.position];
    result.conflicts.push_back({ie.kernel, inputs[a.bundle].label(), inputs[b.bundle].label(), ie.key, ie.key, true});
  }
  if (!result.conflicts.empty()) return result;

  // Pass 3: write, pulling each kept entry from its bundle in order.
  bundle::BundleHeader header;
  header.ns = result.ns;
  header.tool_versions = heads.front().tool_versions;
  header.created = unix_now();
  for (const auto& s : order) header.index.push_back(heads[s.bundle].index[s.position]);
  result.entries = header.index.size();
  std::optional<bundle::BundleReader> current;
  std::size_t current_bundle = 0, next_position = 0;
  bundle::EntrySource source = [&](std::size_t k) -> Result<Entry> {
    const Source& s = order[k];
    if (!current || current_bundle != s.bundle) {
      current.emplace(KCACHE_TRY(open_reader(inputs[s.bundle], {})));
      if (!(current->header() == heads[s.bundle]))
        return fail(Category::corruption, "{} changed while it was being merged", inputs[s.bundle].label());
      current_bundle = s.bundle;
      next_position = 0;
    }
    for (;;) {
      auto e = KCACHE_TRY(in_context(current->next(), inputs[s.bundle].label()));
      if (!e) return fail(Category::corruption, "{} ended early while it was being merged", inputs[s.bundle].label());
      if (next_position++ == s.position) return std::move(*e);
    }
  };
  KCACHE_CHECK(write_out(out, header, source, options));
  if (options.sign) result.signer = bundle::key_id(options.sign->public_key);
  if (out.fd < 0) result.bundle_bytes = size_of(out.path);
  return result;
}

Result<std::vector<bundle::PublicKey>> load_public_keys(const std::vector<std::filesystem::path>& paths) {
  std::vector<bundle::PublicKey> keys;
  for (const auto& p : paths) {
    auto text = KCACHE_TRY(read_file(p));
    auto key = bundle::decode_public_key(text);
    if (!key)
      return fail(key.error().category, "public key file {}: {} (make one with `kcache keygen -o NAME`, use NAME.pub)",
                  p.string(), key.error().message);
    keys.push_back(*key);
  }
  return keys;
}

Result<bundle::KeyPair> load_secret_key(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    return fail(Category::invalid_argument, "secret key {} is readable by others (mode {:04o}): run chmod 600 {}",
                path.string(), st.st_mode & 0777, path.string());
  auto text = KCACHE_TRY(read_file(path));
  auto pair = bundle::decode_secret_key(text);
  if (!pair)
    return fail(pair.error().category, "secret key file {}: {} (make one with `kcache keygen -o NAME`, use NAME.key)",
                path.string(), pair.error().message);
  return std::move(*pair);
}

}  // namespace kcache::pipeline
