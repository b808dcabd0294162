// Commands -> kcache.toml (migrate.hpp): defaults, variant products, the
// text, and its check through the manifest module.
#include "kcache/migrate/migrate.hpp"

#include "kcache/manifest/manifest.hpp"
#include "kcache/migrate/migrate_internal.hpp"
#include "kcache/util/glob.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace kcache::migrate {
namespace {

using definition::Language;
using definition::Optimize;
using definition::Stage;

/// A TOML basic string. Everything outside printable ASCII is written as a
/// \u escape, so a generated manifest reads the same in any editor and
/// encoding.
std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b == '"' || b == '\\') {
      out += '\\';
      out += static_cast<char>(b);
    } else if (b >= 0x20 && b < 0x7f) {
      out += static_cast<char>(b);
    } else if (b < 0x80) {
      out += fmt::format("\\u{:04X}", b);
    } else {
      // Valid UTF-8 (checked when the command was read): decode one code point.
      const std::size_t len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
      char32_t c = b & (0x7fu >> len);
      for (std::size_t k = 1; k < len && i + k < s.size(); ++k)
        c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3fu);
      i += len - 1;
      out += c > 0xffff ? fmt::format("\\U{:08X}", static_cast<std::uint32_t>(c))
                        : fmt::format("\\u{:04X}", static_cast<std::uint32_t>(c));
    }
  }
  return out + "\"";
}

/// A define or variant value: a bare integer when the manifest reads it back
/// as the same text ("16", "-3", "0"), else a string.
std::string toml_value(std::string_view v) {
  std::string_view digits = v.starts_with('-') ? v.substr(1) : v;
  const bool canonical = !digits.empty() && digits.size() <= 17 &&
                         std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                         (digits == "0" || digits[0] != '0') && v != "-0";
  return canonical ? std::string(v) : toml_string(v);
}

std::string toml_list(const std::vector<std::string>& items, bool values) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + (values ? toml_value(items[i]) : toml_string(items[i]));
  return out + "]";
}

std::string toml_defines(const std::vector<Field>& defines) {
  std::string out = "{ ";
  for (std::size_t i = 0; i < defines.size(); ++i)
    out += fmt::format("{}{} = {}", i ? ", " : "", defines[i].first, toml_value(defines[i].second));
  return out + " }";
}

/// "spv/blur.spv" -> "blur": letters, digits, '_', '-', '.' only.
std::string sanitize_name(std::string_view s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "kernel" + out;
  return out.substr(0, 200);
}

std::string output_stem(const std::string& output) {
  return sanitize_name(std::filesystem::path(output).stem().string());
}

/// Everything but the define values: commands of one shape may be variants.
struct Shape {
  std::string source, entry, target;
  Stage stage;
  Language language;
  Optimize optimize;
  bool strip;
  std::vector<std::string> include_dirs;
  std::vector<std::string> define_names;
  auto operator<=>(const Shape&) const = default;
};

Shape shape_of(const Command& c) {
  Shape s{c.source, c.entry, c.target, c.stage, c.language, c.optimize, c.strip, c.include_dirs, {}};
  for (const auto& [k, v] : c.defines) s.define_names.push_back(k);
  return s;
}

const std::string& define_value(const Command& c, const std::string& name) {
  for (const auto& [k, v] : c.defines)
    if (k == name) return v;
  static const std::string none;
  return none;
}

/// One [[kernel]] table to write.
struct Table {
  std::vector<std::size_t> members;                                        ///< command indices, input order
  std::vector<std::pair<std::string, std::vector<std::string>>> variants;  ///< by name; values in first-seen order
  std::string name;
};

class Grouper {
 public:
  Grouper(const std::vector<Command>& commands, std::vector<Table>& out) : m_cmds(commands), m_out(out) {}

  /// Splits `members` (one shape) into tables whose value tuples are products.
  void split(const std::vector<std::size_t>& members) {
    if (members.size() == 1) return single(members[0]);
    std::vector<std::pair<std::string, std::vector<std::string>>> varying;
    for (const auto& [name, value] : m_cmds[members[0]].defines) {
      std::vector<std::string> values;
      for (std::size_t m : members) {
        const auto& v = define_value(m_cmds[m], name);
        if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
      }
      if (values.size() > 1) varying.emplace_back(name, std::move(values));
    }
    if (varying.empty()) {  // the same kernel under several outputs
      for (std::size_t m : members) single(m);
      return;
    }
    std::uint64_t product = 1;
    for (const auto& [k, values] : varying) product = std::min<std::uint64_t>(product * values.size(), UINT32_MAX);
    std::set<std::vector<std::string>> tuples;
    for (std::size_t m : members) {
      std::vector<std::string> t;
      for (const auto& [k, values] : varying) t.push_back(define_value(m_cmds[m], k));
      tuples.insert(std::move(t));
    }
    if (product == members.size() && tuples.size() == members.size()) {
      m_out.push_back({members, std::move(varying), {}});
      return;
    }
    // Not a product: split by the define with the fewest values (it becomes
    // a plain define of each part) and try each part again.
    auto pivot = std::min_element(varying.begin(), varying.end(),
                                  [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    for (const auto& value : pivot->second) {
      std::vector<std::size_t> part;
      for (std::size_t m : members)
        if (define_value(m_cmds[m], pivot->first) == value) part.push_back(m);
      split(part);
    }
  }
  void single(std::size_t m) { m_out.push_back({{m}, {}, {}}); }

 private:
  const std::vector<Command>& m_cmds;
  std::vector<Table>& m_out;
};

/// The base name of a variant table: the longest prefix its members'
/// output stems share, cut at a separator ("matmul_" of "matmul_A_f32",
/// "matmul_A_f16"), else the source's stem.
std::string group_name(const std::vector<Command>& cmds, const Table& t) {
  std::string prefix = output_stem(cmds[t.members[0]].output);
  for (std::size_t m : t.members) {
    const std::string stem = output_stem(cmds[m].output);
    std::size_t n = 0;
    while (n < prefix.size() && n < stem.size() && prefix[n] == stem[n]) ++n;
    prefix.resize(n);
  }
  // Not into the variant part: "matmul_ACC_TYPE_float_..." -> "matmul".
  for (const auto& [key, values] : t.variants)
    for (auto at = prefix.find(key); at != std::string::npos; at = prefix.find(key, at + 1))
      if (at > 0 && std::string_view("_-.").find(prefix[at - 1]) != std::string_view::npos) {
        prefix.resize(at);
        break;
      }
  auto cut = prefix.find_last_of("_-.");
  prefix = cut == std::string::npos ? std::string() : prefix.substr(0, cut);
  while (!prefix.empty() && std::string_view("_-.").find(prefix.back()) != std::string_view::npos) prefix.pop_back();
  if (prefix.empty()) prefix = sanitize_name(std::filesystem::path(cmds[t.members[0]].source).stem().string());
  return prefix;
}

std::string unique_name(std::string base, std::set<std::string>& used) {
  std::string name = base;
  for (int n = 2; !used.insert(name).second; ++n) name = fmt::format("{}_{}", base, n);
  return name;
}

/// The expanded name of member `m` of table `t` (manifest.cpp's rule: variant
/// keys sorted, "base[K1=v1,K2=v2]").
std::string expanded_name(const std::vector<Command>& cmds, const Table& t, std::size_t m) {
  if (t.variants.empty()) return t.name;
  std::string suffix;
  for (const auto& [k, values] : t.variants)
    suffix += fmt::format("{}{}={}", suffix.empty() ? "" : ",", k, define_value(cmds[m], k));
  return fmt::format("{}[{}]", t.name, suffix);
}

/// Values every command shares; nullopt when they differ.
template <typename Get>
auto common(const std::vector<Command>& cmds, Get get) -> std::optional<std::decay_t<decltype(get(cmds[0]))>> {
  auto first = get(cmds[0]);
  for (const auto& c : cmds)
    if (!(get(c) == first)) return std::nullopt;
  return first;
}

}  // namespace

namespace {

Result<void> check_settings(const Options& options) {
  for (const auto& setting : options.settings) {
    if (setting.key != k_settable_keys)
      return fail(Category::invalid_argument,
                  "--set {}: from-commands sets only {} (the commands give every other key)",
                  util::shown_untrusted(setting.key), k_settable_keys);
    if (!definition::parse_validate_policy(setting.value))
      return fail(Category::invalid_argument, "--set validate={}: validate is strict, known or off",
                  util::shown_untrusted(setting.value));
  }
  return {};
}

Result<Migration> write_manifest(Migration out, const std::string& display_name, const Options& options);

}  // namespace

Result<Migration> from_commands(std::string_view text, const std::string& display_name, const Options& options) {
  KCACHE_CHECK(check_settings(options));
  Migration out;
  out.commands = KCACHE_TRY(parse_commands_with_notes(text, display_name, options, out.notes));
  return write_manifest(std::move(out), display_name, options);
}

Result<Migration> from_command_lines(const std::vector<CommandLine>& lines, const std::string& display_name,
                                     const Options& options) {
  KCACHE_CHECK(check_settings(options));
  Migration out;
  out.commands = KCACHE_TRY(parse_lines_with_notes(lines, display_name, options, out.notes));
  return write_manifest(std::move(out), display_name, options);
}

namespace {

/// What every command shares: the manifest's [defaults] (nullopt: they differ).
struct Defaults {
  std::optional<std::string> target;
  std::optional<definition::Optimize> optimize;
  std::optional<definition::Stage> stage;
  std::optional<Language> language;
  std::optional<std::string> entry;
  std::optional<std::vector<std::string>> includes;
  std::optional<bool> strip;
  std::vector<Field> defines;  ///< the defines every command has
};

Defaults common_defaults(const std::vector<Command>& cmds) {
  // `strip` is written explicitly although it equals the manifest's default
  // for the optimisation level (glslc: -O strips, -O0 keeps): the manifest
  // then says what the commands did, whatever the default becomes.
  Defaults d;
  d.target = common(cmds, [](const Command& c) { return c.target; });
  d.optimize = common(cmds, [](const Command& c) { return c.optimize; });
  d.stage = common(cmds, [](const Command& c) { return c.stage; });
  d.language = common(cmds, [](const Command& c) { return c.language; });
  d.entry = common(cmds, [](const Command& c) { return c.entry; });
  d.includes = common(cmds, [](const Command& c) { return c.include_dirs; });
  d.strip = common(cmds, [](const Command& c) { return c.strip; });
  for (const auto& def : cmds[0].defines)
    if (std::all_of(cmds.begin(), cmds.end(), [&](const Command& c) {
          return std::find(c.defines.begin(), c.defines.end(), def) != c.defines.end();
        }))
      d.defines.push_back(def);
  return d;
}

/// The kernel tables: per shape (first-seen order), split into products
/// when `variants`.
std::vector<Table> group_tables(const std::vector<Command>& cmds, bool variants) {
  std::vector<Table> tables;
  std::map<Shape, std::vector<std::size_t>> shapes;
  std::vector<const Shape*> order;
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    auto [it, inserted] = shapes.try_emplace(shape_of(cmds[i]));
    if (inserted) order.push_back(&it->first);
    it->second.push_back(i);
  }
  Grouper grouper(cmds, tables);
  for (const Shape* s : order) {
    const auto& members = shapes[*s];
    if (variants) grouper.split(members);
    else
      for (std::size_t m : members) grouper.single(m);
  }
  return tables;
}

/// Names: a variant table whose expanded names would be too long is split
/// into single kernels; singles are named after their outputs. In command
/// order.
std::vector<Table> name_tables(const std::vector<Command>& cmds, std::vector<Table> tables) {
  std::vector<Table> fitted;
  for (auto& t : tables) {
    bool fits = true;
    if (!t.variants.empty()) {
      t.name = group_name(cmds, t);
      for (std::size_t m : t.members)
        fits = fits && expanded_name(cmds, t, m).size() + 8 <= manifest::k_max_kernel_name;
    }
    if (fits) fitted.push_back(std::move(t));
    else
      for (std::size_t m : t.members) fitted.push_back({{m}, {}, {}});
  }
  std::sort(fitted.begin(), fitted.end(), [](const Table& a, const Table& b) { return a.members[0] < b.members[0]; });
  std::set<std::string> used;
  std::map<std::string, std::size_t> stems;  // singles whose stems collide get their output path
  for (const auto& t : fitted)
    if (t.variants.empty()) ++stems[output_stem(cmds[t.members[0]].output)];
  for (auto& t : fitted) {
    if (!t.variants.empty()) continue;
    const std::string& output = cmds[t.members[0]].output;
    std::string stem = output_stem(output);
    if (stems[stem] > 1) {
      auto p = std::filesystem::path(output);
      stem = sanitize_name((p.parent_path() / p.stem()).generic_string());
    }
    t.name = unique_name(stem, used);
  }
  for (auto& t : fitted)
    if (!t.variants.empty()) t.name = unique_name(t.name, used);
  return fitted;
}

/// The manifest's text: the header and [defaults].
std::string defaults_text(const Defaults& d, const std::string& display_name, std::size_t commands) {
  std::string m = fmt::format(
      "# Generated by `kcache manifest from-commands` from {} ({} command{}).\n"
      "# Kernels are named after their outputs; commands that differ only in the values of the same defines\n"
      "# are [kernel.variants] (kernel names base[KEY=value,...]).\n\n[defaults]\n",
      util::printable_text(display_name), commands, commands == 1 ? "" : "s");
  if (d.target) m += fmt::format("target = {}\n", toml_string(*d.target));
  if (d.optimize) m += fmt::format("optimize = {}\n", toml_string(definition::optimize_name(*d.optimize)));
  if (d.strip) m += fmt::format("strip = {}\n", *d.strip ? "true" : "false");
  if (d.stage) m += fmt::format("stage = {}\n", toml_string(definition::stage_name(*d.stage)));
  if (d.language && *d.language != Language::glsl)
    m += fmt::format("language = {}\n", toml_string(definition::language_name(*d.language)));
  if (d.entry && *d.entry != "main") m += fmt::format("entry = {}\n", toml_string(*d.entry));
  if (d.includes && !d.includes->empty()) m += fmt::format("include_dirs = {}\n", toml_list(*d.includes, false));
  if (!d.defines.empty()) m += fmt::format("defines = {}\n", toml_defines(d.defines));
  return m;
}

/// One [[kernel]] table's text: what its commands do beyond the defaults,
/// the --set that applies to it, its variants.
std::string kernel_text(const std::vector<Command>& cmds, const Table& t, const Defaults& d, const Options& options) {
  const Command& c = cmds[t.members[0]];
  std::string m = fmt::format("\n[[kernel]]\nname = {}\nsource = {}\n", toml_string(t.name), toml_string(c.source));
  if (!d.target) m += fmt::format("target = {}\n", toml_string(c.target));
  if (!d.optimize) m += fmt::format("optimize = {}\n", toml_string(definition::optimize_name(c.optimize)));
  if (!d.strip) m += fmt::format("strip = {}\n", c.strip ? "true" : "false");
  if (!d.stage) m += fmt::format("stage = {}\n", toml_string(definition::stage_name(c.stage)));
  if (!d.language) m += fmt::format("language = {}\n", toml_string(definition::language_name(c.language)));
  if (!d.entry) m += fmt::format("entry = {}\n", toml_string(c.entry));
  if (!d.includes && !c.include_dirs.empty()) m += fmt::format("include_dirs = {}\n", toml_list(c.include_dirs, false));
  std::vector<Field> own;
  for (const auto& def : c.defines) {
    const bool varies =
        std::any_of(t.variants.begin(), t.variants.end(), [&](const auto& v) { return v.first == def.first; });
    if (!varies && std::find(d.defines.begin(), d.defines.end(), def) == d.defines.end()) own.push_back(def);
  }
  if (!own.empty()) m += fmt::format("defines = {}\n", toml_defines(own));
  // --set KEY=VALUE --for GLOB: the last setting whose glob matches wins.
  const KeySetting* chosen = nullptr;
  for (const auto& setting : options.settings)
    if (util::match_glob(setting.glob, t.name)) chosen = &setting;
  if (chosen) m += fmt::format("{} = {}\n", chosen->key, toml_string(chosen->value));
  if (!t.variants.empty()) {
    m += "[kernel.variants]\n";
    for (const auto& [k, values] : t.variants) m += fmt::format("{} = {}\n", k, toml_list(values, true));
  }
  return m;
}

/// The check: the manifest module expands `out.manifest` to exactly the
/// commands, each as the kernel `out.outputs` names for it.
Result<void> check_reads_back(const Migration& out, const std::string& display_name, const Options& options) {
  const auto& cmds = out.commands;
  auto parsed = manifest::parse_manifest(out.manifest, "generated manifest", options.root, false);
  if (!parsed)
    return fail(Category::invalid_argument,
                "{}: the manifest written for these commands does not read back (a kcache "
                "bug; please report it with the input): {}",
                display_name, parsed.error().message);
  std::map<std::string, const definition::KernelSpec*> expanded;
  for (const auto& k : parsed->kernels) expanded[k.name] = &k;
  if (expanded.size() != cmds.size())
    return fail(Category::invalid_argument,
                "{}: the manifest written expands to {} kernels for {} commands (a kcache "
                "bug; please report it with the input)",
                display_name, expanded.size(), cmds.size());
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    const Command& c = cmds[i];
    auto it = expanded.find(out.outputs[i].first);
    const bool same = it != expanded.end() && it->second->source == c.source && it->second->stage == c.stage &&
                      it->second->language == c.language && it->second->entry == c.entry &&
                      it->second->target == c.target && it->second->optimize == c.optimize &&
                      it->second->include_dirs == c.include_dirs && it->second->defines == c.defines &&
                      it->second->strip == c.strip;
    if (!same)
      return fail(Category::invalid_argument,
                  "{}:{}: the manifest written does not reproduce this command as "
                  "kernel '{}' (a kcache bug; please report it with the input)",
                  display_name, c.line, out.outputs[i].first);
  }
  return {};
}

Result<Migration> write_manifest(Migration out, const std::string& display_name, const Options& options) {
  const auto& cmds = out.commands;
  const Defaults defaults = common_defaults(cmds);
  const std::vector<Table> tables = name_tables(cmds, group_tables(cmds, options.variants));
  out.manifest = defaults_text(defaults, display_name, cmds.size());
  for (const auto& t : tables) {
    out.manifest += kernel_text(cmds, t, defaults, options);
    if (!t.variants.empty()) ++out.variant_tables;
    ++out.kernel_tables;
    for (std::size_t i : t.members) out.outputs.emplace_back(expanded_name(cmds, t, i), cmds[i].output);
  }
  for (const auto& setting : options.settings)
    if (std::none_of(tables.begin(), tables.end(),
                     [&](const Table& t) { return util::match_glob(setting.glob, t.name); }))
      return fail(Category::invalid_argument, "--for '{}' matches no kernel (kernels are named after their outputs)",
                  util::shown_untrusted(setting.glob));
  // Outputs in input order.
  std::map<std::string, std::string> by_output;
  for (auto& [name, output] : out.outputs) by_output[output] = name;
  out.outputs.clear();
  for (const auto& c : cmds) out.outputs.emplace_back(by_output[c.output], c.output);
  KCACHE_CHECK(check_reads_back(out, display_name, options));
  return out;
}

}  // namespace

}  // namespace kcache::migrate
