#include "depfile.hpp"

#include "kcache/core/file.hpp"
#include "kcache/util/bytes.hpp"

#include <set>

namespace kcache::cli {
namespace {

std::string escape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#' || c == '\\') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

}  // namespace

Result<void> write_depfile(const std::filesystem::path& file, std::string target, const manifest::Manifest& manifest,
                           store::Store& store, const pipeline::BuildResult& result) {
  namespace fs = std::filesystem;
  const fs::path root = fs::absolute(manifest.root);
  std::set<std::string> deps{fs::absolute(manifest.path).lexically_normal().string()};
  for (const auto& spec : manifest.kernels) deps.insert((root / spec.source).lexically_normal().string());
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& r : result.receipts) {
      auto entry = reader.get(r.ns, r.kernel);
      if (!entry || !*entry) continue;  // failed kernel: its source is listed above
      for (const auto& input : (*entry)->inputs) deps.insert((root / input.path).lexically_normal().string());
    }
    return {};
  }));
  if (target.empty()) {
    target = file.string();
    if (target.ends_with(".d")) target.resize(target.size() - 2);
  }
  std::string text = escape(target) + ":";
  for (const auto& d : deps) text += " \\\n  " + escape(d);
  text += "\n";
  return write_file_atomic(file, util::as_bytes(text));
}

}  // namespace kcache::cli
