#include "kcache/definition/definition.hpp"

#include "kcache/core/key_binding.hpp"

#include "kcache/util/file.hpp"
#include "kcache/util/hash.hpp"
#include "kcache/util/path.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <cctype>

namespace kcache::definition {

FileCache::FileCache(std::filesystem::path root) : m_root(std::move(root)) {
  // Resolved once: the folder itself may be reached through a symlink.
  const std::filesystem::path folder = m_root.empty() ? std::filesystem::path(".") : m_root;
  std::error_code ec;
  m_real_root = std::filesystem::weakly_canonical(folder, ec);
  if (ec) m_real_root = std::filesystem::absolute(folder, ec).lexically_normal();
}

namespace {

/// Whether `path` is `root` or below it, element by element (both canonical).
bool is_under(const std::filesystem::path& path, const std::filesystem::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty() && std::next(r) == root.end()) break;  // a trailing '/' names the folder itself
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

/// Refuses `rel` when its real location (symlinks resolved) is outside
/// `real_root`: the path is inside, but a symlink on it (the file or a
/// folder) leads out, and following it would put any file the user can read
/// into keys, compile errors and reports. Links that stay inside are fine.
Result<void> check_real_location(const std::filesystem::path& root, const std::filesystem::path& real_root,
                                 const std::string& rel) {
  std::error_code ec;
  const auto real = std::filesystem::weakly_canonical(root / rel, ec);
  if (ec)  // a symlink loop, an unreadable folder: nothing safe to read
    return fail(Category::invalid_argument, "refusing to read '{}': cannot resolve where it leads ({})",
                util::escape_untrusted(rel), ec.message());
  if (!is_under(real, real_root))
    return fail(Category::invalid_argument,
                "refusing to read '{}': it is a symbolic link (or lies under one) that leads outside the project "
                "folder {}; a source or include must be a regular file under the manifest's folder: copy the file "
                "into the project or move the manifest up to a folder that holds both",
                util::escape_untrusted(rel), root.string());
  return {};
}

}  // namespace

std::string FileCache::normalise(const std::filesystem::path& rel) { return rel.lexically_normal().generic_string(); }

Result<std::shared_ptr<const SourceFile>> FileCache::get(const std::string& rel) {
  {
    std::lock_guard lock(m_mutex);
    if (auto it = m_files.find(rel); it != m_files.end()) return it->second;
  }
  Result<std::shared_ptr<const SourceFile>> result;
  if (!util::is_contained_relative_path(rel)) {
    // Checked before touching the file system: a recorded "/dev/zero" or
    // "../../etc/shadow" is never opened, whoever wrote the record.
    result = fail(Category::invalid_argument,
                  "refusing to read '{}': not a relative path inside the project folder {} (kcache reads only "
                  "files under the manifest's folder; copy the file into it and name it relative to it)",
                  util::escape_untrusted(rel), m_root.string());
  } else if (auto located = check_real_location(m_root, m_real_root, rel); !located) {
    result = tl::unexpected(std::move(located).error());
  } else {
    // Read outside the lock: two threads may read the same file once each at
    // worst, which is cheaper than serialising all reads.
    result = util::read_file(m_root / rel, util::ReadLimits{k_max_source_bytes, true}).map([&](std::string content) {
      auto file = std::make_shared<SourceFile>();
      file->path = rel;
      file->hash = util::hash_string(content);
      file->content = std::move(content);
      return std::shared_ptr<const SourceFile>(std::move(file));
    });
    if (!result) {
      // read_file names the joined path; the message names the project path once.
      std::string why = result.error().message;
      if (std::string prefix = "cannot read " + (m_root / rel).string() + ": "; why.starts_with(prefix))
        why.erase(0, prefix.size());
      if (result.error().category == Category::invalid_argument)
        why += fmt::format("; a source or include must be a regular file of at most {} MiB", k_max_source_bytes >> 20);
      result = tl::unexpected(Error{result.error().category, fmt::format("cannot read {}: {}", rel, why)});
    }
  }
  std::lock_guard lock(m_mutex);
  return m_files.emplace(rel, std::move(result)).first->second;
}

Result<std::string> include_path(std::string_view dir, std::string_view header) {
  if (header.empty()) return fail(Category::invalid_argument, "#include names an empty path");
  if (header.front() == '/' || header.front() == '~')
    return fail(Category::invalid_argument,
                "#include \"{}\" is an absolute path; kcache reads only files inside the manifest's folder: copy "
                "the file into the project and include it by a relative path or through include_dirs",
                util::escape_untrusted(header));
  std::string rel = FileCache::normalise(std::filesystem::path(dir) / std::filesystem::path(header));
  if (!util::is_contained_relative_path(rel))
    return fail(Category::invalid_argument,
                "#include \"{}\" resolves to '{}', outside the manifest's folder; kcache reads only files inside "
                "it: move the file into the project (or the manifest up to a common folder)",
                util::escape_untrusted(header), util::escape_untrusted(rel));
  return rel;
}

namespace {

/// Records fields, then hashes them by the one rule every record's key
/// follows (core/key_binding.hpp), so a key can be checked against its fields.
struct FieldRecorder {
  std::vector<Field> fields;
  void add(std::string name, std::string value) { fields.emplace_back(std::move(name), std::move(value)); }
  HashedFields finish() {
    Hash128 hash = hash_fields(fields);
    return {hash, std::move(fields)};
  }
};

}  // namespace

HashedFields compute_id(const KernelSpec& spec) {
  FieldRecorder r;
  r.add("name", spec.name);
  for (const auto& [k, v] : spec.variant) r.add("variant:" + k, v);
  r.add("source", spec.source);
  r.add("entry", spec.entry);
  r.add("stage", std::string(stage_name(spec.stage)));
  r.add("language", std::string(language_name(spec.language)));
  for (const auto& [k, v] : spec.defines) r.add("define:" + k, v);
  for (std::size_t i = 0; i < spec.include_dirs.size(); ++i)
    r.add("include_dir:" + std::to_string(i), spec.include_dirs[i]);
  r.add("target", spec.target);
  r.add("optimize", std::string(optimize_name(spec.optimize)));
  for (const auto& sc : spec.spec_constants) r.add("spec_constant:" + std::to_string(sc.id), sc.type + ":" + sc.text);
  for (std::size_t i = 0; i < spec.extensions.size(); ++i) r.add("extension:" + std::to_string(i), spec.extensions[i]);
  // Only when set, so that a kernel without a preamble shows no empty fields.
  if (!spec.preamble.empty()) r.add("preamble", escape_preamble(spec.preamble));
  if (!spec.preamble_file.empty()) r.add("preamble_file", spec.preamble_file);
  r.add("strip", spec.strip ? "true" : "false");
  r.add("validate", std::string(validate_policy_name(spec.validate)));
  // Only when set: every key made before the field existed stays the same.
  if (spec.warnings_as_errors) r.add("warnings_as_errors", "true");
  return r.finish();
}

namespace {

/// The expanded text without what cannot change the module: blank lines,
/// indentation and #line markers. glslang's preprocessor keeps line
/// structure, so without this a comment added on its own line would change
/// every later line number and look like a new definition. Debug info is not
/// generated, so line numbers do not reach the SPIR-V (and __LINE__ is
/// already expanded in the text).
std::string canonical_source(std::string_view expanded) {
  std::string out;
  out.reserve(expanded.size());
  std::size_t pos = 0;
  while (pos < expanded.size()) {
    std::size_t end = expanded.find('\n', pos);
    if (end == std::string_view::npos) end = expanded.size();
    std::string_view line = expanded.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    if (line.empty() || line.starts_with("#line")) continue;
    out.append(line).push_back('\n');
  }
  return out;
}

}  // namespace

HashedFields compute_ir(const Definition& def, const std::vector<Field>& toolchain) {
  FieldRecorder r;
  r.add("key_schema", std::string(k_key_schema));
  for (const auto& [k, v] : toolchain) r.add(k, v);
  r.add("expanded_source", util::hash_string(canonical_source(def.expanded)).hex());
  return r.finish();
}

HashedFields compute_cuda_id(const KernelSpec& spec, std::string_view arch) {
  FieldRecorder r;
  r.add("name", spec.name);
  for (const auto& [k, v] : spec.variant) r.add("variant:" + k, v);
  r.add("source", spec.source);
  r.add("entry", spec.entry);
  r.add("language", std::string(language_name(spec.language)));
  for (const auto& [k, v] : spec.defines) r.add("define:" + k, v);
  for (std::size_t i = 0; i < spec.include_dirs.size(); ++i)
    r.add("include_dir:" + std::to_string(i), spec.include_dirs[i]);
  r.add("arch", std::string(arch));
  for (std::size_t i = 0; i < spec.nvrtc_options.size(); ++i)
    r.add("nvrtc_option:" + std::to_string(i), spec.nvrtc_options[i]);
  return r.finish();
}

HashedFields compute_cuda_ir(const std::vector<InputFile>& inputs, const std::vector<Field>& toolchain) {
  FieldRecorder r;
  r.add("key_schema", std::string(k_key_schema));
  for (const auto& [k, v] : toolchain) r.add(k, v);
  util::Hasher content;
  for (const auto& input : inputs) content.field(input.path, input.hash.hex());
  r.add("inputs", content.finish().hex());
  return r.finish();
}

std::vector<FieldChange> diff_fields(const std::vector<Field>& old_fields, const std::vector<Field>& new_fields) {
  auto find = [](const std::vector<Field>& fields, const std::string& name) -> const std::string* {
    for (const auto& [k, v] : fields)
      if (k == name) return &v;
    return nullptr;
  };
  std::vector<FieldChange> out;
  for (const auto& [k, v] : old_fields) {
    const std::string* now = find(new_fields, k);
    if (!now) out.push_back({k, v, "<absent>"});
    else if (*now != v) out.push_back({k, v, *now});
  }
  for (const auto& [k, v] : new_fields)
    if (!find(old_fields, k)) out.push_back({k, "<absent>", v});
  return out;
}

}  // namespace kcache::definition
