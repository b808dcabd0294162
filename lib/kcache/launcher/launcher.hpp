// The launcher: `kcache glslc ARGS...`, `kcache glslangValidator ARGS...`, or
// kcache run through a link named glslc / glslangValidator (README "Drop-in
// glslc"). A build that calls the compiler once per variant gets kcache's
// store and remotes without a manifest, as ccache gives a C build.
//
// A command is planned (plan()): the options are migrate's grammar for the
// two tools, so a command is cacheable exactly when `manifest from-commands`
// could express it, plus what the tools write besides the module (-mfmt=c /
// num text, -MD depfiles, glslc's default output names). Anything else is
// NotCacheable with the reason, and the caller runs the real program.
//
// A planned command is served (serve()): it becomes one kernel of a
// one-kernel manifest rooted at the project root (keys_root()), and the
// build engine does what it does for `kcache build` — a fresh entry is a hit,
// a remote value a remote hit, anything else is compiled in process,
// validated and stored; the run is recorded with the command
// (store::Invocation), which `manifest from-commands --from-store` reads.
// Then the module is written as the tool would write it, atomically.
//
// Output identity: the module is the one glslc writes (tests/cli/
// launcher_project.sh compares every byte) apart from word 2, the SPIR-V
// generator word, which names the glslang version that compiled it.
//
// Thread-safety: pure functions and one call at a time per store handle.
#pragma once

#include "kcache/build/build.hpp"
#include "kcache/definition/kernel_spec.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/migrate/migrate.hpp"
#include "kcache/settings/settings.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kcache::launcher {

/// The programs the launcher stands in for, by the name it was called as
/// ("glslc", "glslangValidator"; also "glslang"); nullopt otherwise.
std::optional<std::string> tool_named(std::string_view program);

/// A command kcache can serve.
struct Plan {
  /// The command as migrate understood it, its paths relative to "/".
  migrate::Command command;
  std::filesystem::path directory;                  ///< where it runs (absolute)
  std::filesystem::path source;                     ///< absolute, normal
  std::vector<std::filesystem::path> include_dirs;  ///< absolute, normal, in order
  /// Where the module goes (absolute), or nullopt for standard output ("-o -").
  std::optional<std::filesystem::path> output;
  std::string output_as_given;                   ///< as the tool names it in a depfile
  std::optional<std::filesystem::path> depfile;  ///< absolute, when -MD
};

/// Why the real program must run instead.
struct NotCacheable {
  std::string reason;  ///< short: "glslc -S: it writes something other than a SPIR-V binary"
};

/// Understands `args` (the words after the program) of `tool` run in
/// `directory` (absolute). Never fails: what kcache cannot serve is
/// NotCacheable.
std::variant<Plan, NotCacheable> plan(std::string_view tool, const std::vector<std::string>& args,
                                      const std::filesystem::path& directory);

/// The folder keys are relative to: `base_dir` when given, else the nearest
/// folder above the source that holds `.git`, widened to hold the source
/// and every include dir. Relative keys are what let a second checkout in
/// another folder hit the same entries (and remotes serve it).
std::filesystem::path keys_root(const Plan& plan, const std::optional<std::filesystem::path>& base_dir);

/// The kernel name a command's module is stored under: what is compiled,
/// never where it goes — the source relative to `root` ('/' written as '.',
/// characters a kernel name cannot hold as '_'), '@', and 16 hex digits of
/// the identity hash of everything else that changes the module (stage,
/// entry, target, optimisation, strip, defines, include dirs relative to
/// `root`, -Werror, the validate policy): "shaders.k.comp@3f9a0c2e41d7b855".
/// The same command hits from any build folder or checkout; two commands
/// that compile differently never share a name (the output path plays no
/// part).
std::string kernel_name(const Plan& plan, const std::filesystem::path& root,
                        definition::ValidatePolicy validate = definition::ValidatePolicy::strict);

/// The validate policy of `plan` under `rules` (the launcher_validate
/// setting): matched against the output's path relative to `root` (the
/// source's when the module goes to standard output).
definition::ValidatePolicy validate_policy(const Plan& plan, const std::filesystem::path& root,
                                           const std::vector<settings::ValidateRule>& rules);

struct ServeOptions {
  /// Clock, toolchain, remotes (secondary), origin: as for `kcache build`.
  build::BuildOptions build;
  /// The project root for keys (KCACHE_BASEDIR); nullopt: keys_root's rule.
  std::optional<std::filesystem::path> base_dir;
  /// The launcher_validate setting; empty: every module strict.
  std::vector<settings::ValidateRule> validate;
};

struct Served {
  build::Receipt receipt;  ///< hit, compiled, remote_hit, ... or failed (the caller runs the real program)
  std::string kernel;      ///< the entry's name
  std::filesystem::path root;
  /// The one-kernel manifest the command became (what an eviction after it
  /// must keep: maintain::evict_to_limit).
  manifest::Manifest manifest;
  std::vector<std::uint8_t> module;  ///< the SPIR-V written (empty when failed)
  /// The module's warnings as its entry records them (FILE relative to
  /// `root`; "" for none, or an entry of a kcache that kept none).
  std::string diagnostics;
  std::optional<Error> record_warning;  ///< the run record could not be written
};

/// Builds or finds the module of `plan` in `store` and writes the output
/// (and depfile) as the tool would. A failed compile is a receipt (nothing
/// written), and so is a module with warnings under glslc -Werror (without
/// -w), which the tool refuses: the caller runs it to say so. Errors: the
/// store cannot be read, an output cannot be written.
Result<Served> serve(const Plan& plan, store::Store& store, const ServeOptions& options,
                     const store::Invocation& invocation);

/// What the tool prints about a compile that succeeded with `diagnostics`
/// (Served::diagnostics, FILE relative to `root`), each FILE named as the
/// command names its files (the source as given; others relative to the
/// folder it runs in, or absolute when the source was given so):
///   glslc, to stderr: each "FILE:LINE: warning: TEXT", then "N warning(s)
///     generated."; nothing under -w;
///   glslangValidator, to stdout: the source as given, then each "WARNING:
///     FILE:LINE: TEXT" and an empty line after them; only the source
///     under -w.
/// A line that is not printable text is shown escaped.
struct ToolMessages {
  std::string out;  ///< for standard output
  std::string err;  ///< for standard error
};
ToolMessages tool_messages(const Plan& plan, const std::filesystem::path& root, std::string_view diagnostics);

/// The module as glslc -mfmt writes it: the bytes for bin; for c, "{" the
/// words as 0x%08x, four to a line separated by ",", "}" and a newline; for
/// num, the same without braces.
std::string format_module(std::span<const std::uint8_t> module, migrate::OutputFormat format);

/// A make rule as glslc -MD writes it: "TARGET...: SOURCE INPUTS...\n".
std::string depfile_text(const std::vector<std::string>& targets, const std::vector<std::string>& inputs);

}  // namespace kcache::launcher
