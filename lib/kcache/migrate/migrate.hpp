// Migrating from a glslc / glslangValidator build: compile command lines in,
// a kcache.toml out (`kcache manifest from-commands`, README "Migrating from
// glslc scripts").
//
// Input (untrusted: a generator's log, a --dry-run listing, a
// compile_commands.json from anywhere), either
//   - text, one command per line: POSIX shell words (single and double
//     quotes, backslash escapes, a trailing backslash continues the line);
//     blank lines and lines starting with '#' are skipped; anything the
//     shell would expand or redirect ($, `, |, &, ;, <, >, (, ), *, ?, {, })
//     outside single quotes is refused, since the words it stands for are
//     unknown; or
//   - a JSON array of objects with "command" (a shell line as above) or
//     "arguments" (the words), and optionally "directory" (where the command
//     ran; relative paths start there), as compile_commands.json has them.
// Each command is `glslc ...` or `glslangValidator ...` (also `glslang`, any
// directory before the name), or the options alone when they fit exactly
// one of the two (a log that leaves the program out). What CMake and ninja
// write is read as it is: a chain `cd DIR && glslc ... && cmake -E ...`
// (`ninja -t commands`, `ninja -t compdb`, compile_commands.json) is its
// one compile run in DIR; commands and entries that run no shader compiler
// (C compiles, cmake -E, phony entries with no command) are skipped and
// counted in Migration::notes. Every option is either understood and kept in
// the manifest, understood and dropped because it cannot change the module
// (-c, -w, -MD, --spirv-val, ... : listed in Migration::notes), or refused
// with the line and what to do: an option kcache cannot express (-g,
// --target-env=opengl, -fauto-bind-uniforms, a --target-spv that is not the
// target's, ...) or one it does not know.
//
// Output: kernels are named after their outputs (-o spv/blur.spv -> "blur").
// Options every command shares go to [defaults] (defines included); commands
// that differ only in the values of the same defines, and whose value
// tuples are exactly the Cartesian product of each define's values, become
// one [[kernel]] with [kernel.variants] (kernel names "base[K=v,...]";
// Migration::outputs maps every output to its kernel). The text is checked
// before it is returned: parsed and expanded by the manifest module, every
// expanded kernel must carry exactly the options of its command.
//
// Thread-safety: pure functions.
#pragma once

#include "kcache/definition/kernel_spec.hpp"
#include "kcache/util/error.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::migrate {

/// Bounds on untrusted input, checked before anything is allocated for it.
struct Limits {
  std::size_t max_input_bytes = 64u << 20;  ///< the whole log or JSON
  std::size_t max_line_bytes = 64u << 10;   ///< one command (continued lines joined)
  std::size_t max_commands = 65536;         ///< manifest::k_max_kernels
  std::size_t max_words = 4096;             ///< words of one command
  std::size_t max_json_depth = 32;
};

/// What glslc -mfmt= writes: the binary module, or its words as text (a C
/// initializer list, or comma-separated numbers).
enum class OutputFormat { bin, c, num };

/// One compile command, understood.
struct Command {
  int line = 0;      ///< 1-based line of the input where it starts
  std::string tool;  ///< "glslc" or "glslangValidator"
  /// -o, relative to the manifest's folder when inside it, else absolute
  /// (outputs only name kernels); "" when the command gives none (allowed
  /// only with Options::require_output off).
  std::string output;
  std::string source;  ///< relative to the manifest's folder
  definition::Stage stage = definition::Stage::compute;
  definition::Language language = definition::Language::glsl;
  std::string entry = "main";
  std::string target;  ///< "vulkan1.0".."vulkan1.3" (the tools' default: vulkan1.0)
  definition::Optimize optimize = definition::Optimize::none;
  bool strip = false;                     ///< the tool strips debug instructions (glslc -O / -Os)
  std::vector<std::string> include_dirs;  ///< relative to the manifest's folder, in order
  std::vector<Field> defines;             ///< sorted by name
  // What the command writes besides the module (the launcher writes it too;
  // from-commands drops it, see Migration::notes).
  OutputFormat format = OutputFormat::bin;  ///< glslc -mfmt=
  bool compile_only = false;                ///< glslc -c: no -o means SOURCE.spv, not a.spv
  bool write_depfile = false;               ///< glslc -MD / -MMD
  std::string depfile;                      ///< -MF, as the output ("" = OUTPUT.d)
  std::vector<std::string> dep_targets;     ///< -MT values, in order ("" = the output as given)
  std::string output_as_given;              ///< -o exactly as written (a depfile's default target)
  std::string source_as_given;              ///< the source exactly as written (a depfile's first input)
  std::vector<std::string> include_dirs_as_given;
  // What the tool does with the compiler's warnings (the launcher does the
  // same; a manifest has no such key: `kcache build` reports them).
  bool suppress_warnings = false;   ///< glslc -w (it wins over -Werror); glslangValidator -w
  bool warnings_as_errors = false;  ///< glslc -Werror
};

/// A manifest key set on the kernels whose name matches a glob
/// (`from-commands --set KEY=VALUE --for GLOB`).
struct KeySetting {
  std::string glob;  ///< util::match_glob pattern over [[kernel]] names
  std::string key;   ///< one of k_settable_keys
  std::string value;
};
/// The keys KeySetting may set: those the commands cannot express.
inline constexpr std::string_view k_settable_keys = "validate";

struct Options {
  /// The manifest's folder (absolute): sources, include dirs and outputs
  /// are written relative to it and must lie inside it.
  std::filesystem::path root;
  /// Where the commands ran (absolute) when a command does not say
  /// (JSON "directory"); relative paths in commands start here.
  std::filesystem::path cwd;
  /// Group commands into variant products; false: one [[kernel]] per command.
  bool variants = true;
  /// Refuse a command whose source is not a regular file under root. Off
  /// only where the commands are text without their project (the fuzz
  /// target, unit tests of the option grammar).
  bool sources_must_exist = true;
  /// Refuse a command without -o (from-commands names kernels after their
  /// outputs); off for the launcher, which applies the tools' defaults.
  bool require_output = true;
  /// Keys set on matching kernels, in order (a later one wins).
  std::vector<KeySetting> settings;
  Limits limits;
};

/// Parses every command. invalid_argument naming "DISPLAY:LINE: ..." for the
/// first problems (at most 20 listed); nothing partial is returned.
Result<std::vector<Command>> parse_commands(std::string_view text, const std::string& display_name,
                                            const Options& options);

struct Migration {
  std::vector<Command> commands;
  std::string manifest;  ///< kcache.toml text
  /// (kernel name, output path) for every command, in input order.
  std::vector<Field> outputs;
  /// Options dropped because they cannot change a module, with how many
  /// commands carried each ("-MD (200 commands): ..."), and the commands
  /// skipped because they run no shader compiler (a build log's C compiles,
  /// cmake -E, a compilation database's entries with no command).
  std::vector<std::string> notes;
  std::size_t kernel_tables = 0;   ///< [[kernel]] tables written
  std::size_t variant_tables = 0;  ///< of them, with [kernel.variants]
};

/// parse_commands, grouping, the manifest text and its check.
/// `display_name` names the input in messages.
Result<Migration> from_commands(std::string_view text, const std::string& display_name, const Options& options);

/// A recorded command: its words (the program first) and the folder it ran
/// in (absolute). The launcher's run log holds these.
struct CommandLine {
  std::vector<std::string> words;
  std::filesystem::path directory;
};

/// from_commands over recorded commands instead of text; a problem names
/// the command's position ("DISPLAY:3: ...").
Result<Migration> from_command_lines(const std::vector<CommandLine>& lines, const std::string& display_name,
                                     const Options& options);

/// One command's words (words[0] the program, or the first option when the
/// program is left out and the options fit exactly one of the tools), as
/// parse_commands reads each line. invalid_argument naming the option and
/// what to do for a command kcache cannot express.
Result<Command> parse_command(const std::vector<std::string>& words, const std::filesystem::path& directory,
                              const Options& options);

/// Splits one command line into words as a POSIX shell would, refusing
/// expansions and redirections (see above). Exposed for the fuzz target.
Result<std::vector<std::string>> split_shell_words(std::string_view line, std::size_t max_words);

}  // namespace kcache::migrate
