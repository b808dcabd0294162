#include "kcache/util/glob.hpp"

namespace kcache::util {

bool match_glob(std::string_view pattern, std::string_view name) {
  // Iterative wildcard match with one backtrack point (the last `*`): each
  // character of `name` is revisited at most once per star.
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p, ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace kcache::util
