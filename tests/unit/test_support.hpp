// Helpers shared by unit tests: a fresh temporary folder per test, kept on
// failure for inspection.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

namespace kcache::test {

/// A new empty folder under the build's test-tmp, named after the test.
/// Kept after the test (under the build folder) so a failure can be
/// inspected; each process uses its own pid-named folders.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    m_path = std::filesystem::path(KCACHE_TEST_TMP) / "unit" /
             (std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(m_path);
    std::filesystem::create_directories(m_path);
  }
  const std::filesystem::path& path() const { return m_path; }
  /// Writes `text` to path()/rel, creating folders.
  std::filesystem::path write(const std::string& rel, const std::string& text) const {
    auto p = m_path / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::filesystem::path m_path;
};

}  // namespace kcache::test
