// Reading compile commands (migrate.hpp): shell words, compile_commands
// JSON, and the glslc / glslangValidator options.
#include "kcache/migrate/migrate.hpp"
#include "kcache/migrate/migrate_internal.hpp"

#include "kcache/manifest/manifest.hpp"

#include "kcache/util/path.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <variant>

namespace kcache::migrate {
namespace {

using definition::Language;
using definition::Optimize;
using definition::Stage;

constexpr std::size_t k_max_listed_problems = 20;

// ---------------------------------------------------------------------------
// compile_commands JSON: just enough of RFC 8259 for an array of objects of
// strings (numbers, booleans and null are accepted and ignored). Depth and
// sizes are bounded by the input limits.

struct Json;
using JsonArray = std::vector<Json>;
using JsonObject = std::vector<std::pair<std::string, Json>>;
struct Json {
  std::variant<std::monostate, std::string, std::unique_ptr<JsonArray>, std::unique_ptr<JsonObject>> v;
  int line = 0;
};

class JsonReader {
 public:
  JsonReader(std::string_view text, std::size_t max_depth) : m_text(text), m_max_depth(max_depth) {}

  Result<Json> document() {
    auto value = KCACHE_TRY(parse_value(0));
    skip_space();
    if (m_pos != m_text.size()) return bad("text after the JSON value");
    return value;
  }

 private:
  tl::unexpected<Error> bad(std::string_view what) const {
    return fail(Category::invalid_argument, "line {}: JSON: {}", m_line, what);
  }
  void skip_space() {
    while (m_pos < m_text.size()) {
      char c = m_text[m_pos];
      if (c == '\n') ++m_line;
      else if (c != ' ' && c != '\t' && c != '\r') break;
      ++m_pos;
    }
  }
  bool eat(char c) {
    skip_space();
    if (m_pos < m_text.size() && m_text[m_pos] == c) return ++m_pos, true;
    return false;
  }
  Result<Json> parse_value(std::size_t depth) {
    if (depth > m_max_depth) return bad("nested too deeply");
    skip_space();
    if (m_pos >= m_text.size()) return bad("unexpected end of input");
    Json out;
    out.line = m_line;
    const char c = m_text[m_pos];
    if (c == '"') {
      out.v = KCACHE_TRY(parse_string());
    } else if (c == '[') {
      ++m_pos;
      auto arr = std::make_unique<JsonArray>();
      if (!eat(']')) {
        do arr->push_back(KCACHE_TRY(parse_value(depth + 1)));
        while (eat(','));
        if (!eat(']')) return bad("expected ',' or ']'");
      }
      out.v = std::move(arr);
    } else if (c == '{') {
      ++m_pos;
      auto obj = std::make_unique<JsonObject>();
      if (!eat('}')) {
        do {
          skip_space();
          if (m_pos >= m_text.size() || m_text[m_pos] != '"') return bad("expected a member name");
          auto key = KCACHE_TRY(parse_string());
          if (!eat(':')) return bad("expected ':'");
          obj->emplace_back(std::move(key), KCACHE_TRY(parse_value(depth + 1)));
        } while (eat(','));
        if (!eat('}')) return bad("expected ',' or '}'");
      }
      out.v = std::move(obj);
    } else {
      // A number, true, false or null: skipped, its kind is never needed.
      std::size_t start = m_pos;
      while (m_pos < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) ||
                                       m_text[m_pos] == '-' || m_text[m_pos] == '+' || m_text[m_pos] == '.'))
        ++m_pos;
      std::string_view word = m_text.substr(start, m_pos - start);
      const bool number = !word.empty() && (std::isdigit(static_cast<unsigned char>(word[0])) || word[0] == '-');
      if (!number && word != "true" && word != "false" && word != "null") return bad("unexpected character");
    }
    return out;
  }
  Result<std::string> parse_string() {
    ++m_pos;  // the opening quote
    std::string out;
    while (m_pos < m_text.size()) {
      const char c = m_text[m_pos++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return bad("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (m_pos >= m_text.size()) break;
      const char e = m_text[m_pos++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          auto hex4 = [&]() -> std::optional<char32_t> {
            if (m_pos + 4 > m_text.size()) return std::nullopt;
            char32_t v = 0;
            for (int i = 0; i < 4; ++i) {
              const char h = m_text[m_pos++];
              v <<= 4;
              if (h >= '0' && h <= '9') v |= static_cast<char32_t>(h - '0');
              else if (h >= 'a' && h <= 'f') v |= static_cast<char32_t>(h - 'a' + 10);
              else if (h >= 'A' && h <= 'F') v |= static_cast<char32_t>(h - 'A' + 10);
              else return std::nullopt;
            }
            return v;
          };
          auto cp = hex4();
          if (!cp) return bad("malformed \\u escape");
          if (*cp >= 0xd800 && *cp < 0xdc00) {
            if (m_pos + 2 > m_text.size() || m_text[m_pos] != '\\' || m_text[m_pos + 1] != 'u')
              return bad("lone surrogate in \\u escape");
            m_pos += 2;
            auto low = hex4();
            if (!low || *low < 0xdc00 || *low > 0xdfff) return bad("lone surrogate in \\u escape");
            *cp = 0x10000 + ((*cp - 0xd800) << 10) + (*low - 0xdc00);
          } else if (*cp >= 0xdc00 && *cp <= 0xdfff) {
            return bad("lone surrogate in \\u escape");
          }
          if (*cp < 0x80) {
            out += static_cast<char>(*cp);
          } else if (*cp < 0x800) {
            out += static_cast<char>(0xc0 | (*cp >> 6));
            out += static_cast<char>(0x80 | (*cp & 0x3f));
          } else if (*cp < 0x10000) {
            out += static_cast<char>(0xe0 | (*cp >> 12));
            out += static_cast<char>(0x80 | ((*cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (*cp & 0x3f));
          } else {
            out += static_cast<char>(0xf0 | (*cp >> 18));
            out += static_cast<char>(0x80 | ((*cp >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((*cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (*cp & 0x3f));
          }
          break;
        }
        default: return bad("unknown escape in a string");
      }
    }
    return bad("unterminated string");
  }

  std::string_view m_text;
  std::size_t m_max_depth;
  std::size_t m_pos = 0;
  int m_line = 1;
};

// ---------------------------------------------------------------------------
// One raw command: its words, the line it starts on, the folder it ran in.

struct RawCommand {
  int line = 0;
  std::vector<std::string> words;
  std::filesystem::path directory;  ///< absolute
};

std::string tool_of(std::string_view program);
std::optional<Stage> stage_from_source(std::string_view path);

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

const Json* member(const JsonObject& obj, std::string_view name) {
  for (const auto& [k, v] : obj)
    if (k == name) return &v;
  return nullptr;
}

Result<std::vector<RawCommand>> read_json(std::string_view text, const Options& o, Problems& problems) {
  JsonReader reader(text, o.limits.max_json_depth);
  auto doc = KCACHE_TRY(reader.document());
  auto* arr = std::get_if<std::unique_ptr<JsonArray>>(&doc.v);
  if (!arr)
    return fail(Category::invalid_argument, "line {}: JSON input must be an array of command objects", doc.line);
  if ((*arr)->size() > o.limits.max_commands)
    return fail(Category::invalid_argument, "more than {} commands — a manifest holds at most that many kernels",
                o.limits.max_commands);
  std::vector<RawCommand> out;
  for (const Json& item : **arr) {
    auto* obj = std::get_if<std::unique_ptr<JsonObject>>(&item.v);
    if (!obj) {
      problems.add(item.line, "each array element must be an object with \"command\" or \"arguments\"");
      continue;
    }
    RawCommand raw;
    raw.line = item.line;
    raw.directory = o.cwd;
    if (const Json* dir = member(**obj, "directory")) {
      auto* s = std::get_if<std::string>(&dir->v);
      if (!s || s->empty()) {
        problems.add(dir->line, "\"directory\" must be a non-empty string");
        continue;
      }
      raw.directory = (o.cwd / *s).lexically_normal();
    }
    const Json* command = member(**obj, "command");
    const Json* arguments = member(**obj, "arguments");
    if (command && arguments) {
      problems.add(item.line, "give \"command\" or \"arguments\", not both");
      continue;
    }
    if (command) {
      auto* s = std::get_if<std::string>(&command->v);
      if (!s) {
        problems.add(command->line, "\"command\" must be a string");
        continue;
      }
      if (s->size() > o.limits.max_line_bytes) {
        problems.add(command->line, fmt::format("command longer than {} bytes", o.limits.max_line_bytes));
        continue;
      }
      auto split = split_command(*s, item.line, raw.directory, o.limits.max_words);
      if (!split) {
        problems.add(command->line, split.error().message);
        continue;
      }
      raw = std::move(*split);
    } else if (arguments) {
      auto* list = std::get_if<std::unique_ptr<JsonArray>>(&arguments->v);
      bool ok = list && (*list)->size() <= o.limits.max_words;
      if (ok)
        for (const Json& w : **list) {
          auto* s = std::get_if<std::string>(&w.v);
          if (!s) {
            ok = false;
            break;
          }
          raw.words.push_back(*s);
        }
      if (!ok) {
        problems.add(arguments->line,
                     fmt::format("\"arguments\" must be an array of at most {} strings", o.limits.max_words));
        continue;
      }
    } else {
      problems.add(item.line, "object has neither \"command\" nor \"arguments\"");
      continue;
    }
    // An entry that runs no command (ninja -t compdb lists phony and
    // custom targets with "command": "") compiles nothing: understand()
    // counts it among the skipped.
    out.push_back(std::move(raw));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Options of the two compilers.

std::optional<Stage> stage_from_name(std::string_view s) {
  static const std::map<std::string_view, Stage> names{{"vert", Stage::vertex},
                                                       {"vertex", Stage::vertex},
                                                       {"frag", Stage::fragment},
                                                       {"fragment", Stage::fragment},
                                                       {"geom", Stage::geometry},
                                                       {"geometry", Stage::geometry},
                                                       {"tesc", Stage::tess_control},
                                                       {"tesscontrol", Stage::tess_control},
                                                       {"tese", Stage::tess_evaluation},
                                                       {"tesseval", Stage::tess_evaluation},
                                                       {"comp", Stage::compute},
                                                       {"compute", Stage::compute},
                                                       {"task", Stage::task},
                                                       {"mesh", Stage::mesh}};
  auto it = names.find(s);
  return it == names.end() ? std::nullopt : std::optional<Stage>(it->second);
}

/// The stage a file's suffix implies (both tools' rule): "x.comp",
/// "x.comp.glsl" and "x.comp.hlsl" are compute.
std::optional<Stage> stage_from_source(std::string_view path) {
  auto name = std::filesystem::path(path).filename().string();
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    auto dot = name.find('.', start);
    parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (parts.size() < 2) return std::nullopt;
  std::string ext = parts.back();
  if ((ext == "glsl" || ext == "hlsl") && parts.size() >= 3) ext = parts[parts.size() - 2];
  return stage_from_name(ext);
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// The SPIR-V version each kcache target produces (compile/compiler.cpp).
std::string_view spirv_of_target(std::string_view target) {
  if (target == "vulkan1.0") return "spv1.0";
  if (target == "vulkan1.1") return "spv1.3";
  if (target == "vulkan1.3") return "spv1.6";
  return "spv1.5";
}

struct Notes {
  std::map<std::string, std::pair<std::size_t, std::string>> dropped;  // option -> (count, why)
  void add(const std::string& option, std::string_view why) {
    auto& [count, text] = dropped[option];
    ++count;
    text = why;
  }
};

/// One command's options into a Command; problems are listed, not fatal to the others.
class CommandParser {
 public:
  CommandParser(const RawCommand& raw, const Options& o, Notes& notes) : m_raw(raw), m_o(o), m_notes(notes) {}

  /// Parses the words as `tool`'s ("glslc" or "glslangValidator"); `first`
  /// is the index of the first option (0 when the program is left out).
  Result<Command> parse_as(std::string tool, std::size_t first) {
    m_cmd.line = m_raw.line;
    m_cmd.tool = std::move(tool);
    m_first = first;
    KCACHE_CHECK(m_cmd.tool == "glslc" ? parse_glslc() : parse_glslang());
    return finish();
  }

 private:
  tl::unexpected<Error> refuse(std::string message) const { return fail(Category::invalid_argument, "{}", message); }
  tl::unexpected<Error> cannot(std::string_view option, std::string_view why) const {
    return fail(Category::invalid_argument, "{} {}: kcache cannot express it — {}", m_cmd.tool,
                util::shown_untrusted(option), why);
  }
  tl::unexpected<Error> unknown(std::string_view option) const {
    return fail(Category::invalid_argument,
                "{} option '{}' is not one kcache understands — remove it, or compile that kernel outside kcache",
                m_cmd.tool, util::shown_untrusted(option));
  }
  Result<std::string> value_of(std::size_t& i, std::string_view option) {
    if (i + 1 >= m_raw.words.size()) return fail(Category::invalid_argument, "{} {} needs a value", m_cmd.tool, option);
    return m_raw.words[++i];
  }
  void drop(const std::string& option, std::string_view why) { m_notes.add(option, why); }

  Result<std::string> relative_path(std::string_view given, std::string_view what) {
    if (given.empty()) return fail(Category::invalid_argument, "empty {} path", what);
    std::filesystem::path p(given);
    if (!given.empty() && given[0] == '~')
      return fail(Category::invalid_argument, "{} '{}' starts with '~' — give the path itself", what,
                  util::shown_untrusted(given));
    auto abs = (p.is_absolute() ? p : m_raw.directory / p).lexically_normal();
    auto rel = abs.lexically_relative(m_o.root).generic_string();
    if (rel == ".") return rel;
    while (rel.size() > 1 && rel.back() == '/') rel.pop_back();
    if (!util::is_contained_relative_path(rel))
      return fail(Category::invalid_argument,
                  "{} '{}' is outside the manifest's folder {} — write the manifest in a folder that holds every "
                  "source and include dir (-o DIR/kcache.toml; outputs may be anywhere)",
                  what, util::shown_untrusted(given), m_o.root.string());
    return rel;
  }

  /// An output (-o, -MF) relative to the root when inside it, else absolute
  /// and normal: outputs only name kernels, and an out-of-tree build always
  /// writes them elsewhere.
  std::string output_path(std::string_view given) const {
    std::filesystem::path p(given);
    auto abs = (p.is_absolute() ? p : m_raw.directory / p).lexically_normal();
    auto rel = abs.lexically_relative(m_o.root).generic_string();
    return util::is_contained_relative_path(rel) ? rel : abs.generic_string();
  }

  Result<void> set_define(std::string_view text) {
    if (text.empty()) return refuse(fmt::format("{} -D needs a macro name", m_cmd.tool));
    auto eq = text.find('=');
    std::string name(text.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : std::string(text.substr(eq + 1));
    if (!is_identifier(name))
      return refuse(
          fmt::format("-D{}: '{}' is not a macro name", util::shown_untrusted(text), util::shown_untrusted(name)));
    if (std::any_of(value.begin(), value.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
      return refuse(fmt::format("-D{}: the value holds a control character — a define is one line", name));
    // The manifest's rule for values (the manifest written must read back).
    if (auto why = manifest::value_spills_over(value))
      return refuse(fmt::format("-D{}: the value '{}' {} — kcache writes every define on a preamble line of its own",
                                name, util::shown_untrusted(value), *why));
    auto [it, inserted] = m_defines.emplace(name, value);
    if (!inserted && it->second != value)
      return refuse(fmt::format("-D{} is given twice with different values ('{}' and '{}')", name,
                                util::shown_untrusted(it->second), util::shown_untrusted(value)));
    return {};
  }
  Result<void> set_source(const std::string& word) {
    if (m_source) return refuse("more than one source file — kcache compiles one source per kernel");
    m_source = word;
    return {};
  }
  Result<void> set_target(std::string_view t) {
    if (t == "vulkan") t = "vulkan1.0";
    if (!definition::is_known_target(t))
      return cannot(fmt::format("--target-env={}", util::shown_untrusted(t)),
                    "kcache builds for vulkan1.0, vulkan1.1, vulkan1.2 or vulkan1.3");
    m_cmd.target = std::string(t);
    return {};
  }

  Result<void> parse_glslc() {
    const auto& w = m_raw.words;
    bool files_only = false;
    for (std::size_t i = m_first; i < w.size(); ++i) {
      const std::string& a = w[i];
      if (files_only || a.empty() || a[0] != '-' || a == "-") {
        if (a == "-") return refuse("source '-' (standard input) — name the source file");
        KCACHE_CHECK(set_source(a));
      } else if (a == "--") {
        files_only = true;
      } else if (a == "-o") {
        m_output = KCACHE_TRY(value_of(i, a));
      } else if (a.starts_with("-o")) {
        m_output = a.substr(2);
      } else if (a == "-c") {
        m_cmd.compile_only = true;
      } else if (a == "-D") {
        KCACHE_CHECK(set_define(KCACHE_TRY(value_of(i, a))));
      } else if (a.starts_with("-D")) {
        KCACHE_CHECK(set_define(std::string_view(a).substr(2)));
      } else if (a == "-I") {
        m_includes.push_back(KCACHE_TRY(value_of(i, a)));
      } else if (a.starts_with("-I")) {
        m_includes.push_back(a.substr(2));
      } else if (a == "-O") {
        m_cmd.optimize = Optimize::performance;
      } else if (a == "-Os") {
        m_cmd.optimize = Optimize::size;
      } else if (a == "-O0") {
        m_cmd.optimize = Optimize::none;
      } else if (a == "-g") {
        return cannot(a, "kcache does not put debug information (OpLine, source text) into modules; drop -g");
      } else if (a.starts_with("-fshader-stage=")) {
        auto s = stage_from_name(std::string_view(a).substr(15));
        if (!s)
          return cannot(a,
                        "kcache's stages are vertex, fragment, geometry, tesscontrol, tesseval, compute, "
                        "task and mesh");
        m_stage = *s;
      } else if (a.starts_with("-fentry-point=")) {
        m_entry = a.substr(14);
      } else if (a.starts_with("--target-env=")) {
        KCACHE_CHECK(set_target(std::string_view(a).substr(13)));
      } else if (a.starts_with("--target-spv=")) {
        m_spv = a.substr(13);
      } else if (a == "-x") {
        KCACHE_CHECK(set_language(KCACHE_TRY(value_of(i, a))));
      } else if (a.starts_with("-x")) {
        KCACHE_CHECK(set_language(a.substr(2)));
      } else if (a == "-fauto-map-locations") {
        m_auto_map_locations = true;
      } else if (a.starts_with("-fauto-") || a.starts_with("-fresource-set-binding") || a.starts_with("-fhlsl") ||
                 a.starts_with("-fcbuffer") || a.starts_with("-fimage") || a.starts_with("-fsampler") ||
                 a.starts_with("-fssbo") || a.starts_with("-ftexture") || a.starts_with("-fubo") ||
                 a.starts_with("-fuav") || a == "-fpreserve-bindings") {
        return cannot(a,
                      "kcache compiles with the bindings the shader declares; write them in the shader "
                      "(layout(set = S, binding = B))");
      } else if (a == "-w") {
        m_cmd.suppress_warnings = true;
        drop(a, "suppresses warnings (kcache reports them; the module is the same)");
      } else if (a == "-Werror") {
        m_cmd.warnings_as_errors = true;
        drop(a, "turns warnings into errors (kcache reports warnings; the module is the same)");
      } else if (a == "-MD" || a == "-MMD") {
        m_cmd.write_depfile = true;
        drop(a, "writes a dependency file; `kcache build --depfile` writes one for the whole manifest");
      } else if (a == "-MF") {
        m_depfile = KCACHE_TRY(value_of(i, a));
        drop(a, "names the dependency file; `kcache build --depfile` writes one for the whole manifest");
      } else if (a == "-MT") {
        m_cmd.dep_targets.push_back(KCACHE_TRY(value_of(i, a)));
        drop(a, "names the dependency file's target; `kcache build --depfile` writes one for the whole manifest");
      } else if (a == "-MQ") {
        return cannot(a, "the launcher writes targets as given (-MT), not quoted for make");
      } else if (a == "-mfmt=bin") {
        m_cmd.format = OutputFormat::bin;
      } else if (a == "-mfmt=c") {
        m_cmd.format = OutputFormat::c;
      } else if (a == "-mfmt=num") {
        m_cmd.format = OutputFormat::num;
      } else if (a.starts_with("-std=")) {
        return cannot(a, "kcache compiles with the #version the shader declares; write it in the shader");
      } else if (a == "-S" || a == "-E" || a == "-M" || a == "-MM" || a.starts_with("-mfmt=")) {
        return cannot(a,
                      "it writes something other than a SPIR-V binary (assembly, preprocessed text, "
                      "dependencies or C source)");
      } else {
        return unknown(a);
      }
    }
    return {};
  }

  Result<void> set_language(std::string_view l) {
    if (l == "glsl") m_language = Language::glsl;
    else if (l == "hlsl") m_language = Language::hlsl;
    else return cannot(fmt::format("-x {}", util::shown_untrusted(l)), "kcache compiles glsl or hlsl");
    return {};
  }

  Result<void> parse_glslang() {
    const auto& w = m_raw.words;
    bool vulkan = false;
    std::optional<std::string> source_entry;
    for (std::size_t i = m_first; i < w.size(); ++i) {
      const std::string& a = w[i];
      if (a.empty() || a[0] != '-') {
        KCACHE_CHECK(set_source(a));
      } else if (a == "-V" || a == "-V100" || a == "--client=vulkan100" || a == "--client") {
        if (a == "--client" && KCACHE_TRY(value_of(i, a)) != "vulkan100")
          return cannot(fmt::format("--client {}", w[i]), "kcache builds for Vulkan");
        vulkan = true;
      } else if (a == "-G" || a.starts_with("-G") || a == "--client=opengl100") {
        return cannot(a, "it builds SPIR-V for OpenGL; kcache builds for Vulkan");
      } else if (a == "--target-env") {
        KCACHE_CHECK(set_target(KCACHE_TRY(value_of(i, a))));
        vulkan = true;
      } else if (a == "-S") {
        auto name = KCACHE_TRY(value_of(i, a));
        auto s = stage_from_name(name);
        if (!s)
          return cannot(fmt::format("-S {}", util::shown_untrusted(name)),
                        "kcache's stages are vert, tesc, tese, geom, frag, comp, task and mesh");
        m_stage = *s;
      } else if (a == "-e" || a == "--entry-point") {
        m_entry = KCACHE_TRY(value_of(i, a));
      } else if (a == "--source-entrypoint") {
        source_entry = KCACHE_TRY(value_of(i, a));
      } else if (a == "-D") {
        m_language = Language::hlsl;  // glslangValidator: -D alone means "the input is HLSL"
      } else if (a.starts_with("-D")) {
        KCACHE_CHECK(set_define(std::string_view(a).substr(2)));
      } else if (a.starts_with("-U")) {
        return cannot(a, "a manifest defines macros, it cannot undefine them; remove the #define instead");
      } else if (a == "-I") {
        return refuse(
            "glslangValidator -I takes its folder in the same word (-Iinclude); as written, the next "
            "word is a source file");
      } else if (a.starts_with("-I")) {
        m_includes.push_back(a.substr(2));
      } else if (a == "-o") {
        m_output = KCACHE_TRY(value_of(i, a));
      } else if (a == "-Od") {
        if (m_language == Language::hlsl)
          return cannot(a, "kcache always legalises HLSL as glslangValidator does without -Od");
        drop(a, "disables glslang's optimiser, which runs for HLSL only");
      } else if (a == "-Os") {
        return cannot(a,
                      "glslangValidator's -Os pass list is not spirv-opt's; use optimize = \"size\" "
                      "(glslc -Os) or drop -Os");
      } else if (a.starts_with("-g")) {
        return cannot(a, "kcache does not put debug information (OpLine, source text) into modules; drop it");
      } else if (a == "--auto-map-locations" || a == "--aml") {
        m_auto_map_locations = true;
      } else if (a == "--spirv-val") {
        drop(a, "validates the module; kcache validates every module it builds");
      } else if (a.starts_with("--auto-map") || a == "--amb" || a.starts_with("--shift") ||
                 (a.size() >= 4 && a.size() <= 7 && a.starts_with("--s") && a.ends_with("b")) ||
                 a.starts_with("--resource-set-binding") || a.starts_with("--rsb") || a.starts_with("--hlsl")) {
        return cannot(a, "kcache compiles with the bindings the shader declares; write them in the shader");
      } else if (a == "-w" || a == "--suppress-warnings") {
        m_cmd.suppress_warnings = true;
        drop(a, "changes what glslangValidator prints or how it runs, not the module");
      } else if (a == "-s" || a == "--quiet" || a == "-q" || a == "-t" || a == "-l" || a == "--link") {
        drop(a, "changes what glslangValidator prints or how it runs, not the module");
      } else if (a == "-x" || a == "--vn" || a == "-H" || a == "-E" || a == "-i" || a == "-c") {
        return cannot(a, "it writes something other than a SPIR-V binary (hex text, C source, a listing)");
      } else {
        return unknown(a);
      }
    }
    if (!vulkan)
      return refuse("glslangValidator without -V (or --target-env vulkan1.x) writes no Vulkan SPIR-V — add -V");
    const bool hlsl = m_language ? *m_language == Language::hlsl : m_source && m_source->ends_with(".hlsl");
    if (m_entry && *m_entry != "main" && !hlsl && source_entry != m_entry)
      return cannot(fmt::format("-e {}", util::shown_untrusted(*m_entry)),
                    "kcache names the GLSL function and the entry point alike; add --source-entrypoint with the "
                    "same name");
    if (source_entry && source_entry != m_entry && !(source_entry == "main" && !m_entry))
      return cannot(fmt::format("--source-entrypoint {}", util::shown_untrusted(*source_entry)),
                    "kcache uses one name for the source function and the entry point; give -e the same name");
    return {};
  }

  Result<Command> finish() {
    if (!m_source) return refuse("no source file");
    if (!m_output && m_o.require_output)
      return refuse("no -o OUTPUT — kcache names each kernel after its output; give every command an -o");
    for (const std::string* text : {&*m_source, m_output ? &*m_output : &*m_source})
      if (!util::is_printable_utf8(*text))
        return refuse(fmt::format("path '{}' is not printable UTF-8", util::shown_untrusted(*text)));
    for (const auto& [name, value] : m_defines)
      if (!util::is_printable_utf8(value)) return refuse(fmt::format("-D{}: the value is not printable UTF-8", name));
    m_cmd.source = KCACHE_TRY(relative_path(*m_source, "source"));
    m_cmd.source_as_given = *m_source;
    if (m_output) {
      m_cmd.output = output_path(*m_output);
      m_cmd.output_as_given = *m_output;
    }
    if (m_depfile) m_cmd.depfile = output_path(*m_depfile);
    for (const auto& dir : m_includes) m_cmd.include_dirs.push_back(KCACHE_TRY(relative_path(dir, "include dir")));
    m_cmd.include_dirs_as_given = m_includes;
    if (m_language) m_cmd.language = *m_language;
    else if (m_cmd.source.ends_with(".hlsl")) m_cmd.language = Language::hlsl;
    if (m_stage) m_cmd.stage = *m_stage;
    else if (auto s = stage_from_source(m_cmd.source)) m_cmd.stage = *s;
    else
      return refuse(fmt::format("no stage: '{}' has no stage suffix (.comp, .vert, ...) — add {}",
                                util::shown_untrusted(m_cmd.source),
                                m_cmd.tool == "glslc" ? "-fshader-stage=STAGE" : "-S STAGE"));
    if (m_entry) {
      if (!is_identifier(*m_entry))
        return refuse(fmt::format("entry point '{}' is not a function name", util::shown_untrusted(*m_entry)));
      if (m_cmd.tool == "glslc" && m_cmd.language == Language::glsl && *m_entry != "main")
        return cannot(fmt::format("-fentry-point={}", *m_entry),
                      "glslc renames only HLSL entry points; a GLSL kernel's entry is main");
      m_cmd.entry = *m_entry;
    }
    if (m_cmd.target.empty()) m_cmd.target = "vulkan1.0";  // both tools' default
    if (m_spv && *m_spv != spirv_of_target(m_cmd.target))
      return cannot(fmt::format("--target-spv={}", util::shown_untrusted(*m_spv)),
                    fmt::format("kcache's {} target produces {}; use the --target-env whose version you need",
                                m_cmd.target, spirv_of_target(m_cmd.target)));
    if (m_auto_map_locations) {
      if (m_cmd.stage != Stage::compute)
        return cannot("auto-mapped locations",
                      "kcache compiles with the locations the shader declares; write layout(location = N)");
      drop(m_cmd.tool == "glslc" ? "-fauto-map-locations" : "--auto-map-locations",
           "maps in/out locations, which a compute shader does not have");
    }
    // glslc -O and -Os strip debug instructions (OpName, OpSource, ...) before
    // optimising unless -g is given; glslc -O0 and glslangValidator keep them.
    m_cmd.strip = m_cmd.tool == "glslc" && m_cmd.optimize != Optimize::none;
    m_cmd.defines.assign(m_defines.begin(), m_defines.end());
    return std::move(m_cmd);
  }

  const RawCommand& m_raw;
  const Options& m_o;
  Notes& m_notes;
  Command m_cmd;
  std::size_t m_first = 1;
  std::optional<std::string> m_source, m_output, m_entry, m_spv, m_depfile;
  std::optional<Stage> m_stage;
  std::optional<Language> m_language;
  std::vector<std::string> m_includes;
  std::map<std::string, std::string> m_defines;
  bool m_auto_map_locations = false;
};

/// The program a command names: "glslc", "glslangValidator", or "" when
/// the first word is not one of them.
std::string tool_of(std::string_view program) {
  const std::string name = std::filesystem::path(program).filename().string();
  if (name == "glslc") return "glslc";
  if (name == "glslangValidator" || name == "glslang") return "glslangValidator";
  return "";
}

/// One raw command understood: by the program it names, or, when it names
/// none and starts with an option or a source, by the one tool whose options
/// it fits (both fitting is ambiguous: the output differs between them).
Result<Command> parse_raw(const RawCommand& raw, const Options& o, Notes& notes) {
  const std::string& program = raw.words.front();
  if (std::string tool = tool_of(program); !tool.empty()) return CommandParser(raw, o, notes).parse_as(tool, 1);
  const bool option_or_source = program.starts_with('-') || stage_from_source(program).has_value();
  if (!option_or_source && program.find('=') != std::string::npos && program.find('/') == std::string::npos)
    return fail(Category::invalid_argument, "'{}' sets an environment variable — give the compile command alone",
                util::shown_untrusted(program));
  if (!option_or_source)
    return fail(Category::invalid_argument, "'{}' is not glslc or glslangValidator — give one compile command per line",
                util::shown_untrusted(program));
  Notes glslc_notes, glslang_notes;
  auto as_glslc = CommandParser(raw, o, glslc_notes).parse_as("glslc", 0);
  auto as_glslang = CommandParser(raw, o, glslang_notes).parse_as("glslangValidator", 0);
  if (as_glslc && as_glslang)
    return fail(Category::invalid_argument,
                "the command names no program and its options fit both glslc and glslangValidator — start it "
                "with the program");
  if (as_glslc) {
    for (auto& [option, count_why] : glslc_notes.dropped) notes.add(option, count_why.second);
    return as_glslc;
  }
  if (as_glslang) {
    for (auto& [option, count_why] : glslang_notes.dropped) notes.add(option, count_why.second);
    return as_glslang;
  }
  return fail(Category::invalid_argument,
              "the command names no program and its options fit neither tool (as glslc: {}; as glslangValidator: "
              "{}) — start it with the program",
              as_glslc.error().message, as_glslang.error().message);
}

}  // namespace

Result<Command> parse_command(const std::vector<std::string>& words, const std::filesystem::path& directory,
                              const Options& options) {
  if (words.empty()) return fail(Category::invalid_argument, "empty command");
  if (words.size() > options.limits.max_words)
    return fail(Category::invalid_argument, "more than {} words in one command", options.limits.max_words);
  if (!options.root.is_absolute() || !directory.is_absolute())
    return fail(Category::invalid_argument, "root and directory must be absolute paths");
  Notes notes;
  return parse_raw(RawCommand{0, words, directory}, options, notes);
}

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

namespace {
Result<std::vector<Command>> understand(const std::vector<RawCommand>& raws, const std::string& display_name,
                                        const Options& options, Problems& problems,
                                        std::vector<std::string>& notes_out);
}  // namespace

Result<std::vector<Command>> parse_commands_with_notes(std::string_view text, const std::string& display_name,
                                                       const Options& options, std::vector<std::string>& notes_out) {
  if (text.size() > options.limits.max_input_bytes)
    return fail(Category::invalid_argument, "{}: {} bytes is more than the {} bytes a command list may hold",
                display_name, text.size(), options.limits.max_input_bytes);
  if (!options.root.is_absolute() || !options.cwd.is_absolute())
    return fail(Category::invalid_argument, "root and cwd must be absolute paths");
  Problems problems(display_name);
  // A UTF-8 byte-order mark (editors on Windows write one) is not part of
  // the first command.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<RawCommand> raws;
  if (first != std::string_view::npos && text[first] == '[') {
    auto r = read_json(text, options, problems);
    if (!r) return tl::unexpected(std::move(r).error().context(display_name));
    raws = std::move(*r);
  } else {
    auto r = read_lines(text, options, problems);
    if (!r) return tl::unexpected(std::move(r).error().context(display_name));
    raws = std::move(*r);
  }
  return understand(raws, display_name, options, problems, notes_out);
}

Result<std::vector<Command>> parse_lines_with_notes(const std::vector<CommandLine>& lines,
                                                    const std::string& display_name, const Options& options,
                                                    std::vector<std::string>& notes_out) {
  if (!options.root.is_absolute()) return fail(Category::invalid_argument, "root must be an absolute path");
  if (lines.size() > options.limits.max_commands)
    return fail(Category::invalid_argument, "{}: more than {} commands — a manifest holds at most that many kernels",
                display_name, options.limits.max_commands);
  Problems problems(display_name);
  std::vector<RawCommand> raws;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int line = static_cast<int>(i + 1);
    if (lines[i].words.empty() || lines[i].words.size() > options.limits.max_words || !lines[i].directory.is_absolute())
      problems.add(line, fmt::format("a command needs 1 to {} words and an absolute folder", options.limits.max_words));
    else raws.push_back({line, lines[i].words, lines[i].directory});
  }
  return understand(raws, display_name, options, problems, notes_out);
}

namespace {

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

Result<std::vector<Command>> parse_commands(std::string_view text, const std::string& display_name,
                                            const Options& options) {
  std::vector<std::string> notes;
  return parse_commands_with_notes(text, display_name, options, notes);
}

}  // namespace kcache::migrate
