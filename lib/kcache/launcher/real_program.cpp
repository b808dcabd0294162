// The real program behind the launcher (launcher.hpp): found past every
// kcache on PATH, run in the launcher's place.
#include "kcache/launcher/launcher.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kcache::launcher {

namespace fs = std::filesystem;

bool is_kcache_program(const fs::path& real, const fs::path& self) {
  const std::string name = real.filename().string();
  return real == self || name == "kcache" || name == "kcache-testing" || name == "kcache-launcher";
}

std::optional<fs::path> find_real_program(std::string_view tool, std::string_view path_env, const fs::path& self) {
  std::string_view rest = path_env;
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) dir = ".";
    const fs::path candidate = fs::path(dir) / tool;
    if (::access(candidate.c_str(), X_OK) != 0) continue;
    std::error_code ec;
    const fs::path real = fs::canonical(candidate, ec);
    if (ec || is_kcache_program(real, self)) continue;
    return candidate;
  }
  return std::nullopt;
}

Error exec_real_program(const fs::path& real, std::string_view tool, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  std::string program(tool);
  argv.push_back(program.data());
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Marks the program we become: if it is kcache again (a copy of the
  // binary under the tool's name, which no path check can tell from the
  // real tool), it says so instead of running itself for ever.
  ::setenv(std::string(k_exec_marker).c_str(), real.c_str(), 1);
  ::execv(real.c_str(), argv.data());
  return Error{Category::io_error, fmt::format("cannot run {}: {}", real.string(), std::strerror(errno))};
}

}  // namespace kcache::launcher
