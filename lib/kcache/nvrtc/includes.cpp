// The conservative include scan of CUDA sources (nvrtc.hpp scan_inputs).
#include "kcache/nvrtc/nvrtc.hpp"

#include <deque>
#include <set>

namespace kcache::nvrtc {
namespace {

struct IncludeLine {
  std::string name;
  bool quoted;
};

/// Every `#include "x"` / `#include <x>` directive in `text`, in order,
/// wherever it stands (inside #if or a comment block too: conservative).
std::vector<IncludeLine> include_lines(std::string_view text) {
  std::vector<IncludeLine> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    auto skip = [&] {
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    };
    skip();
    if (line.empty() || line.front() != '#') continue;
    line.remove_prefix(1);
    skip();
    if (!line.starts_with("include")) continue;
    line.remove_prefix(7);
    skip();
    if (line.empty()) continue;
    char close = line.front() == '"' ? '"' : line.front() == '<' ? '>' : 0;
    if (!close) continue;  // #include MACRO: not followed (docs/design.md "CUDA backend")
    auto stop = line.find(close, 1);
    if (stop == std::string_view::npos || stop == 1) continue;
    out.push_back({std::string(line.substr(1, stop - 1)), close == '"'});
  }
  return out;
}

std::string folder_of(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

}  // namespace

Result<std::vector<std::shared_ptr<const definition::SourceFile>>> scan_inputs(const definition::KernelSpec& spec,
                                                                               definition::FileCache& files) {
  std::vector<std::shared_ptr<const definition::SourceFile>> out;
  out.push_back(KCACHE_TRY(files.get(spec.source)));
  std::set<std::string> seen{out.front()->path};
  std::deque<std::pair<std::size_t, std::size_t>> queue{{0, 0}};  // (index into out, depth)
  while (!queue.empty()) {
    auto [index, depth] = queue.front();
    queue.pop_front();
    if (depth >= definition::k_max_include_depth) continue;
    const auto file = out[index];
    const std::string dir = folder_of(file->path);
    for (const auto& inc : include_lines(file->content)) {
      std::vector<std::string> candidates;
      if (inc.quoted)
        if (auto p = definition::include_path(dir, inc.name)) candidates.push_back(*p);
      for (const auto& d : spec.include_dirs)
        if (auto p = definition::include_path(d == "." ? "" : d, inc.name)) candidates.push_back(*p);
      for (const auto& candidate : candidates) {
        auto found = files.get(candidate);
        if (!found) continue;  // not in the project here: try the next folder
        if (seen.insert((*found)->path).second) {
          if (out.size() >= k_max_record_inputs)
            return fail(Category::invalid_argument,
                        "{}: over {} included files — kcache records at most that many inputs per kernel",
                        spec.source, k_max_record_inputs);
          out.push_back(*found);
          queue.emplace_back(out.size() - 1, depth + 1);
        }
        break;  // the first folder that has it is the one the compiler reads
      }
    }
  }
  return out;
}

}  // namespace kcache::nvrtc
