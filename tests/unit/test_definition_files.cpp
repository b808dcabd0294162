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

TEST_CASE("special files are refused without blocking: FIFO, a FIFO behind a symlink, /dev/zero behind one") {
  test::TempDir dir;
  REQUIRE(::mkfifo((dir.path() / "pipe.glsl").c_str(), 0600) == 0);  // no writer: a blocking open would hang
  std::filesystem::create_symlink("pipe.glsl", dir.path() / "pipe-link.glsl");
  std::filesystem::create_symlink("/dev/zero", dir.path() / "zero.glsl");
  FileCache files(dir.path());
  for (std::string special : {"pipe.glsl", "pipe-link.glsl", "zero.glsl"}) {
    CAPTURE(special);
    auto f = files.get(special);
    REQUIRE(!f.has_value());
    CHECK(f.error().category == Category::invalid_argument);
    CHECK(f.error().message.find(special) != std::string::npos);
    // /dev/zero is outside the project: refused before it is opened.
    CHECK(f.error().message.find(special == "zero.glsl" ? "outside the project" : "regular file") != std::string::npos);
  }
}

TEST_CASE("a symlink that leads out of the project is refused, and its target never read") {
  test::TempDir dir;
  dir.write("outside/secret.txt", "TOP-SECRET\n");
  dir.write("proj/k.comp", "void main() {}\n");
  std::filesystem::create_directories(dir.path() / "proj/inc");
  // A file link (absolute and relative), a folder link, and a chain whose
  // first hop stays inside.
  std::filesystem::create_symlink(dir.path() / "outside/secret.txt", dir.path() / "proj/inc/abs.glsl");
  std::filesystem::create_symlink("../../outside/secret.txt", dir.path() / "proj/inc/rel.glsl");
  std::filesystem::create_symlink(dir.path() / "outside", dir.path() / "proj/ext");
  std::filesystem::create_symlink("abs.glsl", dir.path() / "proj/inc/chain.glsl");
  FileCache files(dir.path() / "proj");
  for (std::string leak : {"inc/abs.glsl", "inc/rel.glsl", "ext/secret.txt", "inc/chain.glsl"}) {
    CAPTURE(leak);
    auto f = files.get(leak);
    REQUIRE(!f.has_value());
    CHECK(f.error().category == Category::invalid_argument);
    CHECK(f.error().message.find(leak) != std::string::npos);
    CHECK(f.error().message.find("outside the project") != std::string::npos);
    CHECK(f.error().message.find("copy the file into the project or move the manifest up") != std::string::npos);
    CHECK(f.error().message.find("TOP-SECRET") == std::string::npos);
  }
}

TEST_CASE("symlinks that stay inside the project keep working, also when the project is reached by one") {
  test::TempDir dir;
  dir.write("proj/inc/real.glsl", "float r;\n");
  std::filesystem::create_symlink("real.glsl", dir.path() / "proj/inc/alias.glsl");
  std::filesystem::create_symlink(dir.path() / "proj/inc", dir.path() / "proj/lib");
  std::filesystem::create_symlink(dir.path() / "proj", dir.path() / "proj-link");
  for (const auto& root : {dir.path() / "proj", dir.path() / "proj-link"}) {
    CAPTURE(root);
    FileCache files(root);
    for (std::string inside : {"inc/real.glsl", "inc/alias.glsl", "lib/real.glsl", "lib/alias.glsl"}) {
      CAPTURE(inside);
      auto f = files.get(inside);
      REQUIRE_MESSAGE(f.has_value(), f.error().message);
      CHECK((*f)->content == "float r;\n");
      CHECK((*f)->path == inside);
    }
    CHECK(files.get("inc/missing.glsl").error().category == Category::not_found);
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
  for (auto item : {std::pair{"s", "/dev/zero"},
                    {"s", "/etc/passwd"},
                    {"s", "../../x.glsl"},
                    {"", "../x.glsl"},
                    {"inc", "a/../../../x"},
                    {"s", ""}}) {
    auto dir = item.first;  // named, not bound: clang 14 cannot capture a binding
    auto header = item.second;
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
