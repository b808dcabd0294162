// A throwaway CUDA project for the nvrtc tests: a folder with inc/ and src/,
// files written into it, and a kernel spec of one of its sources.
#pragma once

#include "kcache/definition/kernel_spec.hpp"

#include <filesystem>
#include <fstream>
#include <string>

namespace kcache::test {

/// An empty project folder `group`/`name` under the test temp folder, with
/// inc/ and src/.
inline std::filesystem::path nvrtc_project(const std::string& group, const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(KCACHE_TEST_TMP) / group / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "inc");
  std::filesystem::create_directories(dir / "src");
  return dir;
}

/// Writes `text` to `p`, creating its folder.
inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

/// CUDA kernel "k" of `source` for sm_90, include dir inc/.
inline definition::KernelSpec cuda_spec_for(const std::string& source) {
  definition::KernelSpec s;
  s.name = "k";
  s.source = source;
  s.language = definition::Language::cuda;
  s.include_dirs = {"inc"};
  s.arch = {"sm_90"};
  return s;
}

}  // namespace kcache::test
