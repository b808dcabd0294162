// Serving a planned command (launcher.hpp): one kernel through the build
// engine, then the files the tool would write.
#include "kcache/launcher/launcher.hpp"

#include "kcache/build/run.hpp"
#include "kcache/core/entry.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/definition/definition.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <regex>
#include <unordered_set>

namespace kcache::launcher {
namespace {

namespace fs = std::filesystem;

definition::KernelSpec spec_of(const Plan& plan, const fs::path& root, std::string name,
                               definition::ValidatePolicy validate) {
  const auto& c = plan.command;
  definition::KernelSpec spec;
  spec.name = name;
  spec.base_name = std::move(name);
  spec.source = plan.source.lexically_relative(root).generic_string();
  spec.entry = c.entry;
  spec.stage = c.stage;
  spec.language = c.language;
  spec.defines = c.defines;
  for (const auto& dir : plan.include_dirs) {
    auto rel = dir.lexically_relative(root).generic_string();
    spec.include_dirs.push_back(rel.empty() ? "." : rel);
  }
  spec.target = c.target;
  spec.optimize = c.optimize;
  spec.strip = c.strip;
  spec.warnings_as_errors = c.warnings_as_errors && !c.suppress_warnings;
  spec.validate = validate;
  return spec;
}

/// The source path relative to the root as a kernel name can hold it: '/'
/// written as '.', other characters a name cannot hold as '_'.
std::string name_of_source(const fs::path& rel) {
  std::string name;
  for (const auto& part : rel) {
    if (!name.empty()) name += '.';
    for (char c : part.string())
      name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  }
  while (name.starts_with('.')) name.erase(0, 1);
  return name.empty() ? std::string("module") : name;
}

/// Why the real program runs for a command kcache could not serve, as
/// `kcache stats` groups it.
std::string fallback_reason(const build::Receipt& receipt) {
  const Category c = receipt.error ? receipt.error->category : Category::compile_failed;
  if (c == Category::validator_unsupported)
    return "spirv-val does not know what the module uses (launcher_validate = known stores it, flagged)";
  if (c == Category::compile_failed) return "the compile failed (the real program reports it)";
  return fmt::format("kcache could not serve it ({})", category_name(c));
}

/// A file the compile read (`rel`, relative to `root`) as the tool names
/// it: the source as given; another file in the style the source was given
/// (relative to the working folder, or absolute). nullopt for the source.
std::optional<std::string> shown_input(const Plan& plan, const fs::path& root, std::string_view rel) {
  const fs::path abs = (root / rel).lexically_normal();
  if (abs == plan.source) return std::nullopt;
  const bool relative = !fs::path(plan.command.source_as_given).is_absolute();
  return relative ? abs.lexically_relative(plan.directory).generic_string() : abs.generic_string();
}

/// The files a depfile lists after the source, as glslc lists them: paths
/// in the style the source was given (shown_input), in the order of an
/// unordered set of the inclusion order — glslc keeps its requested files
/// in one (libstdc++'s, as kcache's), so the same files come out in the
/// same order.
std::vector<std::string> depfile_inputs(const Plan& plan, const fs::path& root, const std::vector<InputFile>& inputs) {
  std::unordered_set<std::string> includes;
  for (const auto& input : inputs)
    if (input.absent()) continue;  // glslc lists files it read, not places it looked
    else if (auto shown = shown_input(plan, root, input.path)) includes.insert(std::move(*shown));
  std::vector<std::string> out{plan.command.source_as_given};
  for (const auto& s : includes) out.push_back(s);
  return out;
}

/// Outputs as the tools write them: replaced atomically, not forced to disk
/// (a build remakes what a power loss costs it).
Result<void> write_text(const fs::path& path, std::string_view text) {
  return util::write_file_atomic(
      path, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()), 0666,
      util::Flush::none);
}

}  // namespace

std::string kernel_name(const Plan& plan, const fs::path& root, definition::ValidatePolicy validate) {
  // The identity hash of the one-kernel spec under a fixed name: every
  // option that changes the module, paths relative to the root.
  const std::string options = definition::compute_id(spec_of(plan, root, "k", validate)).hash.hex().substr(0, 16);
  std::string name = name_of_source(plan.source.lexically_relative(root));
  // Within the store's key limit: a long path keeps its end; the options
  // hash, which covers the whole path, keeps two long paths apart.
  const std::size_t room = k_max_kernel_name - options.size() - 1;
  if (name.size() > room) name = name.substr(name.size() - room);
  return name + "@" + options;
}

definition::ValidatePolicy validate_policy(const Plan& plan, const fs::path& root,
                                           const std::vector<settings::ValidateRule>& rules) {
  if (rules.empty()) return definition::ValidatePolicy::strict;
  const fs::path& file = plan.output ? *plan.output : plan.source;
  return settings::validate_policy_for(rules, file.lexically_relative(root).generic_string());
}

ToolMessages tool_messages(const Plan& plan, const fs::path& root, std::string_view diagnostics) {
  ToolMessages out;
  const bool glslc = plan.command.tool == "glslc";
  if (!glslc) out.out = plan.command.source_as_given + "\n";
  if (plan.command.suppress_warnings || diagnostics.empty()) return out;
  static const std::regex placed(R"(^(.*?):([0-9]+): warning: (.*)$)");
  std::size_t warnings = 0;
  std::string& text = glslc ? out.err : out.out;
  for (std::string_view text_line : util::split_lines(diagnostics)) {
    std::string line(text_line);
    if (!util::is_printable_utf8(line)) line = util::escape_untrusted(line);
    std::smatch m;
    if (std::regex_match(line, m, placed)) {
      ++warnings;
      const std::string file = shown_input(plan, root, m[1].str()).value_or(plan.command.source_as_given);
      line = glslc ? fmt::format("{}:{}: warning: {}", file, m[2].str(), m[3].str())
                   : fmt::format("WARNING: {}:{}: {}", file, m[2].str(), m[3].str());
    } else if (line.starts_with("warning: ")) {
      ++warnings;
      if (!glslc) line = "WARNING: " + line.substr(9);
    }
    text += line + "\n";
  }
  if (glslc && warnings > 0) text += fmt::format("{} warning{} generated.\n", warnings, warnings == 1 ? "" : "s");
  if (!glslc) text += "\n";
  return out;
}

Result<Served> serve(const Plan& plan, store::Store& store, const ServeOptions& options,
                     const store::Invocation& invocation) {
  Served out;
  out.root = keys_root(plan, options.base_dir);
  const auto validate = validate_policy(plan, out.root, options.validate);
  out.kernel = kernel_name(plan, out.root, validate);
  manifest::Manifest& manifest = out.manifest;
  manifest.root = out.root;
  manifest.path = out.root / ("(" + invocation.tool + " command)");
  manifest.kernels.push_back(spec_of(plan, out.root, out.kernel, validate));

  build::RunOptions run;
  run.build = options.build;
  run.build.jobs = 1;
  run.build.on_receipt = nullptr;
  run.record_usage = false;  // below, once it is known whether the real program must run
  auto result = KCACHE_TRY(build::run(manifest, store, run));
  if (result.result.receipts.size() != 1)
    return fail(Category::io_error, "the build of one command returned {} receipts", result.result.receipts.size());
  out.receipt = result.result.receipts.front();
  // The run record, with the command; one the real program must run says
  // why (`kcache stats` counts it among those the real program ran).
  auto record = [&] {
    result.result.receipts.front() = out.receipt;
    store::Invocation recorded = invocation;
    if (out.receipt.outcome == build::Outcome::failed && recorded.not_cacheable.empty())
      recorded.not_cacheable = fallback_reason(out.receipt);
    if (auto written = build::record_run(store, result.result, *options.build.clock, &recorded); !written)
      out.record_warning = std::move(written).error();
  };
  if (out.receipt.outcome == build::Outcome::failed) {
    record();
    return out;
  }

  // The module the build stored or found; the key says it is this one (a
  // concurrent command for the same output may have replaced it since).
  std::optional<Entry> entry;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    entry = KCACHE_TRY(reader.get(out.receipt.ns, out.kernel));
    return {};
  }));
  if (!entry || entry->key != out.receipt.key || entry->payload_kind != PayloadKind::spirv) {
    out.receipt.outcome = build::Outcome::failed;
    out.receipt.error = Error{Category::busy, "the stored module changed while it was being served"};
    record();
    return out;
  }
  out.diagnostics = std::move(entry->diagnostics);
  if (plan.command.warnings_as_errors && !plan.command.suppress_warnings && !out.diagnostics.empty()) {
    // Not reached by an honest store (-Werror is in the key); kept as a
    // second line against an entry filed under that key with warnings.
    out.receipt.outcome = build::Outcome::failed;
    out.receipt.error = Error{Category::compile_failed, "the module has warnings and -Werror makes them errors"};
    record();
    return out;
  }
  record();
  out.module = std::move(entry->payload);

  if (plan.output) {
    if (plan.command.format == migrate::OutputFormat::bin)
      KCACHE_CHECK(util::write_file_atomic(*plan.output, out.module, 0666, util::Flush::none));
    else KCACHE_CHECK(write_text(*plan.output, format_module(out.module, plan.command.format)));
  }
  if (plan.depfile) {
    std::vector<std::string> targets = plan.command.dep_targets;
    if (targets.empty()) targets.push_back(plan.output_as_given);
    KCACHE_CHECK(write_text(*plan.depfile, depfile_text(targets, depfile_inputs(plan, out.root, entry->inputs))));
  }
  return out;
}

}  // namespace kcache::launcher
