// What the tools write besides a binary module (launcher.hpp).
#include "kcache/launcher/launcher.hpp"

#include <fmt/format.h>

#include <cstring>

namespace kcache::launcher {

std::string format_module(std::span<const std::uint8_t> module, migrate::OutputFormat format) {
  if (format == migrate::OutputFormat::bin) return std::string(module.begin(), module.end());
  std::string out = format == migrate::OutputFormat::c ? "{" : "";
  const std::size_t words = module.size() / 4;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint32_t word = 0;
    std::memcpy(&word, module.data() + 4 * i, 4);  // SPIR-V in the host's order, as glslc reads it
    out += fmt::format("0x{:08x}", word);
    if (i + 1 < words) out += (i % 4 == 3) ? ",\n" : ",";
  }
  out += format == migrate::OutputFormat::c ? "}\n" : "\n";
  return out;
}

std::string depfile_text(const std::vector<std::string>& targets, const std::vector<std::string>& inputs) {
  return fmt::format("{}: {}\n", fmt::join(targets, " "), fmt::join(inputs, " "));
}

}  // namespace kcache::launcher
