#include "kcache/device/limits.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <map>
#include <set>

namespace kcache::device {
namespace {

// SPIR-V opcodes, decorations and enums this reader needs (SPIR-V spec 3.x).
enum : std::uint32_t {
  op_entry_point = 15,
  op_execution_mode = 16,
  op_type_bool = 20,
  op_type_int = 21,
  op_type_float = 22,
  op_type_vector = 23,
  op_type_matrix = 24,
  op_type_array = 28,
  op_type_struct = 30,
  op_type_pointer = 32,
  op_spec_constant_true = 48,
  op_spec_constant_false = 49,
  op_constant = 43,
  op_constant_composite = 44,
  op_spec_constant = 50,
  op_spec_constant_composite = 51,
  op_variable = 59,
  op_decorate = 71,
  op_execution_mode_id = 331,
  decoration_spec_id = 1,
  decoration_builtin = 11,
  builtin_workgroup_size = 25,
  mode_local_size = 17,
  mode_local_size_id = 38,
  storage_workgroup = 4,
};

struct Constant {
  std::uint32_t value = 0;
  bool spec = false;
};

std::string literal_string(std::span<const std::uint32_t> words) {
  std::string s;
  for (std::uint32_t w : words)
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((w >> (8 * b)) & 0xff);
      if (c == '\0') return s;
      s += c;
    }
  return s;
}

std::string spec_text(const SpecSource& s) {
  return fmt::format("spec constant {} ({})", s.spec_id, s.set ? "set by the manifest" : "not set: its default");
}

// Calls fn(opcode, operands) for each instruction after the header;
// invalid_argument for a module that is not SPIR-V or is truncated.
template <typename Fn>
Result<void> for_each_instruction(std::span<const std::uint32_t> spirv, Fn&& fn) {
  if (spirv.size() < 5 || spirv[0] != 0x07230203u)
    return fail(Category::invalid_argument, "not a SPIR-V module (bad magic number or too short)");
  for (std::size_t at = 5; at < spirv.size();) {
    const std::uint32_t op = spirv[at] & 0xffff, count = spirv[at] >> 16;
    if (count == 0 || at + count > spirv.size())
      return fail(Category::invalid_argument, "SPIR-V module is truncated at word {}", at);
    fn(op, spirv.subspan(at + 1, count - 1));
    at += count;
  }
  return {};
}

}  // namespace

Result<std::vector<SpecDefault>> spec_defaults(std::span<const std::uint32_t> spirv) {
  struct IntType {
    std::uint32_t width = 32;
    bool is_signed = false;
  };
  struct Declared {
    std::uint32_t result = 0;
    std::uint64_t bits = 0;
  };
  std::map<std::uint32_t, IntType> ints;            // OpTypeInt result → width, signedness
  std::map<std::uint32_t, std::uint32_t> spec_ids;  // result → SpecId
  std::vector<Declared> constants;                  // spec constants in declaration order
  std::set<std::uint32_t> workgroup_operands;       // results that size the workgroup
  std::optional<std::uint32_t> builtin;             // the WorkgroupSize built-in's result
  std::map<std::uint32_t, std::vector<std::uint32_t>> composites;
  KCACHE_CHECK(for_each_instruction(spirv, [&](std::uint32_t op, std::span<const std::uint32_t> w) {
    switch (op) {
      case op_type_int:
        if (w.size() >= 3) ints[w[0]] = {w[1], w[2] != 0};
        break;
      case op_decorate:
        if (w.size() >= 3 && w[1] == decoration_spec_id) spec_ids[w[0]] = w[2];
        if (w.size() >= 3 && w[1] == decoration_builtin && w[2] == builtin_workgroup_size) builtin = w[0];
        break;
      case op_execution_mode_id:
        if (w.size() >= 5 && w[1] == mode_local_size_id) workgroup_operands.insert(w.begin() + 2, w.begin() + 5);
        break;
      case op_spec_constant_true:
      case op_spec_constant_false:
        if (w.size() >= 2) constants.push_back({w[1], op == op_spec_constant_true ? 1u : 0u});
        break;
      case op_spec_constant: {
        if (w.size() < 3) break;
        std::uint64_t bits = w[2];
        if (w.size() >= 4) bits |= std::uint64_t{w[3]} << 32;
        // A signed literal narrower than 64 bits is sign-extended (SpecValue's rule).
        // (A width outside 1..63 is not SPIR-V's; nothing to extend, and a
        // shift by 64 would be undefined.)
        if (auto t = ints.find(w[0]);
            t != ints.end() && t->second.is_signed && t->second.width > 0 && t->second.width < 64) {
          const unsigned shift = 64 - t->second.width;
          bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(bits << shift) >> shift);
        }
        constants.push_back({w[1], bits});
        break;
      }
      case op_spec_constant_composite:
        if (w.size() >= 2) composites[w[1]] = std::vector<std::uint32_t>(w.begin() + 2, w.end());
        break;
      default: break;
    }
  }));
  if (builtin)
    if (auto it = composites.find(*builtin); it != composites.end())
      workgroup_operands.insert(it->second.begin(), it->second.end());

  struct Chosen {
    std::uint64_t bits = 0;
    bool sizes_workgroup = true;
  };
  std::map<std::uint32_t, Chosen> chosen;
  for (const auto& c : constants) {
    auto id = spec_ids.find(c.result);
    if (id == spec_ids.end()) continue;
    const bool sizes_workgroup = workgroup_operands.count(c.result) > 0;
    auto [it, inserted] = chosen.try_emplace(id->second, Chosen{c.bits, sizes_workgroup});
    if (!inserted && it->second.sizes_workgroup && !sizes_workgroup) it->second = {c.bits, false};
  }
  std::vector<SpecDefault> out;
  for (const auto& [id, c] : chosen) out.push_back({id, c.bits});
  return out;
}

bool is_opaque_result(std::int32_t r) {
  // VK_ERROR_OUT_OF_HOST_MEMORY -1, VK_ERROR_OUT_OF_DEVICE_MEMORY -2,
  // VK_ERROR_INITIALIZATION_FAILED -3, VK_ERROR_UNKNOWN -13.
  return r == -1 || r == -2 || r == -3 || r == -13;
}

Result<ComputeNeeds> compute_needs(std::span<const std::uint32_t> spirv, std::string_view entry,
                                   std::span<const SpecValue> spec) {
  const auto defaults = KCACHE_TRY(spec_defaults(spirv));
  std::map<std::uint32_t, std::uint32_t> spec_ids;  // result id → SpecId
  std::map<std::uint32_t, std::uint64_t> set_values;
  for (const auto& v : spec) set_values[v.id] = v.bits;
  std::map<std::uint32_t, Constant> constants;
  std::map<std::uint32_t, std::vector<std::uint32_t>> composites;  // (spec) constant composites
  std::map<std::uint32_t, std::vector<std::uint32_t>> types;       // result id → the type instruction
  std::vector<std::uint32_t> workgroup_vars;                       // pointer type ids
  std::optional<std::uint32_t> entry_id, workgroup_builtin;
  std::array<std::uint32_t, 3> local_size{};
  std::optional<std::array<std::uint32_t, 3>> local_size_ids;
  std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> modes;  // (entry id, operands)

  KCACHE_CHECK(for_each_instruction(spirv, [&](std::uint32_t op, std::span<const std::uint32_t> w) {
    switch (op) {
      case op_entry_point:
        if (w.size() >= 3 && literal_string(w.subspan(2)) == entry) entry_id = w[1];
        break;
      case op_execution_mode:
      case op_execution_mode_id:
        if (w.size() >= 2) modes.emplace_back(w[0], std::vector<std::uint32_t>(w.begin() + 1, w.end()));
        break;
      case op_decorate:
        if (w.size() >= 3 && w[1] == decoration_spec_id) spec_ids[w[0]] = w[2];
        if (w.size() >= 3 && w[1] == decoration_builtin && w[2] == builtin_workgroup_size) workgroup_builtin = w[0];
        break;
      case op_constant:
      case op_spec_constant:
        if (w.size() >= 3) constants[w[1]] = {w[2], op == op_spec_constant};
        break;
      case op_constant_composite:
      case op_spec_constant_composite:
        if (w.size() >= 2) composites[w[1]] = std::vector<std::uint32_t>(w.begin() + 2, w.end());
        break;
      case op_type_bool:
      case op_type_int:
      case op_type_float:
      case op_type_vector:
      case op_type_matrix:
      case op_type_array:
      case op_type_struct:
      case op_type_pointer:
        if (!w.empty()) {  // the whole instruction: opcode word, then its operands
          auto& t = types[w[0]];
          t.assign(1, op);
          t.insert(t.end(), w.begin(), w.end());
        }
        break;
      case op_variable:
        if (w.size() >= 3 && w[2] == storage_workgroup) workgroup_vars.push_back(w[0]);
        break;
      default: break;
    }
  }));
  if (!entry_id) return fail(Category::invalid_argument, "the module has no entry point '{}'", entry);
  for (const auto& [id, operands] : modes) {
    if (id != *entry_id) continue;
    if (operands[0] == mode_local_size && operands.size() >= 4) local_size = {operands[1], operands[2], operands[3]};
    if (operands[0] == mode_local_size_id && operands.size() >= 4)
      local_size_ids = std::array<std::uint32_t, 3>{operands[1], operands[2], operands[3]};
  }

  // A constant's value with the manifest's spec values applied.
  auto value_of = [&](std::uint32_t id, std::optional<SpecSource>& source) -> std::optional<std::uint32_t> {
    auto c = constants.find(id);
    if (c == constants.end()) return std::nullopt;
    if (!c->second.spec) return c->second.value;
    auto sid = spec_ids.find(id);
    if (sid == spec_ids.end()) return c->second.value;
    auto set = set_values.find(sid->second);
    source = SpecSource{sid->second, set != set_values.end()};
    if (set != set_values.end()) return static_cast<std::uint32_t>(set->second);
    for (const auto& d : defaults)
      if (d.spec_id == sid->second) return static_cast<std::uint32_t>(d.bits);
    return c->second.value;
  };

  ComputeNeeds needs;
  needs.workgroup_size = local_size;
  std::optional<std::array<std::uint32_t, 3>> size_ids = local_size_ids;
  if (workgroup_builtin)  // the built-in overrides the execution mode
    if (auto it = composites.find(*workgroup_builtin); it != composites.end() && it->second.size() == 3)
      size_ids = std::array<std::uint32_t, 3>{it->second[0], it->second[1], it->second[2]};
  if (size_ids)
    for (int i = 0; i < 3; ++i) needs.workgroup_size[i] = value_of((*size_ids)[i], needs.workgroup_spec[i]).value_or(0);

  // Bytes of a type, without padding; nullopt when a length is unknown.
  std::set<std::uint32_t> spec_seen;
  std::function<std::optional<std::uint64_t>(std::uint32_t, int)> size_of =
      [&](std::uint32_t id, int depth) -> std::optional<std::uint64_t> {
    auto it = types.find(id);
    if (it == types.end() || depth > 32) return std::nullopt;
    const auto& t = it->second;
    const std::uint32_t op = t[0] & 0xffff;
    switch (op) {
      case op_type_bool: return 4;
      case op_type_int:
      case op_type_float: return t.size() >= 3 ? std::optional<std::uint64_t>(t[2] / 8) : std::nullopt;
      case op_type_vector:
      case op_type_matrix: {
        if (t.size() < 4) return std::nullopt;
        auto e = size_of(t[2], depth + 1);
        return e ? std::optional<std::uint64_t>(*e * t[3]) : std::nullopt;
      }
      case op_type_array: {
        if (t.size() < 4) return std::nullopt;
        std::optional<SpecSource> source;
        auto n = value_of(t[3], source);
        if (source && spec_seen.insert(source->spec_id).second) needs.shared_memory_spec.push_back(*source);
        auto e = size_of(t[2], depth + 1);
        return n && e ? std::optional<std::uint64_t>(*e * *n) : std::nullopt;
      }
      case op_type_struct: {
        std::uint64_t sum = 0;
        for (std::size_t m = 2; m < t.size(); ++m) {
          auto e = size_of(t[m], depth + 1);
          if (!e) return std::nullopt;
          sum += *e;
        }
        return sum;
      }
      case op_type_pointer: return t.size() >= 4 ? size_of(t[3], depth + 1) : std::nullopt;
      default: return std::nullopt;
    }
  };
  for (std::uint32_t pointer : workgroup_vars) {
    auto bytes = size_of(pointer, 0);
    if (bytes) needs.shared_memory_bytes += *bytes;
    else needs.shared_memory_known = false;
  }
  return needs;
}

std::string diagnose_limits(const ComputeNeeds& needs, const ComputeLimits& limits) {
  std::vector<std::string> exceeded, defaults;
  const auto& ws = needs.workgroup_size;
  for (int i = 0; i < 3; ++i) {
    const auto& source = needs.workgroup_spec[i];
    if (source && !source->set) defaults.push_back(fmt::format("{} (workgroup size {})", spec_text(*source), "xyz"[i]));
    if (ws[i] > limits.max_workgroup_size[i])
      exceeded.push_back(fmt::format("workgroup size {} in {} exceeds maxComputeWorkGroupSize[{}] {}{}", ws[i],
                                     "xyz"[i], i, limits.max_workgroup_size[i],
                                     source ? " — from " + spec_text(*source) : ""));
  }
  const std::uint64_t invocations = std::uint64_t{ws[0]} * ws[1] * ws[2];
  if (invocations > limits.max_workgroup_invocations)
    exceeded.push_back(fmt::format("{}×{}×{} = {} invocations per workgroup exceed maxComputeWorkGroupInvocations {}",
                                   ws[0], ws[1], ws[2], invocations, limits.max_workgroup_invocations));
  std::vector<std::string> sizing;
  for (const auto& s : needs.shared_memory_spec) {
    sizing.push_back(spec_text(s));
    if (!s.set) defaults.push_back(fmt::format("{} (a shared array's length)", spec_text(s)));
  }
  if (needs.shared_memory_bytes > limits.max_shared_memory)
    exceeded.push_back(fmt::format("shared memory of at least {} bytes exceeds maxComputeSharedMemorySize {}{}",
                                   needs.shared_memory_bytes, limits.max_shared_memory,
                                   sizing.empty() ? "" : fmt::format(" — sized by {}", fmt::join(sizing, ", "))));
  if (!exceeded.empty()) return fmt::format("likely cause: {}", fmt::join(exceeded, "; "));
  std::string out = fmt::format(
      "the module is within the device's checked limits (workgroup {}×{}×{} = {} of {} invocations; shared memory {}{} "
      "of {} bytes)",
      ws[0], ws[1], ws[2], invocations, limits.max_workgroup_invocations, needs.shared_memory_known ? "" : "at least ",
      needs.shared_memory_bytes, limits.max_shared_memory);
  if (!defaults.empty())
    out += fmt::format("; the manifest leaves {} at the module's default", fmt::join(defaults, ", "));
  return out;
}

}  // namespace kcache::device
