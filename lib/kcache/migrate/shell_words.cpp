// Splitting one command line into words as a POSIX shell would
// (split_shell_words, migrate.hpp), refusing what the shell would expand.
#include "kcache/migrate/migrate.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kcache::migrate {

Result<std::vector<std::string>> split_shell_words(std::string_view line, std::size_t max_words) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  auto refuse = [&](char c, std::size_t at) {
    return fail(Category::invalid_argument,
                "column {}: '{}' outside single quotes — the shell would expand or redirect it; give the "
                "command as the compiler receives it",
                at + 1, c);
  };
  auto push = [&]() -> Result<void> {
    if (in_word) {
      if (words.size() >= max_words)
        return fail(Category::invalid_argument, "more than {} words in one command", max_words);
      words.push_back(std::move(word));
      word.clear();
      in_word = false;
    }
    return {};
  };
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t') {
      KCACHE_CHECK(push());
    } else if (c == '\'') {
      in_word = true;
      const auto end = line.find('\'', i + 1);
      if (end == std::string_view::npos)
        return fail(Category::invalid_argument, "column {}: unterminated single quote", i + 1);
      word.append(line.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      in_word = true;
      const std::size_t open = i;
      for (++i;; ++i) {
        if (i >= line.size()) return fail(Category::invalid_argument, "column {}: unterminated double quote", open + 1);
        const char d = line[i];
        if (d == '"') break;
        if (d == '$' || d == '`') return refuse(d, i);
        if (d == '\\' && i + 1 < line.size() &&
            (line[i + 1] == '"' || line[i + 1] == '\\' || line[i + 1] == '$' || line[i + 1] == '`'))
          word += line[++i];
        else word += d;
      }
    } else if (c == '\\') {
      in_word = true;
      if (i + 1 >= line.size())
        return fail(Category::invalid_argument, "column {}: a lone backslash ends the line", i + 1);
      word += line[++i];
    } else if (c == '#' && !in_word) {
      break;  // a comment to the end of the line
    } else if (c == '~' && !in_word) {
      return refuse(c, i);
    } else if (std::string_view("$`|&;<>()*?{}[]").find(c) != std::string_view::npos) {
      return refuse(c, i);
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return fail(Category::invalid_argument, "column {}: control character {:#04x}", i + 1,
                  static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      in_word = true;
      word += c;
    }
  }
  KCACHE_CHECK(push());
  return words;
}

}  // namespace kcache::migrate
