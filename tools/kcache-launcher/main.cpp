// kcache-launcher: the program the glslc and glslangValidator links run
// (README "Drop-in glslc"). It serves a hit — a command whose module the
// store holds, current by the direct rule (launcher/launcher.hpp find_hit) —
// and hands every other command to `kcache` unchanged, which compiles, asks
// the remotes or runs the real program. It links no compiler, no Vulkan, no
// remote client and no allocator of its own, so a hit costs about a
// millisecond, where `kcache` itself spends several loading what a hit does
// not use.
//
//   glslc ARGS...                   (a link named glslc or glslangValidator)
//   kcache-launcher glslc ARGS...
//
// It never fails a build that `kcache` would serve: a store it cannot open,
// a setting it cannot read, an output it cannot write — each is a miss, and
// `kcache` decides (and reports) it.
#include "toolchain_fields.hpp"

#include "kcache/launcher/launcher.hpp"
#include "kcache/settings/resolver.hpp"
#include "kcache/settings/settings.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/text.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace kcache;

constexpr const char* k_self = "kcache-launcher";

/// `kcache` as installed beside this program: in the same folder (the build
/// tree), else where an install puts it (libexec/kcache/ → bin/kcache).
std::optional<fs::path> full_kcache() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  for (const fs::path& candidate : {self.parent_path() / "kcache", self.parent_path() / KCACHE_LAUNCHER_TO_KCACHE})
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.lexically_normal();
  return std::nullopt;
}

/// Becomes `kcache TOOL ARGS...`; returns only when that cannot run.
int hand_to_kcache(const std::string& tool, int argc, char** argv, int first_arg) {
  auto kcache = full_kcache();
  if (!kcache) {
    std::fprintf(stderr, "kcache-launcher: error: kcache is not installed beside %s (nor at %s)\n", k_self,
                 KCACHE_LAUNCHER_TO_KCACHE);
    return 1;
  }
  std::vector<char*> args;
  std::string program = "kcache", name = tool;
  args.push_back(program.data());
  args.push_back(name.data());
  for (int i = first_arg; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(kcache->c_str(), args.data());
  std::fprintf(stderr, "kcache-launcher: error: cannot run %s: %s\n", kcache->c_str(), std::strerror(errno));
  return 1;
}

/// The hit path; true when the command was served.
bool serve_hit(const std::string& tool, std::vector<std::string> args) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  const fs::path here = fs::current_path(ec);
  if (ec) return false;
  auto planned = launcher::plan(tool, args, here);
  const auto* plan = std::get_if<launcher::Plan>(&planned);
  if (!plan) return false;

  // The settings `kcache` resolves for the same command, by the same
  // resolver: the store folder, map_size, launcher_validate.
  settings::Resolver resolver(settings::capture_environment(&std::getenv));
  auto dir = resolver.store_dir("");
  if (!dir) return false;
  auto validate = resolver.resolve("launcher_validate", "", *dir);
  auto map_size = resolver.resolve("map_size", "", *dir);
  if (!validate || !map_size || !resolver.take_warnings().empty()) return false;  // `kcache` reports them
  launcher::HitOptions options;
  if (validate->source != settings::Source::none) {
    auto rules = settings::parse_validate_rules(validate->value);
    if (!rules) return false;
    options.validate = std::move(*rules);
  }
  if (const char* base = std::getenv("KCACHE_BASEDIR"); base && *base)
    options.base_dir = fs::absolute(base).lexically_normal();
  options.toolchain = launcher_tool::toolchain_fields(plan->command.optimize);
  options.now = static_cast<std::uint64_t>(std::time(nullptr));

  store::OpenOptions open;
  if (map_size->source != settings::Source::none) open.map_size = *util::parse_size(map_size->value);
  auto store = store::open_lmdb_store(*dir, open);
  if (!store) return false;
  auto hit = launcher::find_hit(*plan, **store, options);
  if (!hit || !*hit) return false;
  auto messages = launcher::deliver_hit(*plan, **hit);
  if (!messages) return false;
  std::fwrite(messages->out.data(), 1, messages->out.size(), stdout);
  std::fwrite(messages->err.data(), 1, messages->err.size(), stderr);
  const auto wall = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  // Statistics only (`kcache stats`): the module is written whatever happens.
  store::Invocation invocation{tool, here.string(), std::move(args), ""};
  (void)launcher::record_hit(**store, **hit, invocation, options.now, static_cast<std::uint64_t>(wall.count()));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string called = fs::path(argc > 0 ? argv[0] : "").filename().string();
  int first_arg = 1;
  auto tool = launcher::tool_named(called);
  if (!tool && called == k_self && argc > 1) {
    tool = launcher::tool_named(argv[1]);
    first_arg = 2;
  }
  if (!tool) {
    const bool asked = argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h");
    std::fprintf(asked ? stdout : stderr,
                 "usage: glslc ARGS...          (a link named glslc or glslangValidator to %s)\n"
                 "       %s glslc|glslangValidator ARGS...\n\n"
                 "Serves a compile command from the kcache store when the store holds its module, current by\n"
                 "every recorded input (no compiler is loaded: about a millisecond); runs `kcache glslc ARGS...`\n"
                 "(kcache beside this program, or at %s from it) for anything else, which compiles, asks\n"
                 "the remote caches or runs the real program. The store and settings are kcache's\n"
                 "(KCACHE_STORE, KCACHE_BASEDIR, KCACHE_LAUNCHER_VALIDATE, ...). README \"Drop-in glslc\".\n",
                 k_self, k_self, KCACHE_LAUNCHER_TO_KCACHE);
    return asked ? 0 : 2;
  }
  // Run as the real program by `kcache` itself (a copy named glslc on
  // PATH): `kcache` says so rather than loop.
  if (!std::getenv(std::string(launcher::k_exec_marker).c_str())) {
    std::vector<std::string> args(argv + first_arg, argv + argc);
    if (serve_hit(*tool, std::move(args))) return 0;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  return hand_to_kcache(*tool, argc, argv, first_arg);
}
