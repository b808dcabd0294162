// Reading a compilation database (compile_commands.json, `ninja -t
// compdb`): a small JSON reader and the raw commands of its entries.
#include "kcache/migrate/commands_internal.hpp"

#include <fmt/format.h>

#include <cctype>
#include <memory>
#include <optional>
#include <variant>

namespace kcache::migrate::internal {
namespace {

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

const Json* member(const JsonObject& obj, std::string_view name) {
  for (const auto& [k, v] : obj)
    if (k == name) return &v;
  return nullptr;
}

}  // namespace

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

}  // namespace kcache::migrate::internal
