// Writes the binary seed corpora of the fuzz targets (tests/fuzz/corpus/):
// small valid inputs, which start the fuzzer on the accepting paths, and
// broken ones (truncated, flipped, wrong version), which start it on each
// refusal. Deterministic: the same bytes every run, so the corpus in the tree
// is reproducible. Usage: fuzz_make_seeds CORPUS_DIR (scripts/fuzz --seeds).
// The manifest seeds are text and live in the tree as written by hand.
#include "fuzz_support.hpp"
#include "kcache/bundle/bundle.hpp"
#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/core/entry.hpp"
#include "kcache/core/failure.hpp"
#include "kcache/device/device.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace kcache;
using Bytes = std::vector<std::uint8_t>;
namespace fs = std::filesystem;

void write(const fs::path& dir, const std::string& name, const Bytes& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

Bytes truncated(Bytes b, std::size_t n) {
  b.resize(std::min(b.size(), n));
  return b;
}

Bytes flipped(Bytes b, std::size_t byte, std::uint8_t mask) {
  if (byte < b.size()) b[byte] ^= mask;
  return b;
}

Entry make_entry(int i, PayloadKind kind, Bytes payload) {
  Entry e;
  e.kernel = "saxpy[T=float,WIDTH=" + std::to_string(1 << i) + "]";
  e.key.id = util::hash_string("id " + e.kernel);
  e.key.ir = util::hash_string("ir " + e.kernel);
  e.id_fields = {{"name", e.kernel}, {"stage", "compute"}};
  e.ir_fields = {{"glslang", "15.1.0"}};
  e.inputs = {{"shaders/saxpy.comp", util::hash_string("source")}};
  e.payload_kind = kind;
  e.payload = std::move(payload);
  seal_payload(e);
  e.created = 1'700'000'000 + static_cast<std::uint64_t>(i);
  e.origin_detail = "fuzz seed";
  return e;
}

/// A SPIR-V header and a few words: enough to look like a module.
Bytes spirv_words(int variant) {
  Bytes b = {0x03, 0x02, 0x23, 0x07, 0x00, 0x05, 0x01, 0x00, 0x0b, 0x00,
             0x0d, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  for (int k = 0; k < 8; ++k) b.push_back(static_cast<std::uint8_t>(k * 17 + variant));
  return b;
}

/// A raw Vulkan pipeline-cache blob for the fixed device, `body` bytes after its header.
Bytes vulkan_blob(std::size_t body) {
  const auto& d = fuzz::fixed_device();
  Bytes b;
  auto u32 = [&](std::uint32_t v) {
    for (int k = 0; k < 4; ++k) b.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
  };
  u32(32);
  u32(1);
  u32(d.vendor_id);
  u32(d.device_id);
  b.insert(b.end(), d.pipeline_cache_uuid.begin(), d.pipeline_cache_uuid.end());
  for (std::size_t k = 0; k < body; ++k) b.push_back(static_cast<std::uint8_t>(k));
  return b;
}

/// Format 2 by default: the seeds made before format 3 stay as they were.
Bytes bundle_of(const std::vector<Entry>& entries, const bundle::KeyPair* sign, int format_version = 2) {
  const auto& ns = fuzz::fixed_device().ns;
  auto header = bundle::make_header(ns, {{"kcache", "0.1.0"}}, 1'700'000'000, entries);
  bundle::WriteOptions options;
  options.level = 3;
  options.window_log = 16;
  options.block_bytes = 200;  // several frames even for a few small entries
  options.sign = sign;
  options.format_version = format_version;
  std::ostringstream out(std::ios::binary);
  if (!bundle::write_bundle(out, header, bundle::entries_from(entries), options)) std::abort();
  auto s = out.str();
  return Bytes(s.begin(), s.end());
}

/// A bundle the writer would refuse (issue 14: what its entries say is
/// hostile), assembled with correct digests so the reader's checks, not a
/// digest, refuse it: one block, unsigned, format version 1.
Bytes hostile_bundle_of(const Namespace& ns, const std::vector<Entry>& entries) {
  auto h = bundle::make_header(ns, {{"kcache", "0.1.0"}}, 1'700'000'000, entries);
  h.format_version = 1;
  h.compression = {3, 16, false, 200};
  h.block_entry_counts = {static_cast<std::uint32_t>(entries.size())};
  Bytes records;
  for (const auto& e : entries) {
    auto r = encode_entry(e);
    records.insert(records.end(), r.begin(), r.end());
  }
  Bytes out = bundle::internal::encode_head(h);
  auto frame = bundle::internal::compress_frame(records, 3, 16, true);
  out.insert(out.end(), frame.begin(), frame.end());
  bundle::internal::append_trailer(out);
  return out;
}

/// The compute module of seed_compute.comp (beside the corpus folder).
Bytes compute_module(const fs::path& corpus) {
  std::ifstream in(corpus.parent_path() / "seed_compute.spv", std::ios::binary);
  Bytes b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (b.size() < 20 || b.size() % 4 != 0) {
    std::fprintf(stderr, "fuzz_make_seeds: no seed_compute.spv beside %s\n", corpus.c_str());
    std::exit(1);
  }
  return b;
}

/// The word index of the first instruction with `opcode` in `module`.
std::size_t find_op(const Bytes& module, std::uint32_t opcode) {
  auto word = [&](std::size_t i) {
    std::uint32_t w = 0;
    std::memcpy(&w, module.data() + 4 * i, 4);
    return w;
  };
  for (std::size_t i = 5; i < module.size() / 4 && (word(i) >> 16) != 0; i += word(i) >> 16)
    if ((word(i) & 0xffffu) == opcode) return i;
  std::abort();
}

Bytes with_word(Bytes module, std::size_t index, std::uint32_t value) {
  std::memcpy(module.data() + 4 * index, &value, 4);
  return module;
}

/// An input for a FuzzedDataProvider: `front` is what ConsumeBytes and
/// strings read (from the start), `integrals` the bytes ConsumeIntegral
/// reads, in the order it reads them (from the end).
Bytes provider_input(Bytes front, const std::vector<std::uint8_t>& integrals) {
  front.insert(front.end(), integrals.rbegin(), integrals.rend());
  return front;
}

Bytes prefixed(std::uint8_t first, const Bytes& rest) {
  Bytes b{first};
  b.insert(b.end(), rest.begin(), rest.end());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  const auto& device = fuzz::fixed_device();
  std::vector<Entry> entries;
  for (int i = 0; i < 3; ++i) entries.push_back(make_entry(i, PayloadKind::spirv, spirv_words(i)));
  entries.push_back(make_entry(3, PayloadKind::pipeline_cache, device::wrap_blob(device, vulkan_blob(24))));

  // Entry records.
  const fs::path ed = root / "entry_decoder";
  const Bytes spirv_record = encode_entry(entries[0]);
  const Bytes blob_record = encode_entry(entries[3]);
  write(ed, "valid_spirv", spirv_record);
  write(ed, "valid_pipeline_cache", blob_record);
  write(ed, "valid_empty", encode_entry(Entry{}));
  write(ed, "truncated_half", truncated(spirv_record, spirv_record.size() / 2));
  write(ed, "bad_magic", flipped(spirv_record, 0, 0x20));
  write(ed, "version_2", flipped(spirv_record, 4, 0x03));
  write(ed, "flipped_payload", flipped(spirv_record, spirv_record.size() - 60, 0x01));
  {
    Entry flagged = entries[1];
    flagged.id_fields.emplace_back("validate", "known");
    flagged.validation = Validation::validator_unsupported;
    flagged.validation_note = "Invalid capability operand: 6912";
    write(ed, "valid_validator_unsupported", encode_entry(flagged));
    flagged.validation = Validation::not_validated;
    flagged.validation_note.clear();
    flagged.id_fields.back().second = "off";
    write(ed, "valid_not_validated", encode_entry(flagged));
    Entry warned = entries[2];
    warned.diagnostics =
        "k2.comp:3: warning: '#extension' : extension not supported: GL_FOO_bar\nk2.comp:9: warning: w";
    write(ed, "valid_diagnostics", encode_entry(warned));  // record version 3
  }
  // Failure records (core/failure.hpp): valid ones of each phase, broken ones.
  {
    const fs::path fd = root / "failure_decoder";
    Failure f;
    f.kernel = "saxpy[T=half]";
    f.phase = FailurePhase::spirv_val;
    f.key = {util::hash_string("id"), util::hash_string("ir")};
    f.id_fields = {{"name", f.kernel}, {"source", "shaders/saxpy.comp"}};
    f.ir_fields = {{"glslang", "12.0.0"}};
    f.inputs = {{"shaders/saxpy.comp", util::hash_string("source")}};
    f.category = Category::validation_failed;
    f.message = "spirv-val rejected the module:\n  %12 = OpLoad";
    f.created = 1'700'000'000;
    f.origin_detail = "fuzz seed";
    const Bytes record = encode_failure(f);
    write(fd, "valid_spirv_val", record);
    Failure pipeline = f;
    pipeline.phase = FailurePhase::pipeline;
    pipeline.ir_known = false;
    pipeline.key.ir = {};
    write(fd, "valid_pipeline_unknown_ir", encode_failure(pipeline));
    write(fd, "valid_empty", encode_failure(Failure{}));
    write(fd, "truncated_half", truncated(record, record.size() / 2));
    write(fd, "bad_magic", flipped(record, 0, 0x20));
    write(fd, "version_2", flipped(record, 4, 0x03));
    Failure hostile = f;
    hostile.inputs.push_back({"../../etc/shadow", util::hash_string("x")});
    write(fd, "hostile_dotdot_input", encode_failure(hostile));
  }

  // Records that decode but that validate_entry_record refuses (issue 14),
  // and one that it accepts with every kind of recorded path.
  Entry paths = entries[1];
  paths.id_fields = {{"name", paths.kernel},
                     {"source", "shaders/saxpy.comp"},
                     {"include_dir:0", "."},
                     {"include_dir:1", "inc"},
                     {"define:T", "float"}};
  paths.inputs.push_back({"inc/common.glsl", util::hash_string("common")});
  write(ed, "valid_recorded_paths", encode_entry(paths));
  Entry hostile = entries[0];
  hostile.inputs.push_back({"/dev/zero", util::hash_string("zero")});
  write(ed, "hostile_absolute_input", encode_entry(hostile));
  hostile = entries[0];
  hostile.inputs[0].path = "shaders/../../etc/shadow";
  write(ed, "hostile_dotdot_input", encode_entry(hostile));
  hostile = entries[0];
  hostile.id_fields.emplace_back("source", "/etc/shadow");
  write(ed, "hostile_source_field", encode_entry(hostile));
  hostile = entries[0];
  hostile.kernel = "saxpy\x1b]0;pwned\x07[T=float]";
  write(ed, "hostile_kernel_name", encode_entry(hostile));
  hostile = entries[0];
  hostile.ir_fields.emplace_back("glslang", "15\n1");
  write(ed, "hostile_field_value", encode_entry(hostile));

  // Bundles.
  std::array<std::uint8_t, 32> seed;
  seed.fill(0x11);
  const auto key = bundle::keypair_from_seed(seed);
  const fs::path br = root / "bundle_reader";
  const Bytes unsigned_bundle = bundle_of(entries, nullptr);
  const Bytes signed_bundle = bundle_of(entries, &key);
  write(br, "valid_unsigned", unsigned_bundle);
  write(br, "valid_signed", signed_bundle);
  write(br, "valid_empty", bundle_of({}, nullptr));
  write(br, "truncated_head", truncated(unsigned_bundle, 40));
  write(br, "truncated_payload", truncated(unsigned_bundle, unsigned_bundle.size() - 60));
  write(br, "flipped_header", flipped(unsigned_bundle, 30, 0x04));
  write(br, "flipped_signature", flipped(signed_bundle, signed_bundle.size() / 3, 0x80));
  write(br, "version_4", flipped(unsigned_bundle, 4, 0x06));  // 2 -> 4
  // Format version 1 stays readable (and fuzzed): bundles of kcache 0.1.
  write(br, "valid_v1_unsigned", bundle_of(entries, nullptr, 1));
  write(br, "valid_v1_signed", bundle_of(entries, &key, 1));
  // Format version 3: SPIR-V operands delta-coded (FORMAT.md "Record transform").
  write(br, "valid_v3_unsigned", bundle_of(entries, nullptr, 3));
  write(br, "valid_v3_signed", bundle_of(entries, &key, 3));
  Bytes trailing = unsigned_bundle;
  trailing.push_back(0);
  write(br, "trailing_byte", trailing);
  // Issue 14: well-formed bundles whose entries say something hostile.
  std::vector<Entry> bad = {entries[0], entries[1]};
  bad[1].inputs.push_back({"/dev/zero", util::hash_string("zero")});
  write(br, "hostile_input_path", hostile_bundle_of(device.ns, bad));
  // The same through format 2's record transform (the writer leaves record
  // checks to the reader, so it writes this).
  write(br, "hostile_input_path_v2", bundle_of(bad, nullptr));
  bad = {entries[0], entries[1]};
  bad[0].kernel = "saxpy\x1b[2J[T=float]";
  write(br, "hostile_kernel_name", hostile_bundle_of(device.ns, bad));
  write(br, "hostile_spirv_target", hostile_bundle_of(spirv_namespace("vulkan9.9"), {entries[0], entries[1]}));

  // Pipeline-cache blobs: raw and wrapped.
  const fs::path pc = root / "pipeline_cache_header";
  const Bytes raw = vulkan_blob(16);
  const Bytes wrapped = device::wrap_blob(device, raw);
  write(pc, "valid_raw", raw);
  write(pc, "valid_wrapped", wrapped);
  write(pc, "header_only", vulkan_blob(0));
  write(pc, "truncated_header", truncated(raw, 20));
  write(pc, "bad_header_size", flipped(raw, 0, 0x40));
  write(pc, "foreign_uuid", flipped(raw, 20, 0x01));
  write(pc, "wrapped_bad_digest", flipped(wrapped, wrapped.size() - 1, 0x01));
  write(pc, "wrapped_bad_length", flipped(wrapped, 32, 0x01));

  // The runtime's lookups (issue 27 item 2): a valid compute module, and the
  // same with a result id past its bound (OpTypeVoid's, the SPIRV-Cross
  // crash) and with an operand past it (OpEntryPoint's function).
  const Bytes module = compute_module(root);
  std::uint32_t bound = 0;
  std::memcpy(&bound, module.data() + 12, 4);
  const Bytes id_past_bound = with_word(module, find_op(module, 19) + 1, bound + 7);
  const Bytes operand_past_bound = with_word(module, find_op(module, 15) + 2, bound + 3);
  const fs::path rr = root / "runtime_record";
  write(rr, "module_valid", prefixed(1, module));
  write(rr, "module_result_id_past_bound", prefixed(1, id_past_bound));
  write(rr, "module_result_id_past_bound_unvalidated", prefixed(3, id_past_bound));
  write(rr, "module_operand_past_bound", prefixed(1, operand_past_bound));
  write(rr, "module_operand_past_bound_unvalidated", prefixed(3, operand_past_bound));
  write(rr, "module_truncated", prefixed(1, truncated(module, module.size() / 2 / 4 * 4)));
  {
    Entry compute = make_entry(0, PayloadKind::spirv, module);
    compute.id_fields = {{"name", compute.kernel},
                         {"entry", "main"},
                         {"stage", "compute"},
                         {"spec_constant:0", "int:64"},
                         {"spec_constant:1", "int:-3"}};
    write(rr, "record_valid", prefixed(0, encode_entry(compute)));
    compute.payload = id_past_bound;
    seal_payload(compute);
    write(rr, "record_result_id_past_bound", prefixed(0, encode_entry(compute)));
    compute.id_fields.emplace_back("validate", "off");
    compute.validation = Validation::not_validated;
    write(rr, "record_result_id_past_bound_unvalidated", prefixed(0, encode_entry(compute)));
  }

  // Embedded tables (fuzz_embedded_table.cpp reads them): the integral
  // choices in the order the target makes them — target, kernel count, then
  // per kernel name, key id, key ir, stage, entry point, spec constant count,
  // magic, module length (3 bytes for one kernel, 2 for several).
  const fs::path et = root / "embedded_table";
  auto one_kernel = [](const Bytes& m, std::uint8_t stage) {
    const auto n = static_cast<std::uint32_t>(m.size());
    return provider_input(m, {0, 1, 2, 0, 0, stage, 0, 0, 1, static_cast<std::uint8_t>(n >> 16),
                              static_cast<std::uint8_t>(n >> 8), static_cast<std::uint8_t>(n)});
  };
  write(et, "compute_valid", one_kernel(module, 0));
  write(et, "compute_result_id_past_bound", one_kernel(id_past_bound, 0));
  write(et, "compute_operand_past_bound", one_kernel(operand_past_bound, 0));
  write(et, "unreflected_stage", one_kernel(id_past_bound, 1));
  {
    Bytes two = module;
    two.insert(two.end(), id_past_bound.begin(), id_past_bound.end());
    const auto n = static_cast<std::uint16_t>(module.size());
    write(et, "two_kernels",
          provider_input(two, {0,
                               2,
                               0,
                               0,
                               0,
                               0,
                               0,
                               0,
                               1,
                               static_cast<std::uint8_t>(n >> 8),
                               static_cast<std::uint8_t>(n),
                               1,
                               1,
                               0,
                               0,
                               0,
                               0,
                               1,
                               static_cast<std::uint8_t>(n >> 8),
                               static_cast<std::uint8_t>(n)}));
  }
  return 0;
}
