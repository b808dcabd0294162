// The launcher (lib/kcache/launcher): `kcache glslc ARGS`, `kcache
// glslangValidator ARGS`, or kcache run through a link of either name. It
// must never break a build that worked with the real program: whatever
// kcache cannot serve (an option it cannot reproduce, a compile error, a
// store it cannot open) runs the real program, found on PATH past kcache.
#include "cli.hpp"
#include "remote_cli.hpp"

#include "kcache/launcher/launcher.hpp"
#include "kcache/launcher_build/serve.hpp"
#include "kcache/report/report.hpp"

#include <fmt/format.h>

#include <unistd.h>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace kcache::cli {
namespace {

namespace fs = std::filesystem;

/// The real program: the `glslc` / `glslang_validator` setting (the command
/// line's environment or the user's settings; never a store's, which may
/// not name a program to run), else the first `tool` on PATH that is not
/// kcache (launcher::find_real_program). A damaged settings file means
/// PATH: the real program must run.
std::optional<fs::path> real_program(const std::string& tool) {
  const StoreOptions store_options;
  if (auto chosen = setting(tool == "glslc" ? "glslc" : "glslang_validator", "", store_options.path());
      chosen && chosen->source != settings::Source::none)
    return fs::path(chosen->value);
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::error_code ec;
  return launcher::find_real_program(tool, path, fs::canonical("/proc/self/exe", ec));
}

/// Runs the real program in this process's place; returns only when it
/// cannot (an exit code, after saying why).
int exec_real(const std::string& tool, const std::vector<std::string>& args, std::string_view why) {
  auto real = real_program(tool);
  if (!real) {
    fmt::print(stderr,
               "kcache: error: {} — and no real {} was found on PATH past kcache to run instead (or set one: "
               "`kcache config set --user {} PATH`)\n",
               why, tool, tool == "glslc" ? "glslc" : "glslang_validator");
    return k_exit_failed;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const Error failed = launcher::exec_real_program(*real, tool, args);
  fmt::print(stderr, "kcache: error: {}\n", failed.message);
  return k_exit_failed;
}

/// Records a command kcache did not serve (`kcache stats` counts it by
/// reason; from-commands --from-store skips it). Best effort: a store that
/// cannot be opened must not stop the real program.
void record_not_cacheable(const StoreOptions& store_options, store::Invocation invocation) {
  auto store = store_options.open(true);
  if (!store) return;
  store::UsageBatch batch;
  batch.time = clock().now();
  store::RunRecord run;
  run.time = batch.time;
  run.command = invocation.tool;
  run.invocation = std::move(invocation);
  batch.run = std::move(run);
  (void)(*store)->record_usage(batch);
}

/// Serves `plan` from `store` when find_hit finds its entry: the outputs,
/// the tool's messages, the run record. The exit code, or nullopt when the
/// command is the engine's.
std::optional<int> serve_hit(const launcher::Plan& plan, store::Store& store,
                             const launcher_build::ServeOptions& options, const store::Invocation& invocation) {
  const auto start = std::chrono::steady_clock::now();
  launcher::HitOptions hit_options{options.base_dir, options.validate,
                                   options.build.toolchain->fields(plan.command.optimize), clock().now()};
  auto hit = launcher::find_hit(plan, store, hit_options);
  if (!hit || !*hit) return std::nullopt;  // an unreadable store is the engine's to report
  auto messages = launcher::deliver_hit(plan, **hit);
  if (!messages) return std::nullopt;  // the engine tries again, and runs the real program if it must
  std::fwrite(messages->out.data(), 1, messages->out.size(), stdout);
  std::fwrite(messages->err.data(), 1, messages->err.size(), stderr);
  const auto wall = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  // Statistics only: the module is written whatever happens here.
  (void)launcher::record_hit(store, **hit, invocation, hit_options.now, static_cast<std::uint64_t>(wall.count()));
  return k_exit_ok;
}

}  // namespace

int run_launcher(const std::string& tool, const std::vector<std::string>& args) {
  if (const char* ran = std::getenv(std::string(launcher::k_exec_marker).c_str())) {
    fmt::print(stderr,
               "kcache: error: {} was run as the real {}, but it is kcache too — put the real {} on PATH after "
               "kcache's links, or remove the copy\n",
               ran, tool, tool);
    return k_exit_failed;
  }
  std::error_code ec;
  const fs::path here = fs::current_path(ec);
  if (ec) return exec_real(tool, args, "cannot read the current directory");
  store::Invocation invocation{tool, here.string(), args, ""};
  StoreOptions store_options;  // KCACHE_STORE, the user's setting or the default store, as for `kcache build`
  auto planned = launcher::plan(tool, args, here);
  if (auto* no = std::get_if<launcher::NotCacheable>(&planned)) {
    invocation.not_cacheable = no->reason;
    record_not_cacheable(store_options, invocation);
    return exec_real(tool, args, no->reason);
  }
  const auto& plan = std::get<launcher::Plan>(planned);

  auto store = store_options.open(true);
  if (!store) {
    fmt::print(stderr, "kcache: warning: {} — running the real {}\n", store.error().message, tool);
    return exec_real(tool, args, store.error().message);
  }
  launcher_build::ServeOptions options;
  options.build.origin = build_origin();
  options.build.clock = &clock();
  options.build.toolchain = &toolchain();
  if (const char* base = std::getenv("KCACHE_BASEDIR"); base && *base)
    options.base_dir = fs::absolute(base).lexically_normal();
  // launcher_validate: the environment's or the user's (never a store's).
  auto validate = setting("launcher_validate", "", store_options.path());
  if (validate && validate->source != settings::Source::none) {
    auto rules = settings::parse_validate_rules(validate->value);
    if (rules) options.validate = std::move(*rules);
    else validate = tl::unexpected(std::move(rules).error());
  }
  if (!validate) {
    fmt::print(stderr, "kcache: warning: {} — running the real {}\n", validate.error().message, tool);
    store->reset();
    return exec_real(tool, args, validate.error().message);
  }
  // A hit by the direct rule, as kcache-launcher serves it (launcher.hpp);
  // anything else through the build engine.
  if (auto served = serve_hit(plan, **store, options, invocation)) return *served;
  auto tier = make_remote_tier(RemoteArgs{}, store_options.path());
  if (!tier) {
    fmt::print(stderr, "kcache: warning: remotes not used: {}\n", tier.error().message);
  } else {
    options.build.secondary = tier->get();
  }
  auto served = launcher_build::serve(plan, **store, options, invocation);
  if (!served) {
    // The store failed under us, or an output could not be written: the
    // real program may still do the job (and says so if it cannot).
    fmt::print(stderr, "kcache: warning: {} — running the real {}\n", served.error().message, tool);
    store->reset();
    return exec_real(tool, args, served.error().message);
  }
  if (served->receipt.outcome == engine::Outcome::failed) {
    // The real program's diagnostics, exit code and (if kcache alone
    // refused the module) output are the tool's own.
    store->reset();
    return exec_real(tool, args,
                     served->receipt.error ? served->receipt.error->message : std::string("the compile failed"));
  }
  // What the tool prints of a compile that succeeded: its warnings, on a
  // hit as on a miss (the entry keeps them).
  const auto messages = launcher::tool_messages(plan, served->root, served->diagnostics);
  std::fwrite(messages.out.data(), 1, messages.out.size(), stdout);
  std::fwrite(messages.err.data(), 1, messages.err.size(), stderr);
  if (!plan.output) {
    const std::string text = launcher::format_module(served->module, plan.command.format);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  // The store's max_size, as after `kcache build`, told to `kcache stats`
  // only (glslc prints nothing of the kind); the module is written whatever
  // happens here, so a failure is a warning.
  if (auto evicted = evict_over_max_size(store_options.path(), served->manifest, **store, TellEviction::no); !evicted)
    fmt::print(stderr, "kcache: warning: {}\n", evicted.error().message);
  return k_exit_ok;
}

void register_launcher(CLI::App& app, Action& action) {
  for (const char* tool : {"glslc", "glslangValidator"}) {
    auto* cmd = app.add_subcommand(
        tool, fmt::format("Run as {} would, served from the store: `kcache {} ARGS...` (or a link named {}).", tool,
                          tool, tool));
    cmd->allow_extras();
    cmd->prefix_command();
    cmd->callback([cmd, tool, &action] { action = [cmd, tool] { return run_launcher(tool, cmd->remaining()); }; });
  }
}

}  // namespace kcache::cli
