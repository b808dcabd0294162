// The validator side of the compile module (contracts in compiler.hpp):
// spirv-val, the structure check of validate = "off", and the helpers around
// them. Kept apart from compiler.cpp so that its users (import, verify, the
// runtime before it reflects a module) link SPIRV-Tools without glslang.
#include "kcache/compile/compiler.hpp"
#include "kcache/compile/validate_internal.hpp"
#include "kcache/util/text.hpp"

#define SPV_ENABLE_UTILITY_CODE  // SpvHasResultAndType
#include <spirv/unified1/spirv.h>
#include <spirv-tools/libspirv.hpp>

#include <fmt/format.h>

#include <array>
#include <cstring>

namespace kcache::compile {

const SpirvTarget& target_row(std::string_view target) {
  const SpirvTarget* t = find_spirv_target(target);
  return t ? *t : *find_spirv_target("vulkan1.2");
}

spv_target_env tools_env(std::string_view target) {
  // SPIRV-Tools names its environments in an enum with no order to compute
  // from: one per Vulkan minor version of core's target table.
  static constexpr std::array<spv_target_env, 4> by_vulkan_minor = {SPV_ENV_VULKAN_1_0, SPV_ENV_VULKAN_1_1,
                                                                    SPV_ENV_VULKAN_1_2, SPV_ENV_VULKAN_1_3};
  static_assert(by_vulkan_minor.size() == k_spirv_targets.size());
  return by_vulkan_minor[static_cast<std::size_t>(target_row(target).vulkan_minor)];
}

bool is_unsupported_by_validator(std::string_view message) {
  for (std::string_view marker : {"Invalid capability operand", "Invalid opcode", "Invalid extension operand",
                                  "is not supported", "Unknown", "unknown"})
    if (message.find(marker) != std::string_view::npos) return true;
  return false;
}

Result<void> validate(std::span<const std::uint32_t> spirv, std::string_view target) {
  if (auto bytes = spirv.size_bytes(); bytes > k_max_validated_module_bytes)
    return fail(Category::validation_failed,
                "the module is {} ({} bytes), over the {} spirv-val may check within kcache's memory bound",
                util::human_bytes(bytes), bytes, util::human_bytes(k_max_validated_module_bytes));
  // One pass over the word counts; a malformed count ends it, and spirv-val
  // reports that module for what it is.
  std::size_t instructions = 0;
  for (std::size_t i = 5; i < spirv.size() && (spirv[i] >> 16) != 0; i += spirv[i] >> 16)
    if (++instructions > k_max_validated_instructions)
      return fail(Category::validation_failed,
                  "the module has over {} instructions, more than spirv-val may check within kcache's memory bound",
                  k_max_validated_instructions);
  spvtools::SpirvTools tools(tools_env(target));
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t level, const char*, const spv_position_t&, const char* m) {
    if (level <= SPV_MSG_ERROR) messages.append(m).append("\n");
  });
  spvtools::ValidatorOptions options;
  if (tools.Validate(spirv.data(), spirv.size(), options)) return {};
  while (!messages.empty() && messages.back() == '\n') messages.pop_back();
  if (is_unsupported_by_validator(messages))
    return fail(Category::validator_unsupported,
                "spirv-val ({}) does not know something the module uses (not necessarily invalid): {}",
                spvSoftwareVersionString(), messages);
  return fail(Category::validation_failed, "spirv-val rejected the module: {}", messages);
}

Result<Validation> validate_under(std::span<const std::uint32_t> spirv, std::string_view target,
                                  definition::ValidatePolicy policy, std::string* note) {
  if (policy == definition::ValidatePolicy::off) {
    KCACHE_CHECK(check_structure(spirv));
    return Validation::not_validated;
  }
  auto valid = validate(spirv, target);
  if (valid) return Validation::validated;
  if (valid.error().category == Category::validator_unsupported && policy == definition::ValidatePolicy::known) {
    // spirv-val stopped at what it did not know, before checking ids.
    KCACHE_CHECK(check_structure(spirv));
    if (note) *note = validation_note(valid.error().message);
    return Validation::validator_unsupported;
  }
  return tl::unexpected(std::move(valid).error());
}

Result<void> check_structure(std::span<const std::uint32_t> spirv) {
  if (spirv.size() < 5 || spirv[0] != 0x07230203u)
    return fail(Category::validation_failed, "not a SPIR-V module (no 5-word header with the magic number)");
  const std::uint32_t bound = spirv[3];
  if (bound == 0 || bound > (1u << 22))
    return fail(Category::validation_failed, "SPIR-V header: id bound {} is out of range", bound);
  for (std::size_t i = 5; i < spirv.size();) {
    const std::uint32_t count = spirv[i] >> 16;
    if (count == 0 || count > spirv.size() - i)
      return fail(Category::validation_failed, "SPIR-V instruction at word {} has word count {} ({} words left)", i,
                  count, spirv.size() - i);
    // Readers size their tables by the bound and index them by result id
    // (SPIRV-Cross does, unchecked: issue 27 item 2), so an id at or past
    // the bound is what turns a damaged module into a crash. Opcodes the
    // headers do not know are skipped: "off" is for modules newer than the
    // validator, and their ids are checked by whatever validates them later.
    bool has_result = false, has_type = false;
    SpvHasResultAndType(static_cast<SpvOp>(spirv[i] & 0xffffu), &has_result, &has_type);
    const std::uint32_t operands = (has_result ? 1u : 0u) + (has_type ? 1u : 0u);
    if (count < 1 + operands)
      return fail(Category::validation_failed, "SPIR-V instruction at word {} (opcode {}) is too short for its result",
                  i, spirv[i] & 0xffffu);
    for (std::uint32_t k = 1; k <= operands; ++k)
      if (spirv[i + k] == 0 || spirv[i + k] >= bound)
        return fail(Category::validation_failed,
                    "SPIR-V instruction at word {} (opcode {}) names id {}, outside the header's id bound {}", i,
                    spirv[i] & 0xffffu, spirv[i + k], bound);
    i += count;
  }
  return {};
}

std::string validation_note(std::string_view message) {
  std::string out;
  for (char c : message) {
    const auto b = static_cast<unsigned char>(c);
    const char shown = b < 0x20 || b == 0x7f ? ' ' : c;
    if (shown == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += shown;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > 1024) {
    std::size_t cut = 1024;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;  // a character boundary
    out.resize(cut);
    out += "...";
  }
  return out;
}

Result<std::vector<std::uint32_t>> spirv_words(std::span<const std::uint8_t> bytes) {
  if (bytes.size() % 4 != 0 || bytes.size() < 20)
    return fail(Category::corruption, "SPIR-V module of {} bytes is not a whole number of words", bytes.size());
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  if (words[0] != 0x07230203u) return fail(Category::corruption, "not a SPIR-V module (bad magic number)");
  return words;
}

}  // namespace kcache::compile
