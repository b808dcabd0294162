// The strict include scan of CUDA sources (nvrtc.hpp scan_includes).
//
// The lexer follows NVRTC's preprocessor as far as finding directives
// needs: trigraphs ??= and ??/ (NVRTC honours them under -std=c++11/14),
// backslash-newline splices (also with spaces or tabs between, as NVRTC
// accepts), comments as whitespace (a block comment may continue a
// directive onto the next line), string, character and raw string literals
// (so that "#include" inside them is text), digit separators, `#` and `%:`
// introducers, and header names lexed before comments (`<a//b.h>` is one
// name). Where it cannot be exact it errs towards seeing more directives:
// every directive is scanned whatever #if says, a block comment spanning
// lines starts a new line, a byte-order mark is whitespace.
#include "kcache/nvrtc/nvrtc.hpp"

#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace kcache::nvrtc {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_ident(char c) { return is_ident_start(c) || is_digit(c); }

/// The text after translation phases 1 and 2 (the parts directives care
/// about), with where each physical line starts in it.
struct Logical {
  std::string text;
  std::vector<std::size_t> line_starts;  ///< offset in text of physical line k+1

  std::size_t line_of(std::size_t offset) const {
    return static_cast<std::size_t>(std::upper_bound(line_starts.begin(), line_starts.end(), offset) -
                                    line_starts.begin());
  }
};

Logical splice(std::string_view raw) {
  Logical out;
  out.text.reserve(raw.size());
  out.line_starts.push_back(0);
  std::size_t i = raw.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (i < raw.size()) {
    const bool trigraph =
        raw[i] == '?' && i + 2 < raw.size() && raw[i + 1] == '?' && (raw[i + 2] == '=' || raw[i + 2] == '/');
    const char c = trigraph ? (raw[i + 2] == '=' ? '#' : '\\') : raw[i];
    const std::size_t width = trigraph ? 3 : 1;
    if (c == '\\') {
      std::size_t j = i + width;
      while (j < raw.size() && (raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\f' || raw[j] == '\v')) ++j;
      if (j < raw.size() && raw[j] == '\n') {  // a splice: the next physical line continues this one
        i = j + 1;
        out.line_starts.push_back(out.text.size());
        continue;
      }
      // Not a splice: ??/ stays as written (under C++17 it is no trigraph).
      out.text.append(raw.substr(i, width));
      i += width;
      continue;
    }
    out.text += c;
    if (c == '\n') out.line_starts.push_back(out.text.size());
    i += width;
  }
  return out;
}

enum class Form { quoted, angled, computed };

/// One place a file may be read: #include and kin, or __has_include.
struct Found {
  std::size_t line = 0;
  std::string keyword;  ///< include, include_next, import, embed, __has_include, __has_include_next
  std::string text;     ///< as written, for messages (bounded, newlines as spaces)
  Form form = Form::computed;
  std::string name;  ///< the header name, without its quotes or brackets
};

class Lexer {
  static constexpr std::size_t k_max_text = 200;   ///< of a directive, in messages
  static constexpr std::size_t k_max_name = 4096;  ///< of a header name (paths are at most 1024)

 public:
  explicit Lexer(std::string_view raw) : m_logical(splice(raw)), s(m_logical.text) {}

  std::vector<Found> run() {
    bool line_start = true;
    while (i < s.size() && !m_stop) {
      const char c = s[i];
      const char next = i + 1 < s.size() ? s[i + 1] : '\0';
      if (c == '\n') {
        line_start = true;
        ++i;
      } else if (is_space(c)) {
        ++i;
      } else if (c == '/' && next == '/') {
        i = end_of_line(i);
      } else if (c == '/' && next == '*') {
        const std::size_t end = comment_end(i);
        // A directive may follow a comment that spans lines: it is the first
        // token of what remains of the line.
        if (std::find(s.begin() + static_cast<std::ptrdiff_t>(i), s.begin() + static_cast<std::ptrdiff_t>(end), '\n') !=
            s.begin() + static_cast<std::ptrdiff_t>(end))
          line_start = true;
        i = end;
      } else if (line_start && (c == '#' || (c == '%' && next == ':'))) {
        line_start = false;
        directive();
      } else {
        line_start = false;
        token();
      }
    }
    return std::move(m_found);
  }

 private:
  std::size_t end_of_line(std::size_t from) const {
    auto e = s.find('\n', from);
    return e == std::string::npos ? s.size() : e;
  }
  std::size_t comment_end(std::size_t from) const {
    auto e = s.find("*/", from + 2);
    return e == std::string::npos ? s.size() : e + 2;
  }
  /// Skips spaces and comments up to the end of the logical line.
  void skip_inline() {
    while (i < s.size()) {
      if (is_space(s[i])) ++i;
      else if (s.compare(i, 2, "/*") == 0) i = comment_end(i);
      else if (s.compare(i, 2, "//") == 0) i = end_of_line(i);
      else break;
    }
  }
  std::string_view identifier() {
    const std::size_t start = i;
    while (i < s.size() && is_ident(s[i])) ++i;
    return std::string_view(s).substr(start, i - start);
  }
  void skip_quoted(char quote) {
    ++i;
    while (i < s.size() && s[i] != quote && s[i] != '\n')
      i += (s[i] == '\\' && i + 1 < s.size() && s[i + 1] != '\n') ? 2 : 1;
    if (i < s.size() && s[i] == quote) ++i;
  }
  /// At the '"' of R"delim( ... )delim" (a delimiter of at most 16 bytes).
  void skip_raw() {
    const std::size_t limit = std::min(s.size(), i + 18);
    std::size_t open = i + 1;
    while (open < limit && s[open] != '(' && std::string_view(" )\\\t\v\f\n\"").find(s[open]) == std::string_view::npos)
      ++open;
    if (open >= limit || s[open] != '(') {  // no raw string: NVRTC errors; lex it as a plain one
      skip_quoted('"');
      return;
    }
    const std::string close = ")" + s.substr(i + 1, open - i - 1) + "\"";
    const auto end = s.find(close, open + 1);
    i = end == std::string::npos ? s.size() : end + close.size();
  }
  void pp_number() {
    while (i < s.size()) {
      const char c = s[i];
      if (is_ident(c) || c == '.') ++i;
      else if (c == '\'' && i + 1 < s.size() && is_ident(s[i + 1])) ++i;  // 1'000: a separator, no char literal
      else if ((c == '+' || c == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P'))
        ++i;
      else break;
    }
  }
  void token() {
    const char c = s[i];
    if (c == '"' || c == '\'') return skip_quoted(c);
    if (is_digit(c) || (c == '.' && i + 1 < s.size() && is_digit(s[i + 1]))) return pp_number();
    if (!is_ident_start(c)) {
      ++i;
      return;
    }
    const std::size_t start = i;
    const std::string_view id = identifier();
    if (i < s.size() && s[i] == '"' && (id == "R" || id == "LR" || id == "uR" || id == "UR" || id == "u8R"))
      return skip_raw();
    if (i < s.size() && (s[i] == '"' || s[i] == '\'') && (id == "L" || id == "u" || id == "U" || id == "u8"))
      return skip_quoted(s[i]);
    if (id == "__has_include" || id == "__has_include_next") {
      // Only a use: `defined(__has_include)` and `#ifdef __has_include` test it.
      const std::size_t after = i;
      skip_inline();
      if (i < s.size() && s[i] == '(') {
        ++i;
        skip_inline();
        header_name(std::string(id), start);
      } else {
        i = after;
      }
    }
  }
  void directive() {
    const std::size_t start = i;
    i += s[i] == '#' ? 1 : 2;
    skip_inline();
    const std::string_view name = identifier();
    if (name == "include" || name == "include_next" || name == "import" || name == "embed") {
      skip_inline();
      header_name(std::string(name), start);
    }
    // The rest of the line is lexed as tokens: an #if may hold __has_include.
  }
  /// At what follows the directive name (or "__has_include("): a header
  /// name, or anything else (computed).
  void header_name(std::string keyword, std::size_t start) {
    Found f;
    f.line = m_logical.line_of(start);
    f.keyword = std::move(keyword);
    // Every scan here is bounded: a hostile line of many `__has_include("`
    // must not make the lexer quadratic.
    std::size_t text_end = start;
    while (text_end < s.size() && text_end < start + k_max_text && s[text_end] != '\n') ++text_end;
    if (i < s.size() && (s[i] == '"' || s[i] == '<')) {
      const char close = s[i] == '"' ? '"' : '>';
      std::size_t e = i + 1;
      const std::size_t limit = std::min(s.size(), i + 1 + k_max_name);
      while (e < limit && s[e] != close && s[e] != '\n') ++e;
      if (e < limit && s[e] == close) {  // else unterminated or longer than any path kcache accepts: computed
        f.form = s[i] == '"' ? Form::quoted : Form::angled;
        f.name = s.substr(i + 1, e - i - 1);
        i = e + 1;
        text_end = i;
      }
    }
    f.text = s.substr(start, std::min<std::size_t>(text_end - start, k_max_text));
    std::replace(f.text.begin(), f.text.end(), '\n', ' ');
    // scan_includes fails at a computed name or a *_next: nothing after it
    // matters, and stopping keeps a hostile file of them linear.
    m_stop = f.form == Form::computed || f.keyword.ends_with("_next");
    m_found.push_back(std::move(f));
  }

  Logical m_logical;
  const std::string& s;
  std::size_t i = 0;
  bool m_stop = false;
  std::vector<Found> m_found;
};

std::string folder_of(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

}  // namespace

Result<IncludeScan> scan_includes(std::shared_ptr<const definition::SourceFile> source,
                                  const std::vector<std::string>& include_dirs, const ReadFile& read) {
  IncludeScan out;
  out.inputs.push_back(std::move(source));
  std::map<std::string, std::size_t, std::less<>> input_index{{out.inputs.front()->path, 0}};
  struct Named {
    std::string path;
    std::string where;
  };
  std::map<std::string, Named, std::less<>> named;                // include name → the file it means in this kernel
  std::set<std::string, std::less<>> absent;                      // candidates probed in vain, to record once
  std::deque<std::pair<std::size_t, std::size_t>> queue{{0, 0}};  // (index into inputs, depth)
  while (!queue.empty()) {
    const auto [index, depth] = queue.front();
    queue.pop_front();
    const auto file = out.inputs[index];
    const std::string dir = folder_of(file->path);
    for (const Found& d : Lexer(file->content).run()) {
      const std::string where = fmt::format("{}:{}: `{}`", file->path, d.line, util::escape_untrusted(d.text));
      const bool has = d.keyword.starts_with("__has");
      if (d.keyword.ends_with("_next"))
        return fail(Category::invalid_argument,
                    "{}: {} cannot be tracked: kcache hands NVRTC every project header in memory under the name "
                    "its #include writes, so there is no next folder to search; include the header by a name of "
                    "its own",
                    where, has ? "__has_include_next" : "#include_next");
      if (d.form == Form::computed)
        return fail(Category::invalid_argument,
                    "{}: a computed {} cannot be tracked (kcache must know every file a CUDA kernel reads to know "
                    "when it must be compiled again): write the header name literally, \"name.cuh\" or "
                    "<name.cuh>",
                    where, has ? "__has_include" : "#" + d.keyword);
      if (d.name.empty()) return fail(Category::invalid_argument, "{}: names an empty path", where);
      if (d.name.front() == '/')
        return fail(Category::invalid_argument,
                    "{}: an absolute path; kcache reads only files inside the manifest's folder (NVRTC would read "
                    "this one behind kcache's back): copy the header into the project and include it by a "
                    "relative name or through include_dirs",
                    where);
      // Where the compiler would look, in order: beside the including file
      // (quoted names only), then each include dir.
      std::vector<std::string> candidates;
      auto add = [&](std::string_view folder) -> Result<void> {
        auto p = definition::include_path(folder, d.name);
        if (!p) return fail(p.error().category, "{}: {}", where, p.error().message);
        candidates.push_back(std::move(*p));
        return {};
      };
      if (d.form == Form::quoted) KCACHE_CHECK(add(dir));
      for (const auto& inc : include_dirs) KCACHE_CHECK(add(inc == "." ? std::string_view() : std::string_view(inc)));
      std::shared_ptr<const definition::SourceFile> found;
      for (const auto& candidate : candidates) {
        auto got = read(candidate);
        if (got) {
          found = *got;
          break;
        }
        if (got.error().category == Category::not_found) {  // not here: the next folder
          if (absent.insert(candidate).second) out.absent.push_back(candidate);
          if (out.inputs.size() + out.absent.size() > k_max_record_inputs)
            return fail(Category::invalid_argument,
                        "{}: over {} files and include candidates — kcache records at most that many inputs per "
                        "kernel",
                        where, k_max_record_inputs);
          continue;
        }
        // Refused (a FIFO, a device, a directory, over the size limit):
        // never handed to NVRTC, which would block on a FIFO for ever.
        return fail(got.error().category, "{}: {}", where, got.error().message);
      }
      // Not in the project: a CUDA toolkit or system header, or one an #if
      // never reaches. NVRTC has no folder to find it in (nvrtc.hpp), so a
      // kernel that does include it fails to compile, naming it.
      if (!found) continue;
      auto [it, fresh] = named.try_emplace(d.name, Named{found->path, where});
      if (fresh) {
        out.headers.push_back({d.name, found});
      } else if (it->second.path != found->path) {
        return fail(Category::invalid_argument,
                    "{}: means {} here but {} at {}: NVRTC is given the project's headers in memory by the name "
                    "their #include writes, so one name must mean one file in a kernel; rename one of the two or "
                    "include it by a longer path",
                    where, found->path, it->second.path, it->second.where);
      }
      if (input_index.contains(found->path)) continue;
      if (out.inputs.size() + out.absent.size() >= k_max_record_inputs)
        return fail(Category::invalid_argument,
                    "{}: over {} included files — kcache records at most that many inputs per kernel", where,
                    k_max_record_inputs);
      if (depth + 1 > definition::k_max_include_depth)
        return fail(Category::invalid_argument, "{}: includes nest deeper than {} files", where,
                    definition::k_max_include_depth);
      input_index.emplace(found->path, out.inputs.size());
      out.inputs.push_back(found);
      queue.emplace_back(out.inputs.size() - 1, depth + 1);
    }
  }
  return out;
}

Result<IncludeScan> scan_inputs(const definition::KernelSpec& spec, definition::FileCache& files) {
  auto source = KCACHE_TRY(files.get(spec.source));
  return scan_includes(std::move(source), spec.include_dirs, [&](const std::string& rel) { return files.get(rel); });
}

std::vector<InputFile> recorded_inputs(const IncludeScan& scan) {
  std::vector<InputFile> out;
  out.reserve(scan.inputs.size() + scan.absent.size());
  for (const auto& f : scan.inputs) out.push_back({f->path, f->hash});
  for (const auto& path : scan.absent) out.push_back({path, k_absent_input});
  return out;
}

}  // namespace kcache::nvrtc
