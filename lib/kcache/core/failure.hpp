// The failure record: a kernel that failed to build, remembered under its
// key so that a warm build reports it without compiling again until an input
// changes (docs/design.md "Remembered failures"). Its own record kind, never
// an entry: stores keep it in their own database (store/layout_internal.hpp
// "failures"), bundles never carry it.
//
// Failure record format, version 1 (all integers little-endian; str = u32
// length + UTF-8 bytes; h128 = 16 raw bytes):
//
//   field            type         meaning
//   magic            4 bytes      "KCX\x01"
//   version          u16          record format version (1)
//   kernel           str          kernel name, variant suffix included
//   phase            u8           where it failed: 1 expand, 2 glslang (parse,
//                                 link, SPIR-V generation), 3 spirv-opt,
//                                 4 spirv-val, 5 pipeline (device stage),
//                                 6 nvrtc (CUDA stage: NVRTC rejected it)
//   key.id           h128         identity hash, as the entry would have had
//   key.ir           h128         content hash; all zero when not known
//                                 (ir_known = 0: the failure came before it)
//   ir_known         u8           1 when key.ir is meaningful, else 0
//   n_id_fields      u32          then n × (str name, str value): what `id` hashed
//   n_ir_fields      u32          then n × (str name, str value): what `ir`
//                                 hashed (toolchain fields included); for the
//                                 device stage, the pipeline recipe's fields
//   n_inputs         u32          then n × (str path, h128 content hash): the
//                                 files the failed attempt read, relative to
//                                 the manifest's folder
//   category         str          the error's category name ("compile_failed",
//                                 "validation_failed", ...: util/error.hpp)
//   message          str          the error message, at most k_max_failure_message
//                                 bytes (longer ones are cut when recorded)
//   created          u64          unix seconds when the attempt failed
//   origin_detail    str          host and tool that tried ("kcache 0.1.0 on host")
//   record_digest    h128         XXH3-128 of every byte above
//
// Persisted enum values (phase) are append-only. A new field is appended
// before record_digest and bumps the version; readers accept versions
// k_failure_min_version..k_failure_max_version and refuse a newer one by name
// (version_mismatch). Golden file of version 1:
// tests/data/failure/failure-v1.kcx (tests/unit/test_core_failure.cpp).
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache {

/// Where a build attempt failed. Persisted (u8) in failure records.
enum class FailurePhase : std::uint8_t {
  expand = 1,
  glslang = 2,
  spirv_opt = 3,
  spirv_val = 4,
  pipeline = 5,
  nvrtc = 6
};
/// "expand", "glslang", "spirv-opt", "spirv-val", "pipeline", "nvrtc" (text and JSON).
std::string_view failure_phase_name(FailurePhase phase);

/// A remembered failure: what was tried (key, fields, inputs) and why it failed.
struct Failure {
  std::string kernel;
  FailurePhase phase = FailurePhase::glslang;
  Key key;               ///< key.ir is meaningful only when ir_known
  bool ir_known = true;  ///< false when the attempt failed before the ir could be computed
  std::vector<Field> id_fields;
  std::vector<Field> ir_fields;
  std::vector<InputFile> inputs;
  Category category = Category::compile_failed;
  std::string message;
  std::uint64_t created = 0;
  std::string origin_detail;

  bool operator==(const Failure&) const = default;
};

inline constexpr std::uint16_t k_failure_min_version = 1;
inline constexpr std::uint16_t k_failure_max_version = 1;
/// Longest message a failure record keeps: enough for a screenful of
/// compiler errors; a longer one is cut (bound_failure_message).
inline constexpr std::size_t k_max_failure_message = 16u << 10;

/// `message` cut to at most k_max_failure_message bytes at a UTF-8 character
/// boundary, with a note saying how many bytes were left out.
std::string bound_failure_message(std::string_view message);

/// The category whose category_name() is `name`, or nullopt.
std::optional<Category> category_from_name(std::string_view name);

/// Encodes a failure in the current record version (message bounded by
/// bound_failure_message, so every encoded record decodes).
std::vector<std::uint8_t> encode_failure(const Failure& failure);

/// Decodes and checks a record from untrusted bytes: corruption for a bad
/// magic, truncation, trailing bytes, an unknown phase or category, a
/// message over k_max_failure_message bytes, oversized lists or a digest
/// mismatch; version_mismatch for a version outside the supported range.
/// What the record says (names, paths) is then checked by
/// validate_failure_record before it is believed.
Result<Failure> decode_failure(std::span<const std::uint8_t> bytes);

/// Checks what a decoded failure says, by the rules validate_entry_record
/// applies to entries (validate_entry_record: kernel name, field lists,
/// contained input paths, origin). The message may hold newlines (compiler
/// logs): it is escaped where printed. corruption naming the first problem.
Result<void> validate_failure_record(const Failure& failure);

}  // namespace kcache
