// The checks every imported entry passes: its record binds its key and name, its payload fits its namespace and
// target, a SPIR-V module passes spirv-val under the validation policy this import accepts.
#include "kcache/transfer/import_internal.hpp"

#include "kcache/compile/compiler.hpp"
#include "kcache/core/cuda.hpp"
#include "kcache/core/key_binding.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/util/text.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace kcache::transfer {
namespace internal {
namespace {

Result<std::vector<std::uint8_t>> check_payload(const Entry& e, const Namespace& bundle_ns,
                                                const FingerprintRecord& target, definition::ValidatePolicy allow,
                                                PayloadChecked* flag, bool signed_by_trusted = false) {
  // The record's fields must be the ones its key was made of (the key binds
  // everything): otherwise it could serve another entry point,
  // specialization or policy under a key every check calls fresh. And they
  // must describe the kernel it is filed under, not another variant.
  auto bound = check_key_binding(e).and_then([&] { return check_name_fields(e.kernel, e.id_fields); });
  KCACHE_CHECK(std::move(bound).map_error([](Error err) { return Error{Category::validation_failed, err.message}; }));
  // A cubin or PTX: its bytes must be what its namespace's arch runs
  // (core/cuda.hpp check_cuda_payload); loading it is the device's check.
  if (bundle_ns.backend == k_cuda_backend) {
    // Its lowered name is what the runtime resolves: a kernel entry of these bytes.
    KCACHE_CHECK(check_cuda_payload(e.payload_kind, bundle_ns.fingerprint, e.payload)
                     .and_then([&] { return check_cuda_symbol(e.payload_kind, e.payload, cuda_function_symbol(e)); })
                     .map_error([](Error err) {
                       return Error{Category::validation_failed, err.message};
                     }));
    return std::vector<std::uint8_t>{};
  }
  if (bundle_ns.backend == "spirv") {
    if (e.payload_kind != PayloadKind::spirv)
      return fail(Category::validation_failed, "a pipeline-cache blob in a spirv namespace");
    // Under the policy its id fields record (README "validate"): a module
    // stored with validate = "known" may use what this spirv-val does not
    // know; one stored with "off" is checked for structure only.
    const auto policy = definition::recorded_validate_policy(e.id_fields);
    // The record's policy is its own claim: one weaker than the importer
    // allows is refused, never believed (the stricter of the two applies).
    if (policy > allow)
      return fail(Category::validation_failed,
                  "its entry asks for validate = \"{}\" ({}), and this import accepts at most \"{}\": pass "
                  "--allow-validate {} to accept it, or import a bundle signed by a key you --trust",
                  definition::validate_policy_name(policy),
                  policy == definition::ValidatePolicy::off ? "its module checked for structure only"
                                                            : "what spirv-val does not know accepted",
                  definition::validate_policy_name(allow), definition::validate_policy_name(policy));
    // Refused before its words are copied: spirv-val would refuse it anyway.
    if (policy != definition::ValidatePolicy::off && e.payload.size() > compile::k_max_validated_module_bytes)
      return fail(Category::validation_failed, "the module is {} ({} bytes), over the {} spirv-val may check",
                  util::human_bytes(e.payload.size()), e.payload.size(),
                  util::human_bytes(compile::k_max_validated_module_bytes));
    auto words = KCACHE_TRY(compile::spirv_words(e.payload));
    // A trusted signer's build validated it under that policy, and the
    // signature binds its record: checked once, where it was made.
    if (signed_by_trusted) return std::vector<std::uint8_t>{};
    std::string note;
    const Validation found = KCACHE_TRY(compile::validate_under(words, bundle_ns.fingerprint, policy, &note));
    if (flag) flag->validation = found, flag->note = std::move(note);
    return std::vector<std::uint8_t>{};
  }
  if (e.payload_kind != PayloadKind::pipeline_cache)
    return fail(Category::validation_failed, "a SPIR-V module in a vulkan namespace (expected a pipeline-cache blob)");
  if (has_per_card_fields(bundle_ns.record)) return device::rewrap_schema1_blob(e.payload, bundle_ns.record);
  KCACHE_CHECK(device::check_blob_against_record(e.payload, target));
  return std::vector<std::uint8_t>{};
}

}  // namespace

Result<PayloadChecked> check_for_import(const Entry& e, const Namespace& ns, const FingerprintRecord& target,
                                        const EntryRules& rules) {
  // A build dated in the future would outrank every later honest one (the
  // rollback rule below) until that date: the remote tier's rule.
  KCACHE_CHECK(check_not_future(e.created, rules.now, "the entry was built"));
  PayloadChecked out;
  out.payload = KCACHE_TRY(check_payload(e, ns, target, rules.allow, &out));
  if (rules.modules && e.payload_kind == PayloadKind::pipeline_cache)
    KCACHE_CHECK(check_pipeline_module(e, *rules.modules));
  return out;
}

/// What validating an entry of `payload` bytes may hold: the entry, and for
/// a module its words and spirv-val's working set, which grows with the
/// instruction count (about 150 bytes per one-word instruction, so 40x the
/// module at worst, within compile::k_max_validated_instructions).
std::uint64_t validation_cost(PayloadKind kind, std::uint64_t payload) {
  if (kind != PayloadKind::spirv || payload > compile::k_max_validated_module_bytes) return payload;
  return 2 * payload +
         std::min<std::uint64_t>(40 * payload, 160 * std::uint64_t{compile::k_max_validated_instructions});
}

}  // namespace internal

Result<std::vector<std::uint8_t>> check_entry_payload(const Entry& e, const Namespace& bundle_ns,
                                                      const FingerprintRecord& target, bool signed_by_trusted) {
  // A remote value is asked for by the key a build here computed, so the
  // policy its key binds is this manifest's own: any is accepted.
  return internal::check_payload(e, bundle_ns, target, definition::ValidatePolicy::off, nullptr, signed_by_trusted);
}

}  // namespace kcache::transfer
