// FileCache is the one gate for project reads (definition.hpp): paths from
// #include lines and from stored records are untrusted, so it reads only
// regular files inside the project, of bounded size, and never hangs.
#include "kcache/definition/definition.hpp"

#include "test_support.hpp"

#include <sys/stat.h>

namespace kcache::definition {

TEST_CASE("a project file is read, hashed and remembered") {
  test::TempDir dir;
  dir.write("inc/a.glsl", "float a;\n");
  FileCache files(dir.path());
  auto f = files.get("inc/a.glsl");
  REQUIRE_MESSAGE(f.has_value(), f.error().message);
  CHECK((*f)->content == "float a;\n");
  CHECK((*f)->path == "inc/a.glsl");
  CHECK(files.get("inc/missing.glsl").error().category == Category::not_found);
}

TEST_CASE("paths that leave the project are refused before anything is opened") {
  test::TempDir dir;
  dir.write("secret", "outside\n");
  dir.write("proj/k.comp", "void main() {}\n");
  FileCache files(dir.path() / "proj");
  for (std::string bad : {"/etc/passwd", "/dev/zero", "../secret", "a/../../secret", "./k.comp", "~/x", ""}) {
    CAPTURE(bad);
    auto f = files.get(bad);
    REQUIRE(!f.has_value());
    CHECK(f.error().category == Category::invalid_argument);
    CHECK(f.error().message.find("inside the project") != std::string::npos);
  }
}

TEST_CASE("special files are refused without blocking: FIFO, /dev/zero behind a symlink") {
  test::TempDir dir;
  REQUIRE(::mkfifo((dir.path() / "pipe.glsl").c_str(), 0600) == 0);  // no writer: a blocking open would hang
  std::filesystem::create_symlink("/dev/zero", dir.path() / "zero.glsl");
  FileCache files(dir.path());
  for (std::string special : {"pipe.glsl", "zero.glsl"}) {
    CAPTURE(special);
    auto f = files.get(special);
    REQUIRE(!f.has_value());
    CHECK(f.error().category == Category::invalid_argument);
    CHECK(f.error().message.find(special) != std::string::npos);
    CHECK(f.error().message.find("regular file") != std::string::npos);
  }
}

TEST_CASE("a file over the size limit is refused") {
  test::TempDir dir;
  dir.write("huge.glsl", std::string(k_max_source_bytes + 1, ' '));
  dir.write("max.glsl", std::string(k_max_source_bytes, ' '));
  FileCache files(dir.path());
  auto f = files.get("huge.glsl");
  REQUIRE(!f.has_value());
  CHECK(f.error().category == Category::invalid_argument);
  CHECK(f.error().message.find("huge.glsl") != std::string::npos);
  CHECK(files.get("max.glsl").has_value());
}

TEST_CASE("include_path keeps includes inside the project") {
  CHECK(*include_path("s", "a.glsl") == "s/a.glsl");
  CHECK(*include_path("s/deep", "../inc/a.glsl") == "s/inc/a.glsl");
  CHECK(*include_path("", "inc/./a.glsl") == "inc/a.glsl");
  for (auto [dir, header] : {std::pair{"s", "/dev/zero"},
                             {"s", "/etc/passwd"},
                             {"s", "../../x.glsl"},
                             {"", "../x.glsl"},
                             {"inc", "a/../../../x"},
                             {"s", ""}}) {
    CAPTURE(dir);
    CAPTURE(header);
    auto p = include_path(dir, header);
    REQUIRE(!p.has_value());
    CHECK(p.error().category == Category::invalid_argument);
  }
  CHECK(include_path("s", "/dev/zero").error().message.find("absolute") != std::string::npos);
  CHECK(include_path("s", "../../x.glsl").error().message.find("outside the manifest's folder") != std::string::npos);
}

}  // namespace kcache::definition
