// Reading compile commands (migrate.hpp parse_commands): the input as text
// lines or a compilation database, CMake's `cd DIR && ...` chains, and
// which commands are shader compiles.
#include "kcache/migrate/commands_internal.hpp"
#include "kcache/migrate/migrate.hpp"
#include "kcache/migrate/migrate_internal.hpp"

#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>

namespace kcache::migrate::internal {
namespace {

/// The byte offsets of each `&&` outside quotes in `line`: where a build
/// tool's command chain (CMake's `cd DIR && glslc ... && cmake -E ...`)
/// joins its commands. A backslash escapes the next byte outside single
/// quotes, as in the shell.
std::vector<std::size_t> chain_joins(std::string_view line) {
  std::vector<std::size_t> out;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0;
    } else if (c == '\\') {
      ++i;
    } else if (quote == '"') {
      if (c == '"') quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '&' && i + 1 < line.size() && line[i + 1] == '&') {
      out.push_back(i);
      ++i;
    }
  }
  return out;
}

}  // namespace

/// What a command line runs, when it is a chain: the one shader compile in
/// it, in the folder the chain's `cd`s lead to (CMake wraps every custom
/// command as `cd DIR && COMMAND && cmake -E cmake_transform_depfile ...`).
/// Other commands of the chain (cmake -E, `:`) write nothing kcache
/// stores. A line without `&&` is split as it is. invalid_argument for a
/// chain with two compiles, a `cd` without one folder, or a segment the
/// shell splitter refuses.
Result<RawCommand> split_command(std::string_view line, int line_no, const std::filesystem::path& cwd,
                                 std::size_t max_words) {
  RawCommand raw{line_no, {}, cwd};
  const auto joins = chain_joins(line);
  if (joins.empty()) {
    raw.words = KCACHE_TRY(split_shell_words(line, max_words));
    return raw;
  }
  std::size_t begin = 0;
  std::filesystem::path directory_of_compile = cwd;
  for (std::size_t k = 0; k <= joins.size(); ++k) {
    const std::size_t end = k < joins.size() ? joins[k] : line.size();
    auto words = KCACHE_TRY(split_shell_words(line.substr(begin, end - begin), max_words));
    begin = end + 2;
    if (words.empty()) continue;
    if (words.front() == "cd") {
      if (words.size() != 2) return fail(Category::invalid_argument, "a `cd` in the chain needs exactly one folder");
      raw.directory = (raw.directory / words[1]).lexically_normal();
    } else if (!tool_of(words.front()).empty()) {
      if (!raw.words.empty())
        return fail(Category::invalid_argument, "two shader compiles in one command chain — give one per line");
      raw.words = std::move(words);  // it runs where the chain's cds before it led
      directory_of_compile = raw.directory;
    }
  }
  raw.directory = directory_of_compile;
  return raw;
}

namespace {

Result<std::vector<RawCommand>> read_lines(std::string_view text, const Options& o, Problems& problems) {
  std::vector<RawCommand> out;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    // A logical line: physical lines joined while one ends in an odd number
    // of backslashes (the shell's continuation).
    const int start_line = line_no + 1;
    std::string logical;
    bool too_long = false;
    for (;;) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view physical = text.substr(pos, end - pos);
      pos = end < text.size() ? end + 1 : end;
      ++line_no;
      if (!physical.empty() && physical.back() == '\r') physical.remove_suffix(1);
      std::size_t backslashes = 0;
      while (backslashes < physical.size() && physical[physical.size() - 1 - backslashes] == '\\') ++backslashes;
      const bool continues = backslashes % 2 == 1 && pos < text.size();
      if (continues) physical.remove_suffix(1);
      if (logical.size() + physical.size() > o.limits.max_line_bytes) too_long = true;
      else logical.append(physical);
      if (!continues) break;
      logical += ' ';
    }
    if (too_long) {
      problems.add(start_line, fmt::format("command longer than {} bytes — is this a compile command log?",
                                           o.limits.max_line_bytes));
      continue;
    }
    std::string_view trimmed = logical;
    while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) trimmed.remove_prefix(1);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    auto raw = split_command(trimmed, start_line, o.cwd, o.limits.max_words);
    if (!raw) {
      problems.add(start_line, raw.error().message);
      continue;
    }
    if (out.size() >= o.limits.max_commands)
      return fail(Category::invalid_argument, "more than {} commands — a manifest holds at most that many kernels",
                  o.limits.max_commands);
    out.push_back(std::move(*raw));
  }
  return out;
}

Result<std::vector<Command>> understand(const std::vector<RawCommand>& raws, const std::string& display_name,
                                        const Options& options, Problems& problems,
                                        std::vector<std::string>& notes_out) {
  Notes notes;
  std::vector<Command> out;
  std::map<std::string, int> outputs;
  // What a build log or compilation database holds besides shader
  // compiles (C and C++ compiles, cmake -E, phony targets with no command):
  // skipped and counted, never an error. A command that names no program,
  // or sets a variable first, is still parsed (and refused if it must be).
  std::vector<std::string> skipped;
  for (const auto& raw : raws) {
    if (raw.words.empty()) {
      skipped.push_back("(no command)");
      continue;
    }
    const std::string& program = raw.words.front();
    const bool assignment = program.find('=') != std::string::npos && program.find('/') == std::string::npos;
    if (tool_of(program).empty() && !program.starts_with('-') && !stage_from_source(program) && !assignment) {
      skipped.push_back(std::filesystem::path(program).filename().string());
      continue;
    }
    auto cmd = parse_raw(raw, options, notes);
    if (!cmd) {
      problems.add(raw.line, cmd.error().message);
      continue;
    }
    if (cmd->format != OutputFormat::bin)
      notes.add(cmd->format == OutputFormat::c ? "-mfmt=c" : "-mfmt=num",
                "writes the module as text; the manifest stores the module itself (`kcache emit` writes C sources)");
    // A command whose source is not there cannot be what a build runs: the
    // manifest would name a file that no build finds.
    std::error_code ec;
    if (options.sources_must_exist && !std::filesystem::is_regular_file(options.root / cmd->source, ec)) {
      problems.add(raw.line, fmt::format("source '{}' is not a file in {} — run from-commands where the build's "
                                         "sources are (generated ones: after generating them)",
                                         util::shown_untrusted(cmd->source), options.root.string()));
      continue;
    }
    auto [it, inserted] = outputs.emplace(cmd->output, cmd->line);
    if (!inserted) {
      problems.add(raw.line, fmt::format("output '{}' is also written at line {} — every kernel needs its own output",
                                         util::shown_untrusted(cmd->output), it->second));
      continue;
    }
    out.push_back(std::move(*cmd));
  }
  if (!problems.empty()) return problems.error();
  std::string skipped_text;
  if (!skipped.empty()) {
    std::map<std::string, std::size_t> by_program;
    for (const auto& p : skipped) ++by_program[p];
    std::vector<std::string> parts;
    for (const auto& [p, n] : by_program)
      if (parts.size() < 5) parts.push_back(fmt::format("{} × {}", n, util::shown_untrusted(p)));
    skipped_text = fmt::format("{} command{} that run no shader compiler skipped ({}{})", skipped.size(),
                               skipped.size() == 1 ? "" : "s", fmt::join(parts, ", "),
                               by_program.size() > parts.size() ? ", ..." : "");
  }
  if (out.empty())
    return fail(Category::invalid_argument, "{}: no compile commands{}", display_name,
                skipped_text.empty() ? "" : " (" + skipped_text + ")");
  if (!skipped_text.empty()) notes_out.push_back(skipped_text);
  for (const auto& [option, count_why] : notes.dropped)
    notes_out.push_back(fmt::format("{} ({} command{}): dropped — {}", option, count_why.first,
                                    count_why.first == 1 ? "" : "s", count_why.second));
  return out;
}

}  // namespace
}  // namespace kcache::migrate::internal

namespace kcache::migrate {

Result<std::vector<Command>> parse_commands_with_notes(std::string_view text, const std::string& display_name,
                                                       const Options& options, std::vector<std::string>& notes_out) {
  if (text.size() > options.limits.max_input_bytes)
    return fail(Category::invalid_argument, "{}: {} bytes is more than the {} bytes a command list may hold",
                display_name, text.size(), options.limits.max_input_bytes);
  if (!options.root.is_absolute() || !options.cwd.is_absolute())
    return fail(Category::invalid_argument, "root and cwd must be absolute paths");
  internal::Problems problems(display_name);
  // A UTF-8 byte-order mark (editors on Windows write one) is not part of
  // the first command.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<internal::RawCommand> raws;
  if (first != std::string_view::npos && text[first] == '[') {
    auto r = internal::read_json(text, options, problems);
    if (!r) return tl::unexpected(std::move(r).error().context(display_name));
    raws = std::move(*r);
  } else {
    auto r = internal::read_lines(text, options, problems);
    if (!r) return tl::unexpected(std::move(r).error().context(display_name));
    raws = std::move(*r);
  }
  return internal::understand(raws, display_name, options, problems, notes_out);
}

Result<std::vector<Command>> parse_lines_with_notes(const std::vector<CommandLine>& lines,
                                                    const std::string& display_name, const Options& options,
                                                    std::vector<std::string>& notes_out) {
  if (!options.root.is_absolute()) return fail(Category::invalid_argument, "root must be an absolute path");
  if (lines.size() > options.limits.max_commands)
    return fail(Category::invalid_argument, "{}: more than {} commands — a manifest holds at most that many kernels",
                display_name, options.limits.max_commands);
  internal::Problems problems(display_name);
  std::vector<internal::RawCommand> raws;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int line = static_cast<int>(i + 1);
    if (lines[i].words.empty() || lines[i].words.size() > options.limits.max_words || !lines[i].directory.is_absolute())
      problems.add(line, fmt::format("a command needs 1 to {} words and an absolute folder", options.limits.max_words));
    else raws.push_back({line, lines[i].words, lines[i].directory});
  }
  return internal::understand(raws, display_name, options, problems, notes_out);
}

Result<std::vector<Command>> parse_commands(std::string_view text, const std::string& display_name,
                                            const Options& options) {
  std::vector<std::string> notes;
  return parse_commands_with_notes(text, display_name, options, notes);
}

}  // namespace kcache::migrate
