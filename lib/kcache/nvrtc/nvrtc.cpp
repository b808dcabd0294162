#include "kcache/nvrtc/nvrtc.hpp"

#include "kcache/core/cuda.hpp"
#include "kcache/util/hash.hpp"
#include "kcache/util/path.hpp"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <mutex>
#include <optional>

namespace kcache::nvrtc {

// The NVRTC C API as nvrtc.h declares it (CUDA 12 and 13 agree on these).
extern "C" {
using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;
}
namespace {
constexpr nvrtcResult k_success = 0;
constexpr nvrtcResult k_invalid_option = 5;
constexpr nvrtcResult k_compilation = 6;
}  // namespace

struct Library::Api {
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*GetPTX)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*AddNameExpression)(nvrtcProgram, const char*);
  nvrtcResult (*GetLoweredName)(nvrtcProgram, const char*, const char**);
};

namespace {

/// Destroys a program on every path out of compile().
struct ProgramGuard {
  const Library::Api& api;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) api.DestroyProgram(&program);
  }
};

}  // namespace

Result<std::shared_ptr<const Library>> Library::load(const std::optional<std::string>& path) {
  std::vector<std::string> tried;
  std::optional<util::SharedLibrary> loaded;
  auto attempt = [&](const std::string& candidate) {
    // Lifetime::process: NVRTC carries its own C++ runtime, which allocates
    // at load time (an exception pool) and registers exit handlers;
    // unmapping it would leave those pointing into freed code and the pool
    // leaked. It stays mapped for the process's life once loaded.
    auto lib = util::SharedLibrary::open(candidate, util::SharedLibrary::Lifetime::process);
    if (lib) loaded = std::move(*lib);
    else tried.push_back(fmt::format("{} ({})", candidate, lib.error().message));
    return loaded.has_value();
  };
  if (path) {
    attempt(*path);
  } else {
    for (auto name : k_library_names)
      if (attempt("/usr/local/cuda/lib64/" + std::string(name)) || attempt(std::string(name))) break;
  }
  if (!loaded)
    return fail(Category::device_unavailable,
                "cannot load NVRTC, the CUDA runtime compiler (tried {}): install the CUDA toolkit (or Debian's "
                "nvidia-cuda-toolkit), or pass --nvrtc PATH/TO/libnvrtc.so (or set KCACHE_NVRTC)",
                fmt::join(tried, "; "));
  std::shared_ptr<Library> lib(new Library());
  lib->m_api = std::make_unique<Api>();
  Api& a = *lib->m_api;
  std::string missing;
  const util::SharedLibrary& so = *loaded;
  so.resolve("nvrtcGetErrorString", a.GetErrorString, missing);
  so.resolve("nvrtcVersion", a.Version, missing);
  so.resolve("nvrtcCreateProgram", a.CreateProgram, missing);
  so.resolve("nvrtcDestroyProgram", a.DestroyProgram, missing);
  so.resolve("nvrtcCompileProgram", a.CompileProgram, missing);
  so.resolve("nvrtcGetPTXSize", a.GetPTXSize, missing);
  so.resolve("nvrtcGetPTX", a.GetPTX, missing);
  so.resolve("nvrtcGetCUBINSize", a.GetCUBINSize, missing);
  so.resolve("nvrtcGetCUBIN", a.GetCUBIN, missing);
  so.resolve("nvrtcGetProgramLogSize", a.GetProgramLogSize, missing);
  so.resolve("nvrtcGetProgramLog", a.GetProgramLog, missing);
  so.resolve("nvrtcAddNameExpression", a.AddNameExpression, missing);
  so.resolve("nvrtcGetLoweredName", a.GetLoweredName, missing);
  const std::string from = so.name();
  if (!missing.empty())
    return fail(Category::device_unavailable,
                "{} is not a usable NVRTC: it has no {} (NVRTC 11.1 or newer is needed; install the CUDA toolkit or "
                "pass --nvrtc with another libnvrtc.so)",
                from, missing);
  lib->m_loaded_from = from;
  lib->m_library = std::move(*loaded);
  int major = 0, minor = 0;
  if (a.Version(&major, &minor) != k_success || major <= 0 || major > 999 || minor < 0 || minor > 999)
    return fail(Category::device_unavailable, "{}: nvrtcVersion failed; it is not a usable NVRTC", from);
  lib->m_version = fmt::format("{}.{}", major, minor);
  return std::shared_ptr<const Library>(std::move(lib));
}

std::vector<Field> Library::toolchain_fields() const {
  return {{"nvrtc_version", m_version}, {"cuda_version", cuda_version()}};
}

std::string tidy_log(std::string_view log, const std::filesystem::path& root,
                     const std::vector<std::pair<std::string, std::string>>& names) {
  std::string prefix = root.lexically_normal().string();
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  std::string out;
  std::size_t pos = 0;
  while (pos < log.size() && out.size() < k_max_log_bytes) {
    std::size_t end = log.find('\n', pos);
    if (end == std::string_view::npos) end = log.size();
    std::string line(log.substr(pos, end - pos));
    pos = end + 1;
    for (std::size_t at; !prefix.empty() && (at = line.find(prefix)) != std::string::npos;)
      line.erase(at, prefix.size());
    // "name.cuh(12): ..." of an in-memory header → its project path (the
    // longest name that fits, as one may be a suffix of another's folder).
    const std::pair<std::string, std::string>* best = nullptr;
    for (const auto& n : names)
      if (line.size() > n.first.size() && line.starts_with(n.first) && line[n.first.size()] == '(' &&
          (!best || n.first.size() > best->first.size()))
        best = &n;
    if (best) line = best->second + line.substr(best->first.size());
    // "file.cu(12): error: ..." → "file.cu:12: error: ..."
    if (auto open = line.find('('); open != std::string::npos && open > 0) {
      auto close = line.find("): ", open);
      if (close != std::string::npos && close > open + 1 && line.find_first_not_of("0123456789", open + 1) == close &&
          line.find(' ') > open)
        line = line.substr(0, open) + ":" + line.substr(open + 1, close - open - 1) + ":" + line.substr(close + 2);
    }
    out += line;
    out += '\n';
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (out.size() > k_max_log_bytes) out.resize(k_max_log_bytes);
  return out;
}

namespace {

/// `path` relative to `root`, '/'-separated; nullopt when it is not inside.
std::optional<std::string> inside(const std::filesystem::path& root, const std::filesystem::path& path) {
  auto rel = path.lexically_normal().lexically_relative(root.lexically_normal()).generic_string();
  while (rel.size() > 1 && rel.back() == '/') rel.pop_back();  // "inc/" (a folder written with its slash)
  if (rel.empty()) return std::nullopt;
  if (rel == ".") return std::string(".");
  if (!util::is_contained_relative_path(rel)) return std::nullopt;
  return rel;
}

/// What NVRTC gets in memory for `req`: scan_includes over the inputs the
/// caller hashed (else over the project read again).
Result<IncludeScan> in_memory_headers(const Request& req) {
  auto source_rel = inside(req.root, req.source_path);
  if (!source_rel || *source_rel == ".")
    return fail(Category::invalid_argument, "CUDA source {} is not inside the project folder {}",
                req.source_path.string(), req.root.string());
  std::vector<std::string> dirs;
  for (const auto& d : req.include_dirs) {
    auto rel = inside(req.root, d);
    if (!rel)
      return fail(Category::invalid_argument, "include dir {} is not inside the project folder {}", d.string(),
                  req.root.string());
    dirs.push_back(*rel);
  }
  auto main = std::make_shared<definition::SourceFile>();
  main->path = *source_rel;
  main->content = req.source;
  main->hash = util::hash_string(req.source);
  if (!req.inputs.empty()) {
    std::map<std::string, std::shared_ptr<const definition::SourceFile>, std::less<>> by_path;
    for (std::size_t i = 1; i < req.inputs.size(); ++i) by_path.emplace(req.inputs[i]->path, req.inputs[i]);
    return scan_includes(std::move(main), dirs,
                         [&](const std::string& rel) -> Result<std::shared_ptr<const definition::SourceFile>> {
                           if (auto it = by_path.find(rel); it != by_path.end()) return it->second;
                           return fail(Category::not_found, "{} is not among the kernel's inputs", rel);
                         });
  }
  definition::FileCache files(req.root);
  return scan_includes(std::move(main), dirs, [&](const std::string& rel) { return files.get(rel); });
}

}  // namespace

Result<Output> Library::compile(const Request& req) const {
  const Api& a = *m_api;
  auto arch = parse_cuda_arch(req.arch);
  if (!arch) return fail(Category::invalid_argument, "'{}' is not a CUDA architecture", req.arch);
  if (req.source.size() > definition::k_max_source_bytes)
    return fail(Category::invalid_argument, "source is {} bytes; limit {}", req.source.size(),
                definition::k_max_source_bytes);
  auto scan = KCACHE_TRY(in_memory_headers(req));
  // NVRTC takes every text as a C string: a NUL would cut what it compiles
  // short of what was hashed.
  for (const auto& f : scan.inputs)
    if (f->content.find('\0') != std::string::npos)
      return fail(Category::invalid_argument, "{} holds a NUL byte; a CUDA source or header is text", f->path);
  std::vector<std::string> options;
  options.push_back("--gpu-architecture=" + req.arch);
  // No folder to search: every project header is handed over in memory below.
  options.push_back("-no-source-include");
  for (const auto& [name, value] : req.defines) options.push_back("-D" + name + "=" + value);
  options.insert(options.end(), req.options.begin(), req.options.end());
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  std::vector<const char*> header_texts, header_names;
  std::vector<std::pair<std::string, std::string>> log_names;
  for (const auto& h : scan.headers) {
    header_texts.push_back(h.file->content.c_str());
    header_names.push_back(h.include_name.c_str());
    log_names.emplace_back(h.include_name, h.file->path);
  }

  ProgramGuard guard{a};
  // The project-relative name: what NVRTC's log and __FILE__ show, the same
  // wherever the checkout is.
  const std::string& name = scan.inputs.front()->path;
  if (nvrtcResult r = a.CreateProgram(&guard.program, req.source.c_str(), name.c_str(),
                                      static_cast<int>(header_texts.size()), header_texts.data(), header_names.data());
      r != k_success)
    return fail(Category::compile_failed, "nvrtcCreateProgram: {}", a.GetErrorString(r));
  if (nvrtcResult r = a.AddNameExpression(guard.program, req.name_expression.c_str()); r != k_success)
    return fail(Category::compile_failed, "entry '{}': nvrtcAddNameExpression: {}", req.name_expression,
                a.GetErrorString(r));
  nvrtcResult compiled = a.CompileProgram(guard.program, static_cast<int>(argv.size()), argv.data());
  std::string log;
  if (std::size_t size = 0; a.GetProgramLogSize(guard.program, &size) == k_success && size > 1) {
    // The log is NVRTC's own allocation size; kept whole only to tidy it.
    std::string raw(std::min<std::size_t>(size, 16u << 20), '\0');
    if (size <= raw.size() && a.GetProgramLog(guard.program, raw.data()) == k_success) {
      raw.resize(std::strlen(raw.c_str()));
      log = tidy_log(raw, req.root, log_names);
    }
  }
  if (compiled == k_invalid_option)
    return fail(Category::invalid_argument, "NVRTC refused an option: {}", log.empty() ? "(no log)" : log);
  if (compiled != k_success)
    return fail(Category::compile_failed, "{}", log.empty() ? std::string(a.GetErrorString(compiled)) : log);
  (void)k_compilation;

  Output out;
  out.kind = cuda_payload_kind(*arch);
  out.log = log;
  std::size_t size = 0;
  if (out.kind == PayloadKind::cubin) {
    if (nvrtcResult r = a.GetCUBINSize(guard.program, &size); r != k_success || size == 0)
      return fail(Category::compile_failed, "nvrtcGetCUBINSize: {}", r != k_success ? a.GetErrorString(r) : "empty");
  } else if (nvrtcResult r = a.GetPTXSize(guard.program, &size); r != k_success || size == 0) {
    return fail(Category::compile_failed, "nvrtcGetPTXSize: {}", r != k_success ? a.GetErrorString(r) : "empty");
  }
  if (size > k_max_payload_bytes)
    return fail(Category::corruption, "NVRTC's output is {} bytes; limit {}", size, k_max_payload_bytes);
  out.payload.resize(size);
  nvrtcResult got = out.kind == PayloadKind::cubin
                        ? a.GetCUBIN(guard.program, reinterpret_cast<char*>(out.payload.data()))
                        : a.GetPTX(guard.program, reinterpret_cast<char*>(out.payload.data()));
  if (got != k_success) return fail(Category::compile_failed, "reading NVRTC's output: {}", a.GetErrorString(got));
  if (out.kind == PayloadKind::ptx)
    while (!out.payload.empty() && out.payload.back() == 0) out.payload.pop_back();  // the C string's NUL
  const char* lowered = nullptr;
  if (nvrtcResult r = a.GetLoweredName(guard.program, req.name_expression.c_str(), &lowered);
      r != k_success || !lowered)
    return fail(Category::compile_failed, "entry '{}' names no kernel NVRTC compiled ({}): check `entry`",
                req.name_expression, r != k_success ? a.GetErrorString(r) : "no name");
  out.lowered_name = lowered;
  if (out.lowered_name.size() > 4096)
    return fail(Category::compile_failed, "entry '{}' lowers to a name of {} bytes; limit 4096", req.name_expression,
                out.lowered_name.size());
  return out;
}

}  // namespace kcache::nvrtc
