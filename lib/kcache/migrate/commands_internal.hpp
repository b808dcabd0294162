// Between the sources that read compile commands only (command_inputs.cpp,
// compdb_json.cpp, option_grammar.cpp): the raw commands the readers yield,
// and what the readers and the option grammar share.
#pragma once

#include "kcache/migrate/migrate.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache::migrate::internal {

/// How many problems Problems lists before it only counts them.
constexpr std::size_t k_max_listed_problems = 20;

/// One raw command: its words, the line it starts on, the folder it ran in.
struct RawCommand {
  int line = 0;
  std::vector<std::string> words;
  std::filesystem::path directory;  ///< absolute
};

/// The problems of a whole input, listed together (up to a bound).
class Problems {
 public:
  explicit Problems(std::string display) : m_display(std::move(display)) {}
  void add(int line, std::string message) {
    ++m_count;
    if (m_lines.size() < k_max_listed_problems)
      m_lines.push_back(line > 0 ? fmt::format("{}:{}: {}", m_display, line, message)
                                 : fmt::format("{}: {}", m_display, message));
  }
  bool empty() const { return m_count == 0; }
  tl::unexpected<Error> error() const {
    std::string more =
        m_count > m_lines.size() ? fmt::format("\n({} more problems not listed)", m_count - m_lines.size()) : "";
    return fail(Category::invalid_argument, "{}{}", fmt::join(m_lines, "\n"), more);
  }

 private:
  std::string m_display;
  std::vector<std::string> m_lines;
  std::size_t m_count = 0;
};

/// Options dropped because they cannot change a module, counted over all
/// commands (Migration::notes).
struct Notes {
  std::map<std::string, std::pair<std::size_t, std::string>> dropped;  // option -> (count, why)
  void add(const std::string& option, std::string_view why) {
    auto& [count, text] = dropped[option];
    ++count;
    text = why;
  }
};

/// Splits one input line into a RawCommand, the one shader compile of a
/// `cd DIR && ... && ...` chain when it is one; invalid_argument otherwise.
Result<RawCommand> split_command(std::string_view line, int line_no, const std::filesystem::path& cwd,
                                 std::size_t max_words);

/// The commands of a compile_commands.json text (a JSON array of objects);
/// per-entry problems go to `problems`, a malformed document is an error.
Result<std::vector<RawCommand>> read_json(std::string_view text, const Options& o, Problems& problems);

/// "glslc", "glslangValidator", or "" when `program` names neither.
std::string tool_of(std::string_view program);

/// The stage a source file's suffix implies, or nullopt when it names none.
std::optional<definition::Stage> stage_from_source(std::string_view path);

/// One raw command's words as a glslc / glslangValidator Command; dropped
/// options are counted in `notes`, a refused one is invalid_argument.
Result<Command> parse_raw(const RawCommand& raw, const Options& o, Notes& notes);

}  // namespace kcache::migrate::internal
