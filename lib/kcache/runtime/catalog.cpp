#include "kcache/runtime/catalog.hpp"

// The validator, run before SPIRV-Cross sees a module (reflect_checked).
#include "kcache/compile/compiler.hpp"
#include "kcache/core/cuda.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/definition/kernel_spec.hpp"
// The interface the device stage builds pipelines with (recorded, or
// reflected the same way): an application must create its layout and
// specialization exactly as kcache did, or the driver misses the blob.
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <optional>
#include <set>
#include <tuple>

namespace kcache::runtime::detail {
namespace {

constexpr std::uint32_t k_spirv_magic = 0x07230203;

const std::string* field(const std::vector<Field>& fields, std::string_view name) {
  for (const auto& [k, v] : fields)
    if (k == name) return &v;
  return nullptr;
}

Result<std::vector<std::uint32_t>> spirv_words(const Entry& e, std::string_view ns) {
  if (e.payload_kind != PayloadKind::spirv)
    return fail(Category::corruption, "entry '{}' in {} holds no SPIR-V module", e.kernel, ns);
  if (e.payload.size() < 20 || e.payload.size() % 4 != 0)
    return fail(Category::corruption, "entry '{}' in {}: {} bytes is not a SPIR-V module", e.kernel, ns,
                e.payload.size());
  std::vector<std::uint32_t> words(e.payload.size() / 4);
  std::memcpy(words.data(), e.payload.data(), e.payload.size());
  if (words[0] != k_spirv_magic)
    return fail(Category::corruption, "entry '{}' in {}: not a SPIR-V module (magic {:#010x})", e.kernel, ns, words[0]);
  return words;
}

// The interface of a compute kernel, reflected with SPIRV-Cross. SPIRV-Cross
// trusts its input: a module naming an id past its header's bound makes it
// index out of its tables and die with SIGSEGV in the application (issue 27
// item 2). So it sees only modules that spirv-val accepts; the structure
// check first gives a damaged module its own message. A module stored as
// validated that spirv-val now finds invalid was damaged after it was
// stored: corruption. One stored under validate = "known" / "off", or one
// using what this validator does not know, is served unreflected
// (interface_error says why), as the device stage would refuse to build a
// pipeline of it.
// A trusted store (Catalog::open) skips spirv-val for modules stored as
// validated: the validator's cost (most of a lookup) was paid when the
// module was built or imported, and the application vouches that nobody
// changed the store since. It also takes the interface the served blob's
// entry records (`recorded`), which the device stage reflected when it
// created the pipeline, instead of reflecting again: reflection was most of
// what was left of a trusted lookup. With both, nothing here reads the
// module, so its structure is not walked again either (a sixth of what was
// left); its record's digest, checked by the read, still covers its bytes.
Result<void> reflect_checked(Kernel& k, definition::ValidatePolicy policy, bool trusted,
                             std::optional<Interface> recorded) {
  const bool validated_before = trusted && policy == definition::ValidatePolicy::strict;
  if (validated_before && recorded) {
    k.interface = std::move(*recorded);
    return {};
  }
  auto where = [&] { return fmt::format("kernel '{}' in spirv/{}", util::shown_untrusted(k.name), k.target); };
  if (auto ok = compile::check_structure(k.spirv); !ok)
    return fail(Category::corruption,
                "{}: its SPIR-V module is damaged ({}); run `kcache verify` on the store, or rebuild or re-import it",
                where(), compile::validation_note(ok.error().message));
  if (auto ok = validated_before ? Result<void>{} : compile::validate(k.spirv, k.target); !ok) {
    // validator_unsupported: this library's spirv-val may be older than the
    // one that built the module; not a sign of damage, so not an error.
    if (policy == definition::ValidatePolicy::strict && ok.error().category == Category::validation_failed)
      return fail(Category::corruption,
                  "{}: its SPIR-V module was stored as validated but spirv-val rejects it now ({}); the store or table "
                  "is damaged: run `kcache verify`, rebuild or re-import it",
                  where(), compile::validation_note(ok.error().message));
    k.interface_error = fmt::format(
        "not reflected: spirv-val does not accept the module ({}); kcache reflects only modules the validator "
        "accepts",
        compile::validation_note(ok.error().message));
    return {};
  }
  auto iface = device::reflect_pipeline_interface(k.spirv, k.entry_point, k.spec);
  if (iface) k.interface = std::move(*iface);
  else k.interface_error = iface.error().message;
  return {};
}

// "deviceProfile 2" for a record, as messages name it.
std::string profile_text(const FingerprintRecord& record) {
  const std::string* p = record.find("deviceProfile");
  return fmt::format("deviceProfile {}", p ? *p : "<absent>");
}

// A vulkan namespace of the store for `dev`'s compatibility class but
// another deviceProfile (kcache's way of creating devices and pipelines,
// device.hpp k_device_profile), or nullopt: what the lookup says when the
// device's own namespace lacks a blob, so that an application learns its
// store was built for another profile rather than finding no blob at all.
Result<std::optional<Namespace>> other_profile_namespace(store::Reader& reader, const device::DeviceInfo& dev) {
  auto without_profile = [](const FingerprintRecord& r) {
    FingerprintRecord out = compatible_record(r);
    std::erase_if(out.fields, [](const auto& f) { return f.first == "deviceProfile"; });
    return out;
  };
  const FingerprintRecord mine = without_profile(dev.record());
  for (const auto& info : KCACHE_TRY(reader.namespace_records()))
    if (info.ns.backend == "vulkan" && info.ns.fingerprint != dev.fingerprint() &&
        without_profile(info.ns.record) == mine)
      return std::optional<Namespace>(info.ns);
  return std::optional<Namespace>();
}

// The blob part of a lookup: fills blob_status, blob_reason, pipeline_cache,
// and (from the recipe) entry_point and spec, and `recorded` with the
// interface the entry records (scheme 2). Never fails: a refusal is data.
// `stored` is the read of the device's entry for the kernel; a served blob
// takes its payload. `recipe` is that entry's read_pipeline_recipe (when
// there is one). `trusted`: the store is trusted (Catalog::open), so
// the blob is not hashed again past the record digest its read checked.
Result<void> attach_blob(store::Reader& reader, const device::DeviceInfo& dev, const Entry& spirv,
                         std::string_view spirv_ns, Result<std::optional<Entry>>& stored,
                         const Result<device::PipelineRecipe>& recipe, bool trusted, Kernel& k,
                         std::optional<Interface>& recorded) {
  const std::string dev_ns = dev.ns.name();
  auto refuse = [&](std::string why) {
    k.blob_status = BlobStatus::refused;
    k.blob_reason = fmt::format("blob in {} not used: {}", dev_ns, why);
    return Result<void>{};
  };
  if (!stored) return refuse(stored.error().message);
  if (!*stored) {
    k.blob_status = BlobStatus::absent;
    k.blob_reason = fmt::format(
        "the store has no pipeline-cache blob for '{}' on this device (namespace {}); build one on this "
        "device with `kcache build --backend vulkan`, or import a bundle made for it",
        k.name, dev_ns);
    if (auto other = KCACHE_TRY(other_profile_namespace(reader, dev)))
      k.blob_reason += fmt::format(
          ". The store has blobs for this device built with another device profile ({} {}, this runtime's is {}): "
          "a device created another way compiles other code, so they cannot serve; rebuild them with this kcache",
          other->name(), profile_text(other->record), profile_text(dev.record()));
    return {};
  }
  Entry& v = **stored;
  if (v.payload_kind != PayloadKind::pipeline_cache) return refuse("the entry holds no pipeline-cache blob");
  if (!recipe) return refuse(recipe.error().message);
  if (recipe->spirv_namespace != spirv_ns)
    return refuse(
        fmt::format("it was built from the {} module, this lookup serves {}", recipe->spirv_namespace, spirv_ns));
  if (v.key.id != spirv.key.id || recipe->spirv_digest != spirv.payload_digest)
    return refuse(
        "stale: it was built from another version of the SPIR-V module; rebuild with `kcache build --backend "
        "vulkan`");
  auto raw = device::unwrap_blob(v.payload, dev, trusted ? PayloadDigest::covered : PayloadDigest::check);
  if (!raw) return refuse(raw.error().message);
  auto interface = device::read_pipeline_interface(v);
  if (!interface) return refuse(interface.error().message);
  recorded = std::move(*interface);
  k.blob_status = BlobStatus::served;
  k.blob_offset = static_cast<std::size_t>(raw->data() - v.payload.data());
  k.blob_size = raw->size();
  k.wrapped_blob = std::move(v.payload);
  k.entry_point = recipe->entry;
  k.spec = recipe->spec;
  return {};
}

std::string join_targets(const std::vector<std::string>& targets) {
  std::string out;
  for (const auto& t : targets) out += (out.empty() ? "" : ", ") + t;
  return out;
}

}  // namespace

std::string_view blob_status_name(BlobStatus status) {
  switch (status) {
    case BlobStatus::served: return "served";
    case BlobStatus::absent: return "absent";
    case BlobStatus::refused: return "refused";
    case BlobStatus::not_requested: break;
  }
  return "not-requested";
}

device::DeviceInfo device_from_properties(const DeviceProperties& p) {
  device::DeviceInfo info;
  info.vendor_id = p.vendor_id;
  info.device_id = p.device_id;
  info.driver_version = p.driver_version;
  info.pipeline_cache_uuid = p.pipeline_cache_uuid;
  info.device_uuid = p.device_uuid;
  info.driver_uuid = p.driver_uuid;
  info.driver_id = p.driver_id;
  info.driver_info = p.driver_info;
  info.seal_fingerprint();
  return info;
}

Catalog::Catalog(std::unique_ptr<store::Store> store, bool trusted) : m_store(std::move(store)), m_trusted(trusted) {}

Result<std::unique_ptr<Catalog>> Catalog::open(const std::filesystem::path& dir, bool trusted) {
  const auto& path = dir;
  store::OpenOptions options;
  options.read_only = true;
  // A trusted store's records are checked by their digest alone: the
  // payload inside is not hashed a second time at every lookup.
  if (trusted) options.payload_digests = PayloadDigest::covered;
  auto s = store::open_lmdb_store(path, options);
  if (!s) return tl::unexpected(std::move(s).error().context(fmt::format("store {}", path.string())));
  return std::make_unique<Catalog>(std::move(*s), trusted);
}

Result<std::unique_ptr<Catalog>> Catalog::open_embedded(const kcache_embedded_table& table) {
  if (table.version != KCACHE_EMBEDDED_VERSION)
    return fail(table.version > KCACHE_EMBEDDED_VERSION ? Category::version_mismatch : Category::invalid_argument,
                "embedded kernel table version {} is not {} (this kcache's); re-emit the sources with this kcache",
                table.version, KCACHE_EMBEDDED_VERSION);
  if (!table.target || !is_known_spirv_target(table.target))
    return fail(Category::invalid_argument, "embedded kernel table: no known target (one of {})", spirv_target_names());
  if (table.count > 0 && !table.kernels)
    return fail(Category::invalid_argument, "embedded kernel table: {} kernels but no array", table.count);
  std::vector<Entry> entries;
  entries.reserve(table.count);
  for (std::size_t i = 0; i < table.count; ++i) {
    const kcache_embedded_kernel& k = table.kernels[i];
    auto bad = [&](std::string_view what) {
      return fail(Category::invalid_argument, "embedded kernel {} ('{}'): {}", i,
                  k.name ? util::shown_untrusted(k.name) : std::string("(null)"), what);
    };
    if (!k.name || !k.key_id || !k.key_ir || !k.stage || !k.entry_point) return bad("a NULL string");
    if (auto ok = check_kernel_name(k.name); !ok) return bad(ok.error().message);
    auto id = util::Hash128::from_hex(k.key_id);
    auto ir = util::Hash128::from_hex(k.key_ir);
    if (!id || !ir) return bad("key ids are not 32 hex digits");
    if (!k.spirv || k.spirv_words < 5 || k.spirv_words > k_max_payload_bytes / 4 || k.spirv[0] != k_spirv_magic)
      return bad("not a SPIR-V module");
    if (k.spec_constant_count > 0 && !k.spec_constants) return bad("spec constants counted but missing");
    Entry e;
    e.kernel = k.name;
    e.key = {*id, *ir};
    if (*k.stage) e.id_fields.emplace_back("stage", k.stage);
    e.id_fields.emplace_back("entry", k.entry_point);
    for (std::uint32_t s = 0; s < k.spec_constant_count; ++s) {
      const kcache_embedded_spec& sc = k.spec_constants[s];
      if (!sc.type || !sc.text) return bad("a spec constant with a NULL type or value");
      e.id_fields.emplace_back("spec_constant:" + std::to_string(sc.constant_id), std::string(sc.type) + ":" + sc.text);
    }
    KCACHE_CHECK(device::spec_values_from_fields(e));  // the lookup's own rule, checked once here
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(k.spirv);
    e.payload.assign(bytes, bytes + k.spirv_words * 4);
    e.origin_kind = OriginKind::imported;
    e.origin_detail = "embedded in the program";
    seal_payload(e);
    entries.push_back(std::move(e));
  }
  // The memory store: the same reader every store lookup goes through.
  auto memory = store::make_memory_store();
  KCACHE_CHECK(memory->put(spirv_namespace(table.target), entries));
  return std::make_unique<Catalog>(std::move(memory));
}

Result<void> Catalog::list(std::string_view target,
                           const std::function<bool(std::string_view, std::string_view)>& visit) const {
  return m_store->read([&](store::Reader& reader) -> Result<void> {
    auto namespaces = KCACHE_TRY(reader.namespace_records());
    for (const auto& info : namespaces) {
      if (info.ns.backend != "spirv" || (!target.empty() && info.ns.fingerprint != target)) continue;
      bool go_on = true;
      KCACHE_CHECK(
          reader.scan(info.ns.name(), [&](Entry&& e) { return go_on = visit(info.ns.fingerprint, e.kernel); }));
      if (!go_on) break;
    }
    return {};
  });
}

Result<Kernel> Catalog::find(std::string_view name, const LookupOptions& options) const {
  Kernel k;
  auto policy = definition::ValidatePolicy::strict;
  std::optional<Interface> recorded;
  KCACHE_CHECK(m_store->read([&](store::Reader& reader) -> Result<void> {
    // Which target: the one asked, else the one the device's blob was built
    // from, else the only one that holds the name.
    std::string spirv_ns;
    // The device's entry, read once: it names the target and holds the blob.
    Result<std::optional<Entry>> blob_entry = std::optional<Entry>();
    if (options.device) blob_entry = reader.get(options.device->ns.name(), name);
    // Its recipe, read once (it hashes its fields to check the entry's key).
    const Result<device::PipelineRecipe> recipe = blob_entry && *blob_entry
                                                      ? device::read_pipeline_recipe(**blob_entry)
                                                      : fail(Category::not_found, "no blob entry");
    if (!options.target.empty()) {
      spirv_ns = spirv_namespace(options.target).name();
    } else {
      if (recipe) spirv_ns = recipe->spirv_namespace;
      if (spirv_ns.empty()) {
        std::vector<std::string> holders;
        for (const auto& info : KCACHE_TRY(reader.namespace_records()))
          if (info.ns.backend == "spirv" && KCACHE_TRY(reader.get(info.ns.name(), name)))
            holders.push_back(info.ns.fingerprint);
        if (holders.size() > 1)
          return fail(Category::ambiguous, "kernel '{}' is stored for several targets ({}); name one", name,
                      join_targets(holders));
        if (holders.empty()) return fail(Category::not_found, "no kernel '{}' in the store", name);
        spirv_ns = spirv_namespace(holders.front()).name();
      }
    }
    auto stored = KCACHE_TRY(reader.get(spirv_ns, name));
    if (!stored) return fail(Category::not_found, "no kernel '{}' in {} of the store", name, spirv_ns);
    const Entry& e = *stored;
    k.name = e.kernel;
    k.key = e.key;
    k.key_id = e.key.id.hex();
    k.target = spirv_ns.substr(spirv_ns.find('/') + 1);
    k.spirv = KCACHE_TRY(spirv_words(e, spirv_ns));
    const std::string* stage = field(e.id_fields, "stage");
    const std::string* entry = field(e.id_fields, "entry");
    k.stage = stage ? *stage : "";
    k.entry_point = entry ? *entry : "main";
    k.spec = KCACHE_TRY(device::spec_values_from_fields(e));
    k.id_fields = e.id_fields;
    policy = definition::recorded_validate_policy(e.id_fields);
    if (options.device)
      KCACHE_CHECK(attach_blob(reader, *options.device, e, spirv_ns, blob_entry, recipe, m_trusted, k, recorded));
    return {};
  }));
  if (k.stage == "compute") KCACHE_CHECK(reflect_checked(k, policy, m_trusted, std::move(recorded)));
  return k;
}

Result<Kernel> Catalog::find_cuda(std::string_view name, int cc_major, int cc_minor) const {
  if (cc_major < 1 || cc_major > 99 || cc_minor < 0 || cc_minor > 9)
    return fail(Category::invalid_argument, "compute capability {}.{} is not one (e.g. 9.0)", cc_major, cc_minor);
  Kernel k;
  KCACHE_CHECK(m_store->read([&](store::Reader& reader) -> Result<void> {
    // The order of catalog.hpp: plain cubin, then plain PTX, then the
    // arch/family-specific variants; within each the highest version. Ties
    // cannot happen (one namespace per arch); the fingerprint still breaks
    // them so that the answer never depends on the order records are read.
    struct Candidate {
      CudaArch arch;
      Namespace ns;
    };
    auto better = [&](const Candidate& c, const Candidate& than) {
      if (c.arch != than.arch) return cuda_arch_preferred(c.arch, than.arch);
      return c.ns.fingerprint < than.ns.fingerprint;
    };
    std::optional<Candidate> best;
    std::vector<std::string> holders;
    for (const auto& info : KCACHE_TRY(reader.namespace_records())) {
      if (info.ns.backend != k_cuda_backend) continue;
      auto arch = parse_cuda_arch(info.ns.fingerprint);
      if (!arch) continue;
      // Existence first (cheap to read again below for the one chosen).
      if (!KCACHE_TRY(reader.get(info.ns.name(), name))) continue;
      holders.push_back(info.ns.fingerprint);
      if (!cuda_arch_runs_on(*arch, cc_major, cc_minor)) continue;
      if (Candidate c{*arch, info.ns}; !best || better(c, *best)) best = std::move(c);
    }
    if (holders.empty())
      return fail(Category::not_found, "no CUDA kernel '{}' in the store", util::shown_untrusted(name));
    if (!best)
      return fail(Category::not_found,
                  "CUDA kernel '{}' is stored for {}, none of which runs at compute capability {}.{}; build it for "
                  "sm_{}{} (manifest `arch`) or a compute_XY PTX at most {}.{}",
                  util::shown_untrusted(name), join_targets(holders), cc_major, cc_minor, cc_major, cc_minor, cc_major,
                  cc_minor);
    auto stored = KCACHE_TRY(reader.get(best->ns.name(), name));
    if (!stored) return fail(Category::not_found, "no kernel '{}' in {}", util::shown_untrusted(name), best->ns.name());
    Entry& e = *stored;
    const PayloadKind want = cuda_payload_kind(best->arch);
    const bool elf = e.payload.size() >= 4 && std::memcmp(e.payload.data(),
                                                          "\x7f"
                                                          "ELF",
                                                          4) == 0;
    const bool text = !e.payload.empty() && std::find(e.payload.begin(), e.payload.end(), 0) == e.payload.end();
    if (e.payload_kind != want || (want == PayloadKind::cubin && !elf) || (want == PayloadKind::ptx && !text))
      return fail(Category::corruption, "entry '{}' in {} is not the {} its namespace holds",
                  util::shown_untrusted(e.kernel), best->ns.name(), payload_kind_name(want));
    k.name = e.kernel;
    k.key = e.key;
    k.key_id = e.key.id.hex();
    k.target = best->ns.fingerprint;
    k.entry_point = cuda_function_symbol(e);
    k.function_symbol = k.entry_point;
    k.id_fields = e.id_fields;
    k.payload_kind = want;
    k.payload_size = e.payload.size();
    k.payload = std::move(e.payload);
    k.payload.push_back(0);  // PTX is handed to the driver as a C string
    return {};
  }));
  return k;
}

Result<void> Catalog::list_cuda(const std::function<bool(std::string_view name)>& visit) const {
  std::set<std::string, std::less<>> names;
  KCACHE_CHECK(m_store->read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespace_records())) {
      if (info.ns.backend != k_cuda_backend) continue;
      KCACHE_CHECK(reader.scan(info.ns.name(), [&](Entry&& e) {
        names.insert(std::move(e.kernel));
        return true;
      }));
    }
    return {};
  }));
  for (const auto& n : names)
    if (!visit(n)) break;
  return {};
}

Result<Kernel> Catalog::find_by_key(std::string_view key_id, const LookupOptions& options) const {
  auto id = util::Hash128::from_hex(key_id);
  if (!id) return fail(Category::invalid_argument, "key id '{}' is not 32 hex digits", key_id);
  std::optional<std::pair<std::string, std::string>> found;  // target, name
  KCACHE_CHECK(m_store->read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespace_records())) {
      if (info.ns.backend != "spirv" || (!options.target.empty() && info.ns.fingerprint != options.target)) continue;
      KCACHE_CHECK(reader.scan(info.ns.name(), [&](Entry&& e) {
        if (e.key.id == *id) found.emplace(info.ns.fingerprint, e.kernel);
        return !found;
      }));
      if (found) break;
    }
    return {};
  }));
  if (!found) return fail(Category::not_found, "no kernel with key id {} in the store", key_id);
  LookupOptions exact = options;
  exact.target = found->first;
  return find(found->second, exact);
}

}  // namespace kcache::runtime::detail
