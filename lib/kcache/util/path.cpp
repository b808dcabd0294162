#include "kcache/util/path.hpp"

namespace kcache::util {

bool is_contained_relative_path(std::string_view path) {
  if (path.empty() || path.size() > k_max_relative_path) return false;
  if (path.front() == '/' || path.front() == '~') return false;
  for (char c : path)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = path.find('/', start);
    const std::string_view part = path.substr(start, end == std::string_view::npos ? path.npos : end - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

}  // namespace kcache::util
