#include "kcache/compile/compiler.hpp"

#include "kcache/compile/validate_internal.hpp"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <glslang/build_info.h>
#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <utility>

namespace kcache::compile {
namespace detail {
/// Defined beside the zero-filling operator new (defined_heap.cpp).
extern const bool k_defined_heap;
}  // namespace detail

namespace {

/// A reference the linker must resolve: every program that links this file
/// (every program that compiles) links defined_heap.cpp's allocator too.
[[gnu::used]] const bool* const k_defined_heap_anchor = &detail::k_defined_heap;

using definition::Definition;
using definition::FileCache;
using definition::KernelSpec;
using definition::Language;
using definition::Optimize;
using definition::SourceFile;
using definition::Stage;

void init_glslang() {
  static std::once_flag once;
  std::call_once(once, [] { glslang::InitializeProcess(); });
}

EShLanguage to_glslang(Stage s) {
  switch (s) {
    case Stage::compute: return EShLangCompute;
    case Stage::vertex: return EShLangVertex;
    case Stage::fragment: return EShLangFragment;
    case Stage::geometry: return EShLangGeometry;
    case Stage::tess_control: return EShLangTessControl;
    case Stage::tess_evaluation: return EShLangTessEvaluation;
    case Stage::task: return EShLangTask;
    case Stage::mesh: return EShLangMesh;
  }
  return EShLangCompute;
}

struct TargetEnv {
  glslang::EShTargetClientVersion client;
  glslang::EShTargetLanguageVersion spirv;
  spv_target_env tools;
};

// glslang numbers its versions: Vulkan 1.x is (1 << 22) | (x << 12), SPIR-V
// 1.y is (1 << 16) | (y << 8); so core's target table needs no copy here.
constexpr int glslang_vulkan(int minor) { return (1 << 22) | (minor << 12); }
constexpr int glslang_spirv(int minor) { return (1 << 16) | (minor << 8); }
static_assert(glslang_vulkan(0) == glslang::EShTargetVulkan_1_0 && glslang_vulkan(3) == glslang::EShTargetVulkan_1_3);
static_assert(glslang_spirv(0) == glslang::EShTargetSpv_1_0 && glslang_spirv(6) == glslang::EShTargetSpv_1_6);

TargetEnv target_env(std::string_view target) {
  const SpirvTarget& t = target_row(target);
  return {static_cast<glslang::EShTargetClientVersion>(glslang_vulkan(t.vulkan_minor)),
          static_cast<glslang::EShTargetLanguageVersion>(glslang_spirv(t.spirv_minor)), tools_env(t.name)};
}

/// Resolves includes the way the C preprocessor does: `"x"` relative to the including
/// file, then the include dirs (glslang calls includeSystem after a failed
/// includeLocal); `<x>` from the include dirs only. `open` maps a
/// project-relative path to its bytes; the resolved name handed back to
/// glslang is that relative path, so messages and #line markers never carry
/// an absolute path.
///
/// Every candidate path that held nothing is reported to `missed`, in search
/// order: a header created there later would be found first, so the caller
/// records it as an absent input (core::k_absent_input).
///
/// An include that is refused (absolute, leaving the project, a special or
/// oversized file, nested deeper than definition::k_max_include_depth) is
/// handed back as glslang's failed-include result carrying the reason, so
/// that the error names the including file and line.
class ProjectIncluder : public glslang::TShader::Includer {
 public:
  using Open = std::function<Result<std::shared_ptr<const SourceFile>>(const std::string&)>;
  using Missed = std::function<void(const std::string&)>;
  ProjectIncluder(const std::vector<std::string>& include_dirs, Open open, Missed missed)
      : m_include_dirs(include_dirs), m_open(std::move(open)), m_missed(std::move(missed)) {}

  IncludeResult* includeLocal(const char* header, const char* includer, size_t depth) override {
    m_refusal.clear();
    if (depth > definition::k_max_include_depth) return refuse(too_deep());
    auto dir = std::filesystem::path(includer).parent_path().generic_string();
    IncludeResult* found = try_open(definition::include_path(dir, header));
    // glslang asks includeSystem next: it names this folder too when nothing is found.
    m_local_dir = found ? std::nullopt : std::optional(dir.empty() ? std::string(".") : dir);
    return found;
  }
  IncludeResult* includeSystem(const char* header, const char*, size_t depth) override {
    if (depth > definition::k_max_include_depth) return refuse(too_deep());
    IncludeResult* found = nullptr;
    for (const auto& dir : m_include_dirs)
      if ((found = try_open(definition::include_path(dir, header)))) break;
    // Nothing found: a refusal seen on the way (here or in includeLocal) is
    // the better message than "not found".
    std::string refusal = std::exchange(m_refusal, {});
    auto local = std::exchange(m_local_dir, std::nullopt);
    if (!found && !refusal.empty()) return refuse(std::move(refusal));
    if (!found) {
      // Every folder searched, in order, so that a missing include_dirs
      // entry is plain to see (glslang appends " for header name: X").
      std::string searched = local ? fmt::format("'{}' (the including file's folder)", *local) : "";
      std::string dirs;
      for (const auto& d : m_include_dirs) dirs += fmt::format("{}'{}'", dirs.empty() ? "" : ", ", d);
      if (!dirs.empty()) searched += fmt::format("{}include_dirs {}", searched.empty() ? "" : ", then ", dirs);
      return refuse(fmt::format("not found; searched {}", searched.empty() ? "no folder (no include_dirs)" : searched),
                    "");
    }
    return found;
  }
  void releaseInclude(IncludeResult* r) override {
    if (r) delete static_cast<std::string*>(r->userData);
    delete r;
  }

 private:
  /// A found file, or nullptr (remembering why when it was refused rather than missing).
  IncludeResult* try_open(const Result<std::string>& rel) {
    if (!rel) {
      if (m_refusal.empty()) m_refusal = rel.error().message;
      return nullptr;
    }
    auto file = m_open(*rel);
    if (!file) {
      if (file.error().category == Category::not_found) m_missed(*rel);
      else if (m_refusal.empty()) m_refusal = file.error().message;
      return nullptr;
    }
    return new IncludeResult((*file)->path, (*file)->content.data(), (*file)->content.size(), nullptr);
  }
  /// glslang's failed include: empty name, the message as data; it reports
  /// "FILE:LINE: '#include' : MESSAGE for header name: HEADER".
  static IncludeResult* refuse(std::string message, std::string_view suffix = "; refused") {
    auto* text = new std::string(std::move(message) + std::string(suffix));  // glslang appends " for header name: X"
    return new IncludeResult("", text->data(), text->size(), text);
  }
  static std::string too_deep() {
    return fmt::format(
        "#include nested deeper than {} files (an include cycle without include guards?): give "
        "the headers an #ifndef guard or #pragma once",
        definition::k_max_include_depth);
  }
  const std::vector<std::string>& m_include_dirs;
  Open m_open;
  Missed m_missed;
  std::string m_refusal;                   ///< why a candidate of the current #include was refused
  std::optional<std::string> m_local_dir;  ///< the folder includeLocal searched in vain, for includeSystem
};

/// What a TShader borrows (glslang keeps the pointers, not copies): must
/// outlive the shader.
struct ShaderInput {
  const char* text;
  int length;
  const char* name;
  std::string preamble;
};

/// The text glslang reads before the source, as glslc (shaderc) builds it:
/// the defines, then `#extension GL_GOOGLE_include_directive : enable` for
/// GLSL (glslc enables #include implicitly; sources written for it never
/// say so), then the kernel's extensions, its preamble and its
/// preamble_file's content. The manifest refuses control characters in
/// defines and extensions, so each is exactly one line here.
std::string make_preamble(const KernelSpec& spec, std::string_view preamble_file) {
  std::string out;
  for (const auto& [k, v] : spec.defines) out += fmt::format("#define {} {}\n", k, v);
  if (spec.language == Language::glsl) out += "#extension GL_GOOGLE_include_directive : enable\n";
  for (const auto& e : spec.extensions) out += fmt::format("#extension {} : enable\n", e);
  for (std::string_view text : {std::string_view(spec.preamble), preamble_file}) {
    out += text;
    if (!text.empty() && text.back() != '\n') out += '\n';
  }
  return out;
}

/// Sets up a TShader as `glslc --target-env T -D... -fentry-point=E` does
/// (glslangValidator -V plus glslc's preamble), so that unoptimised output
/// is byte-identical to glslc's apart from the generator word.
void configure(glslang::TShader& shader, const KernelSpec& spec, const SourceFile& main, const std::string& preamble,
               ShaderInput& in) {
  in.text = main.content.c_str();
  in.length = static_cast<int>(main.content.size());
  in.name = main.path.c_str();
  shader.setStringsWithLengthsAndNames(&in.text, &in.length, &in.name, 1);
  in.preamble = preamble;
  shader.setPreamble(in.preamble.c_str());
  shader.setEntryPoint(spec.entry.c_str());
  if (spec.language == Language::glsl && spec.entry != "main") shader.setSourceEntryPoint(spec.entry.c_str());
  auto env = target_env(spec.target);
  auto source = spec.language == Language::hlsl ? glslang::EShSourceHlsl : glslang::EShSourceGlsl;
  shader.setEnvInput(source, to_glslang(spec.stage), glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, env.client);
  shader.setEnvTarget(glslang::EShTargetSpv, env.spirv);
}

EShMessages messages_for(const KernelSpec& spec) {
  int m = EShMsgSpvRules | EShMsgVulkanRules;
  if (spec.language == Language::hlsl) m |= EShMsgReadHlsl;
  return static_cast<EShMessages>(m);
}

/// glslang's info log in the form editors and CI problem matchers read, as
/// glslc and GCC write it: "ERROR: FILE:LINE: TEXT" becomes "FILE:LINE:
/// error: TEXT" ("warning:" likewise; glslang 12 reports no column); a line
/// without a place keeps "error: TEXT". Its summary lines ("N compilation
/// errors", "No code generated") and the cascade line "'' : compilation
/// terminated" are dropped, trailing spaces trimmed.
std::string clean_log(std::string_view log) {
  static const std::regex placed(R"(^(.*?:[0-9]+): (.*)$)");
  std::string out;
  std::istringstream in{std::string(log)};
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (line.empty() || line.find("compilation errors.") != std::string::npos ||
        line.find("No code generated") != std::string::npos || line.ends_with("'' : compilation terminated"))
      continue;
    std::string_view severity;
    for (auto [prefix, name] : {std::pair{"ERROR: ", "error"}, std::pair{"WARNING: ", "warning"}})
      if (line.starts_with(prefix)) severity = name, line.erase(0, std::string_view(prefix).size());
    if (!severity.empty()) {
      std::smatch m;
      line = std::regex_match(line, m, placed) ? fmt::format("{}: {}: {}", m[1].str(), severity, m[2].str())
                                               : fmt::format("{}: {}", severity, line);
    }
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

std::string recipe_for(Optimize level) {
  if (level == Optimize::none) return "none";
  spvtools::Optimizer opt(SPV_ENV_VULKAN_1_2);
  if (level == Optimize::size) opt.RegisterSizePasses();
  else opt.RegisterPerformancePasses();
  std::string recipe = level == Optimize::size ? "size:" : "performance:";
  for (const char* pass : opt.GetPassNames()) recipe.append(pass).append(",");
  return recipe;
}

}  // namespace

ToolchainVersions linked_versions() {
  return {fmt::format("{}.{}.{}{}", GLSLANG_VERSION_MAJOR, GLSLANG_VERSION_MINOR, GLSLANG_VERSION_PATCH,
                      GLSLANG_VERSION_FLAVOR),
          spvSoftwareVersionString()};
}

Toolchain::Toolchain(ToolchainVersions versions) : m_versions(std::move(versions)) {
  for (Optimize o : {Optimize::none, Optimize::size, Optimize::performance}) {
    auto& f = m_fields.emplace_back();
    f.emplace_back("glslang", m_versions.glslang);
    f.emplace_back("spirv-tools", m_versions.spirv_tools);
    f.emplace_back("optimizer", util::hash_string(recipe_for(o)).hex().substr(0, 16) + " (" +
                                    std::string(definition::optimize_name(o)) + ")");
  }
}

const Toolchain& Toolchain::installed() {
  static const Toolchain toolchain(linked_versions());
  return toolchain;
}

const std::vector<Field>& Toolchain::fields(Optimize level) const { return m_fields[static_cast<std::size_t>(level)]; }

Result<Definition> expand(const KernelSpec& spec, FileCache& files, PhaseTimes& times) {
  init_glslang();
  Stopwatch watch;
  Definition def;
  auto open = [&](const std::string& rel) -> Result<std::shared_ptr<const SourceFile>> {
    auto file = KCACHE_TRY(files.get(rel));
    // Record each input once, in first-read order.
    for (const auto& seen : def.files)
      if (seen->path == file->path) return file;
    def.files.push_back(file);
    def.inputs.push_back({file->path, file->hash});
    return file;
  };
  auto main = open(spec.source);
  if (!main) {
    if (main.error().category != Category::not_found) return tl::unexpected(main.error());
    return fail(Category::not_found, "{}: source file not found", spec.source);
  }
  std::string_view preamble_file;
  if (!spec.preamble_file.empty()) {
    // Read through the cache after the source (inputs stay "main source
    // first"): hashed and recorded like an include, so editing it is seen.
    auto file = open(spec.preamble_file);
    if (!file) {
      if (file.error().category != Category::not_found) return tl::unexpected(file.error());
      return fail(Category::not_found, "{}: preamble_file not found", spec.preamble_file);
    }
    preamble_file = (*file)->content;
  }
  def.preamble = make_preamble(spec, preamble_file);
  ShaderInput input;
  glslang::TShader shader(to_glslang(spec.stage));
  configure(shader, spec, **main, def.preamble, input);
  auto missed = [&](const std::string& rel) {
    for (const auto& seen : def.inputs)
      if (seen.path == rel) return;
    def.inputs.push_back({rel, k_absent_input});
  };
  ProjectIncluder includer(spec.include_dirs, open, missed);
  bool ok = shader.preprocess(GetDefaultResources(), 100, ENoProfile, false, false, messages_for(spec), &def.expanded,
                              includer);
  watch.lap(times[Phase::expand]);
  if (!ok) return fail(Category::compile_failed, "{}", clean_log(shader.getInfoLog()));
  return def;
}

Result<Compiled> compile(const KernelSpec& spec, const Definition& def, PhaseTimes& times) {
  init_glslang();
  Stopwatch watch;
  if (def.files.empty()) return fail(Category::invalid_argument, "{}: definition has no source", spec.name);
  auto open = [&](const std::string& rel) -> Result<std::shared_ptr<const SourceFile>> {
    for (const auto& f : def.files)
      if (f->path == rel) return f;
    return fail(Category::not_found, "{}: not read during expansion", rel);
  };
  auto stage = to_glslang(spec.stage);
  ShaderInput input;
  glslang::TShader shader(stage);
  configure(shader, spec, *def.files.front(), def.preamble, input);
  ProjectIncluder includer(spec.include_dirs, open, [](const std::string&) {});
  auto messages = messages_for(spec);
  Compiled out;
  if (!shader.parse(GetDefaultResources(), 100, false, messages, includer))
    return fail(Category::compile_failed, "{}", clean_log(shader.getInfoLog()));
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages)) return fail(Category::compile_failed, "{}", clean_log(program.getInfoLog()));
  out.warnings = clean_log(shader.getInfoLog());
  if (spec.warnings_as_errors && !out.warnings.empty())
    return fail(Category::compile_failed, "{}\nwarnings are errors (-Werror)", out.warnings);
  glslang::SpvOptions spv_options;
  spv_options.generateDebugInfo = false;
  spv_options.disableOptimizer = false;  // as glslangValidator: only HLSL legalisation runs here
  spv_options.validate = false;
  spv::SpvBuildLogger logger;
  glslang::GlslangToSpv(*program.getIntermediate(stage), out.spirv, &logger, &spv_options);
  if (auto log = logger.getAllMessages(); log.find("error") != std::string::npos)
    return fail(Category::compile_failed, "{}: SPIR-V generation: {}", spec.source, log);
  watch.lap(times[Phase::glslang]);

  auto env = target_env(spec.target).tools;
  if (spec.optimize != Optimize::none || spec.strip) {
    spvtools::Optimizer opt(env);
    std::string opt_messages;
    opt.SetMessageConsumer([&](spv_message_level_t level, const char*, const spv_position_t&, const char* m) {
      if (level <= SPV_MSG_ERROR) opt_messages.append(m).append("\n");
    });
    // glslc -O's order (shaderc Compiler::SetOptimizationLevel): strip
    // first, then the level's passes; ids then come out as glslc's.
    if (spec.strip) opt.RegisterPass(spvtools::CreateStripDebugInfoPass());
    if (spec.optimize == Optimize::size) opt.RegisterSizePasses();
    else if (spec.optimize == Optimize::performance) opt.RegisterPerformancePasses();
    spvtools::OptimizerOptions options;
    options.set_run_validator(false);  // validated once, after optimising
    std::vector<std::uint32_t> optimised;
    if (!opt.Run(out.spirv.data(), out.spirv.size(), &optimised, options)) {
      while (!opt_messages.empty() && opt_messages.back() == '\n') opt_messages.pop_back();
      // The optimiser parses with the same tables as the validator: a module
      // it cannot read because it does not know something is no bug of the source.
      const char* hint = is_unsupported_by_validator(opt_messages)
                             ? " (SPIRV-Tools does not know something the module uses: build this kernel with "
                               "optimize = \"none\" and strip = false, and validate = \"known\")"
                             : "";
      return fail(Category::compile_failed, "{}: spirv-opt failed: {}{}", spec.source, opt_messages, hint);
    }
    out.spirv = std::move(optimised);
  }
  watch.lap(times[Phase::spirv_opt]);
  if (spec.validate == definition::ValidatePolicy::off) {
    out.validation = Validation::not_validated;
    return out;
  }
  auto valid = validate(out.spirv, spec.target);
  watch.lap(times[Phase::spirv_val]);
  if (!valid) {
    if (valid.error().category == Category::validator_unsupported &&
        spec.validate == definition::ValidatePolicy::known) {
      out.validation = Validation::validator_unsupported;
      out.validation_note = validation_note(valid.error().message);
      return out;
    }
    auto e = std::move(valid).error();
    if (e.category == Category::validator_unsupported)
      e.message += "; to store it anyway, flagged, set validate = \"known\" for this kernel";
    return tl::unexpected(std::move(e).context(spec.source));
  }
  return out;
}

}  // namespace kcache::compile
