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
// A planned command becomes one kernel (kernel_spec()) named by what is
// compiled, never where it goes (kernel_name()), with keys relative to the
// project root (keys_root()). find_hit() serves it when the store holds a
// current entry, by the direct rule alone: this module links no compiler,
// so `kcache-launcher` (tools/kcache-launcher), the small program the glslc
// links run, answers a hit in about a millisecond. Everything else goes to
// the build engine (launcher_build::serve, in `kcache` itself). Either way
// the module is written as the tool would write it (write_outputs()),
// atomically.
//
// Output identity: the module is the one glslc writes (tests/cli/
// launcher_project.sh compares every byte) apart from word 2, the SPIR-V
// generator word, which names the glslang version that compiled it.
//
// Thread-safety: pure functions and one call at a time per store handle.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/definition/kernel_spec.hpp"
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

/// The one-kernel spec a command becomes, named `name`: source and include
/// dirs relative to `root`, the command's stage, entry, target, defines,
/// optimisation, strip, -Werror (without -w) and `validate`.
definition::KernelSpec kernel_spec(const Plan& plan, const std::filesystem::path& root, std::string name,
                                   definition::ValidatePolicy validate);

/// What find_hit needs beyond the command and the store.
struct HitOptions {
  /// The project root for keys (KCACHE_BASEDIR); nullopt: keys_root's rule.
  std::optional<std::filesystem::path> base_dir;
  /// The launcher_validate setting; empty: every module strict.
  std::vector<settings::ValidateRule> validate;
  /// The toolchain fields (key schema excluded) a current entry optimised at
  /// the command's level names: compile::Toolchain::fields in `kcache`, the
  /// same fields recorded at build time in `kcache-launcher`.
  std::vector<Field> toolchain;
  /// Now, for the run record and the entry's last use (unix seconds).
  std::uint64_t now = 0;
};

/// A command served from the store by find_hit.
struct Hit {
  std::filesystem::path root;  ///< the keys' root
  std::string ns;              ///< the entry's namespace name
  std::string kernel;          ///< its name
  Entry entry;                 ///< the whole entry, digests checked: the module and its warnings
};

/// Set in the environment of the real program the launcher runs: a kcache
/// that finds it set was run as the real program (a copy of kcache named
/// glslc) and says so instead of running itself for ever.
inline constexpr std::string_view k_exec_marker = "KCACHE_LAUNCHER_RAN";

/// Whether `real` (a canonical path) is kcache in one of its forms: the
/// program `self` (canonical /proc/self/exe), kcache, kcache-testing or
/// kcache-launcher — never the real program.
bool is_kcache_program(const std::filesystem::path& real, const std::filesystem::path& self);

/// The real `tool`: the first executable of that name in the folders of
/// `path_env` (PATH's value; an empty entry is ".") that is not kcache
/// (is_kcache_program), as the path found there; nullopt when none is.
std::optional<std::filesystem::path> find_real_program(std::string_view tool, std::string_view path_env,
                                                       const std::filesystem::path& self);

/// Runs `real` in this process's place, as `tool` with `args`, with
/// k_exec_marker set to `real`. Returns only when it cannot: the error.
/// The caller flushes its own output first.
Error exec_real_program(const std::filesystem::path& real, std::string_view tool, const std::vector<std::string>& args);

/// The namespace of `plan`'s module.
std::string namespace_of(const Plan& plan);

/// The entry that answers `plan` without a compiler, when the store holds
/// one: its key bound to its fields, its id and `options.toolchain` the
/// command's, every recorded input (and include candidate found absent)
/// unchanged, its inputs believed (built or confirmed here), its digests
/// intact, and no warnings when glslc -Werror (without -w) would refuse
/// them. nullopt for anything else: the caller hands the command to the
/// build engine, which decides it in full. Errors: the store cannot be read.
Result<std::optional<Hit>> find_hit(const Plan& plan, store::Store& store, const HitOptions& options);

/// Records a hit as the engine records a warm build's: the entry's last use
/// and a run record of one kernel, one hit and the command (`kcache stats`,
/// `manifest from-commands --from-store`). On the LMDB store a run that has
/// no last use to write costs no write transaction (the pending run log).
Result<void> record_hit(store::Store& store, const Hit& hit, const store::Invocation& invocation, std::uint64_t now,
                        std::uint64_t wall_us);

/// Writes what the tool writes for a compile that gave `module`: the output
/// (binary, or -mfmt text; nothing for standard output) and the -MD depfile
/// naming the source and every file read of `inputs` (paths relative to
/// `root`), each replaced atomically.
Result<void> write_outputs(const Plan& plan, const std::filesystem::path& root, std::span<const std::uint8_t> module,
                           const std::vector<InputFile>& inputs);

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

/// Writes what the tool writes for the module `hit` found (write_outputs)
/// and returns what it prints (tool_messages), the module's text added to
/// standard output when it goes there (-o -). Errors: an output cannot be
/// written (nothing is printed then; the caller lets the engine try).
Result<ToolMessages> deliver_hit(const Plan& plan, const Hit& hit);

/// The module as glslc -mfmt writes it: the bytes for bin; for c, "{" the
/// words as 0x%08x, four to a line separated by ",", "}" and a newline; for
/// num, the same without braces.
std::string format_module(std::span<const std::uint8_t> module, migrate::OutputFormat format);

/// A make rule as glslc -MD writes it: "TARGET...: SOURCE INPUTS...\n".
std::string depfile_text(const std::vector<std::string>& targets, const std::vector<std::string>& inputs);

}  // namespace kcache::launcher
