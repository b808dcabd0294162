// Hostile records (issue 14): everything a bundle says about its entries is
// validated when the bundle is read, before import sees it. Each case is a
// well-formed bundle with correct digests (assembled from encode_entry
// records), so that only the lie under test can refuse it: recorded input
// paths outside the project, over-long or control-character kernel names,
// fingerprint fields that would inject into a terminal, spirv targets that
// do not exist.
#include "test_bundle_support.hpp"

#include "kcache/bundle/key_files.hpp"
#include "kcache/util/text.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

using namespace kcache;
using namespace kcache::test;
using bundle::BundleReader;

namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

/// `entries` as one block under `ns`, every digest correct.
Bytes hostile_bundle(const Namespace& ns, const std::vector<Entry>& entries) {
  auto h = one_block_header(ns, entries);
  return assemble(h, bundle::internal::compress_frame(records_of(entries), 3, 20, true));
}

Error refused(const Bytes& bytes) {
  auto r = read_all(bytes);
  REQUIRE_MESSAGE(!r.has_value(), "a hostile bundle was accepted");
  return r.error();
}

/// Refused as corruption, with every part of `parts` in the message and no
/// raw control character (the message is printed as it is).
void check_refusal(const Bytes& bytes, std::initializer_list<std::string_view> parts) {
  auto e = refused(bytes);
  CHECK_MESSAGE(e.category == Category::corruption, category_name(e.category), ": ", e.message);
  for (auto part : parts) CHECK_MESSAGE(contains(e.message, part), "'", part, "' not in: ", e.message);
  CHECK_MESSAGE(util::is_printable_utf8(e.message), "message is not printable: ", util::escape_untrusted(e.message));
}

}  // namespace

TEST_CASE("issue 14 item 2: recorded input paths outside the project are refused at read") {
  auto entries = make_entries(3);
  REQUIRE(read_all(hostile_bundle(spirv_namespace("vulkan1.2"), entries)).has_value());
  const std::string kernel = entries[1].kernel;

  struct Case {
    std::string path;
    std::string shown;  ///< how the message shows it
  };
  const std::vector<Case> bad = {
      {"/dev/zero", "/dev/zero"},
      {"/etc/shadow", "/etc/shadow"},
      {"../../etc/passwd", "../../etc/passwd"},
      {"shaders/../../x.glsl", "shaders/../../x.glsl"},
      {"~/x.glsl", "~/x.glsl"},
      {"./shaders/a.glsl", "./shaders/a.glsl"},
      {"shaders//a.glsl", "shaders//a.glsl"},
      {"", "''"},
      {"shaders/\x1b[2Ja.glsl", "shaders/\\x1b[2Ja.glsl"},
      {"shaders/a\nb.glsl", "shaders/a\\x0ab.glsl"},
      {std::string(1025, 'a'), "1025 bytes"},
  };
  for (const auto& c : bad) {
    CAPTURE(util::escape_untrusted(c.path));
    auto hostile = entries;
    hostile[1].inputs[1].path = c.path;
    check_refusal(hostile_bundle(spirv_namespace("vulkan1.2"), hostile),
                  {"entry 2 of 3", kernel, "input 2 of 2", c.shown});
  }

  SUBCASE("the id field 'source' and include dirs are recorded paths too") {
    auto hostile = entries;
    hostile[0].id_fields.emplace_back("source", "/etc/shadow");
    check_refusal(hostile_bundle(spirv_namespace("vulkan1.2"), hostile), {"entry 1 of 3", "source", "/etc/shadow"});
    hostile = entries;
    hostile[2].id_fields.emplace_back("include_dir:0", "../outside");
    check_refusal(hostile_bundle(spirv_namespace("vulkan1.2"), hostile),
                  {"entry 3 of 3", "include_dir:0", "../outside"});
    hostile = entries;
    hostile[2].id_fields.emplace_back("include_dir:0", ".");  // the project's own folder
    hostile[2].id_fields.emplace_back("include_dir:1", "include");
    CHECK(read_all(hostile_bundle(spirv_namespace("vulkan1.2"), hostile)).has_value());
  }
  SUBCASE("counts and lengths of every field are bounded") {
    auto hostile = entries;
    hostile[1].inputs.resize(4097, hostile[1].inputs[0]);
    check_refusal(hostile_bundle(spirv_namespace("vulkan1.2"), hostile), {"entry 2 of 3", "4097 inputs", "4096"});
    hostile = entries;
    hostile[1].id_fields.emplace_back(std::string(2000, 'f'), "v");
    check_refusal(hostile_bundle(spirv_namespace("vulkan1.2"), hostile), {"entry 2 of 3", "field name", "2000 bytes"});
    hostile = entries;
    hostile[1].ir_fields.emplace_back("glslang", std::string(70000, 'v'));
    // The decoder's own cap (64 KiB a string) refuses this one, as corruption.
    check_refusal(hostile_bundle(spirv_namespace("vulkan1.2"), hostile), {"entry 2 of 3"});
    hostile = entries;
    hostile[1].origin_detail = std::string(9000, 'o');
    check_refusal(hostile_bundle(spirv_namespace("vulkan1.2"), hostile), {"entry 2 of 3", "origin", "9000 bytes"});
  }
  SUBCASE("field names and values must be printable") {
    auto hostile = entries;
    hostile[0].id_fields[1].second = "main\x1b]0;pwned\x07";
    check_refusal(hostile_bundle(spirv_namespace("vulkan1.2"), hostile), {"entry 1 of 3", "entry", "\\x1b]0;pwned"});
    hostile = entries;
    hostile[0].ir_fields[0].first = "gl\xffslang";
    check_refusal(hostile_bundle(spirv_namespace("vulkan1.2"), hostile), {"entry 1 of 3", "gl\\xffslang"});
  }
}

TEST_CASE("issue 14 item 4: kernel names and fingerprint fields that could inject into a terminal are refused") {
  auto entries = make_entries(2);
  SUBCASE("kernel names") {
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"red\x1b[31m[T=f16]", "red\\x1b[31m[T=f16]"},
        {"k\xff\xfe", "k\\xff\\xfe"},
        {"k\r[T=f16]", "k\\x0d[T=f16]"},
        {"../../etc/passwd", "../../etc/passwd"},
        {"a/b", "a/b"},
        {"..", ".."},
        {std::string(1000, 'k'), "1000 bytes"},
        {std::string(401, 'k'), "401 bytes"},
    };
    for (const auto& item : bad) {
      const auto& name = item.first;  // named, not bound: clang 14 cannot capture a binding
      const auto& shown = item.second;
      CAPTURE(util::escape_untrusted(name));
      auto hostile = entries;
      hostile[1].kernel = name;
      hostile[1].id_fields[0].second = name;
      // Refused at open(), from the index, before anything is decompressed.
      auto bytes = hostile_bundle(vulkan_ns(), hostile);
      auto r = BundleReader::open(std::span(bytes));
      REQUIRE_MESSAGE(!r.has_value(), "accepted");
      CHECK(r.error().category == Category::corruption);
      CHECK_MESSAGE(contains(r.error().message, "entry 2 of 2"), r.error().message);
      CHECK_MESSAGE(contains(r.error().message, shown), r.error().message);
      CHECK(util::is_printable_utf8(r.error().message));
    }
    // Variant values may hold '/' and dots (the manifest allows any one-line value).
    auto ok = entries;
    ok[1].kernel = "blur[PATH=a/b,SCALE=0.5]";
    CHECK(read_all(hostile_bundle(vulkan_ns(), ok)).has_value());
    ok[1].kernel = std::string(400, 'k');
    CHECK(read_all(hostile_bundle(vulkan_ns(), ok)).has_value());
  }
  SUBCASE("fingerprint record fields") {
    auto record = schema1_record();
    record.fields[4].second = "580.159.01\x1b[2J";  // driverInfo
    Namespace ns{"vulkan", recorded_vulkan_id(record), record};
    check_refusal(hostile_bundle(ns, entries), {"fingerprint record", "driverInfo", "\\x1b[2J"});
    record = schema1_record();
    record.fields.emplace_back(
        "\x9b"
        "31m",
        "1");
    ns = Namespace{"vulkan", recorded_vulkan_id(record), record};
    check_refusal(hostile_bundle(ns, entries), {"fingerprint record", "\\x9b31m"});
  }
  SUBCASE("tool versions") {
    auto h = one_block_header(vulkan_ns(), entries);
    h.tool_versions.emplace_back("glslang", "15\n1");
    auto bytes = assemble(h, bundle::internal::compress_frame(records_of(entries), 3, 20, true));
    check_refusal(bytes, {"tool version", "glslang", "15\\x0a1"});
  }
}

TEST_CASE("issue 14 item 5: a spirv bundle must name a known target") {
  auto entries = make_entries(2);
  for (std::string target : {"vulkan9.9", "vulkan1.2/../x", "", "opengl4.5", "vulkan1.2\x1b"}) {
    CAPTURE(util::escape_untrusted(target));
    auto bytes = hostile_bundle(spirv_namespace(target), entries);
    auto r = BundleReader::open(std::span(bytes));
    REQUIRE_MESSAGE(!r.has_value(), "accepted");
    CHECK(r.error().category == Category::corruption);
    CHECK_MESSAGE(contains(r.error().message, "unknown SPIR-V target '" + util::escape_untrusted(target) + "'"),
                  r.error().message);
    CHECK_MESSAGE(contains(r.error().message, "vulkan1.0"), r.error().message);  // what is known
  }
  for (std::string target : {"vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3"})
    CHECK(read_all(hostile_bundle(spirv_namespace(target), entries)).has_value());
}

TEST_CASE("issue 14: the writer refuses a namespace the reader would refuse") {
  auto entries = make_entries(2);
  auto h = bundle::make_header(spirv_namespace("vulkan9.9"), tool_versions(), 1, entries);
  std::ostringstream out;
  auto r = bundle::write_bundle(out, h, bundle::entries_from(entries));
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);
  CHECK_MESSAGE(contains(r.error().message, "unknown SPIR-V target 'vulkan9.9'"), r.error().message);
  CHECK(out.str().empty());
}

TEST_CASE("issue 14: trusted key files are read with a size cap, regular files only") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(KCACHE_TEST_TMP) / "unit_bundle_key_files";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto pair = bundle::generate_keypair();
  REQUIRE(pair);
  const fs::path good = dir / "good.pub";
  std::ofstream(good) << bundle::encode_public_key(pair->public_key);
  REQUIRE(bundle::load_public_keys({good}).has_value());

  // A key file padded with 2 MiB of comment lines: refused by size, unread.
  const fs::path big = dir / "big.pub";
  {
    std::ofstream f(big);
    f << bundle::encode_public_key(pair->public_key);
    std::string line = "# " + std::string(1021, 'x') + "\n";
    for (int i = 0; i < 2048; ++i) f << line;
  }
  auto r = bundle::load_public_keys({big});
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);
  CHECK_MESSAGE(contains(r.error().message, big.string()), r.error().message);
  CHECK_MESSAGE(contains(r.error().message, "limit"), r.error().message);

  // Devices and FIFOs: refused without reading (before: /dev/zero read for ever).
  for (const char* special : {"/dev/zero", "/dev/null"}) {
    auto s = bundle::load_public_keys({special});
    REQUIRE(!s);
    CHECK_MESSAGE(contains(s.error().message, "not a regular file"), s.error().message);
  }
  const fs::path fifo = dir / "fifo.pub";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto f = bundle::load_public_keys({fifo});
  REQUIRE(!f);
  CHECK_MESSAGE(contains(f.error().message, "not a regular file"), f.error().message);
}
