// The glslc / glslangValidator option grammar: one command's words into a
// Command (migrate.hpp parse_command), or why kcache cannot express it.
#include "kcache/migrate/commands_internal.hpp"
#include "kcache/migrate/migrate.hpp"

#include "kcache/core/namespace.hpp"
#include "kcache/manifest/manifest.hpp"

#include "kcache/util/path.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>

namespace kcache::migrate::internal {
namespace {

using definition::Language;
using definition::Optimize;
using definition::Stage;

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

}  // namespace

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

namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// The SPIR-V version a kcache target produces, as glslc's --target-spv
/// names it ("spv1.5"); targets are checked before this is asked.
std::string spirv_of_target(std::string_view target) {
  const SpirvTarget* t = find_spirv_target(target);
  return fmt::format("spv1.{}", t ? t->spirv_minor : -1);
}

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
                    fmt::format("kcache builds for {}", spirv_target_names()));
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
      } else if (!KCACHE_TRY(glslc_compile_option(i, a)) && !KCACHE_TRY(glslc_output_option(i, a))) {
        return unknown(a);
      }
    }
    return {};
  }

  /// A glslc option that changes what is compiled (defines, includes,
  /// optimisation, stage, entry, target, language); false: not one.
  Result<bool> glslc_compile_option(std::size_t& i, const std::string& a) {
    if (a == "-D") KCACHE_CHECK(set_define(KCACHE_TRY(value_of(i, a))));
    else if (a.starts_with("-D")) KCACHE_CHECK(set_define(std::string_view(a).substr(2)));
    else if (a == "-I") m_includes.push_back(KCACHE_TRY(value_of(i, a)));
    else if (a.starts_with("-I")) m_includes.push_back(a.substr(2));
    else if (a == "-O") m_cmd.optimize = Optimize::performance;
    else if (a == "-Os") m_cmd.optimize = Optimize::size;
    else if (a == "-O0") m_cmd.optimize = Optimize::none;
    else if (a == "-g")
      return cannot(a, "kcache does not put debug information (OpLine, source text) into modules; drop -g");
    else if (a.starts_with("-fshader-stage=")) {
      auto s = stage_from_name(std::string_view(a).substr(15));
      if (!s)
        return cannot(a,
                      "kcache's stages are vertex, fragment, geometry, tesscontrol, tesseval, compute, "
                      "task and mesh");
      m_stage = *s;
    } else if (a.starts_with("-fentry-point=")) m_entry = a.substr(14);
    else if (a.starts_with("--target-env=")) KCACHE_CHECK(set_target(std::string_view(a).substr(13)));
    else if (a.starts_with("--target-spv=")) m_spv = a.substr(13);
    else if (a == "-x") KCACHE_CHECK(set_language(KCACHE_TRY(value_of(i, a))));
    else if (a.starts_with("-x")) KCACHE_CHECK(set_language(a.substr(2)));
    else if (a == "-fauto-map-locations") m_auto_map_locations = true;
    else if (a.starts_with("-fauto-") || a.starts_with("-fresource-set-binding") || a.starts_with("-fhlsl") ||
             a.starts_with("-fcbuffer") || a.starts_with("-fimage") || a.starts_with("-fsampler") ||
             a.starts_with("-fssbo") || a.starts_with("-ftexture") || a.starts_with("-fubo") ||
             a.starts_with("-fuav") || a == "-fpreserve-bindings")
      return cannot(a,
                    "kcache compiles with the bindings the shader declares; write them in the shader "
                    "(layout(set = S, binding = B))");
    else if (a.starts_with("-std="))
      return cannot(a, "kcache compiles with the #version the shader declares; write it in the shader");
    else return false;
    return true;
  }

  /// A glslc option about what is written (the output, its format, the
  /// depfile) or said (warnings); false: not one.
  Result<bool> glslc_output_option(std::size_t& i, const std::string& a) {
    if (a == "-o") m_output = KCACHE_TRY(value_of(i, a));
    else if (a.starts_with("-o")) m_output = a.substr(2);
    else if (a == "-c") m_cmd.compile_only = true;
    else if (a == "-w") {
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
    } else if (a == "-mfmt=bin") m_cmd.format = OutputFormat::bin;
    else if (a == "-mfmt=c") m_cmd.format = OutputFormat::c;
    else if (a == "-mfmt=num") m_cmd.format = OutputFormat::num;
    else if (a == "-S" || a == "-E" || a == "-M" || a == "-MM" || a.starts_with("-mfmt="))
      return cannot(a,
                    "it writes something other than a SPIR-V binary (assembly, preprocessed text, "
                    "dependencies or C source)");
    else return false;
    return true;
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
    return check_glslang_entry(source_entry);
  }

  /// glslangValidator's -e and --source-entrypoint as kcache can express
  /// them: one name for the GLSL function and the entry point.
  Result<void> check_glslang_entry(const std::optional<std::string>& source_entry) {
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

}  // namespace

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

}  // namespace kcache::migrate::internal

namespace kcache::migrate {

Result<Command> parse_command(const std::vector<std::string>& words, const std::filesystem::path& directory,
                              const Options& options) {
  if (words.empty()) return fail(Category::invalid_argument, "empty command");
  if (words.size() > options.limits.max_words)
    return fail(Category::invalid_argument, "more than {} words in one command", options.limits.max_words);
  if (!options.root.is_absolute() || !directory.is_absolute())
    return fail(Category::invalid_argument, "root and directory must be absolute paths");
  internal::Notes notes;
  return internal::parse_raw(internal::RawCommand{0, words, directory}, options, notes);
}

}  // namespace kcache::migrate
