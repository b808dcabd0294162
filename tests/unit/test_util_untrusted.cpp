// util/text and util/path: the checks every untrusted name and path passes.
#include "kcache/util/path.hpp"
#include "kcache/util/text.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace kcache::util;
using namespace std::string_literals;

TEST_CASE("is_contained_relative_path accepts only normalised paths inside their folder") {
  CHECK(is_contained_relative_path("shaders/blur.comp"));
  CHECK(is_contained_relative_path("a"));
  CHECK(is_contained_relative_path("dir.with.dots/..hidden"));
  for (const char* bad :
       {"", "/etc/shadow", "~/x", "../x", "a/../../x", "a/..", "./a", "a/./b", "a//b", "a/", "..", "."})
    CHECK_MESSAGE(!is_contained_relative_path(bad), bad);
  CHECK(!is_contained_relative_path("a\nb"));
  CHECK(!is_contained_relative_path("a\0b"s));
  CHECK(!is_contained_relative_path("a\x1b[2Jb"));
  CHECK(is_contained_relative_path(std::string(k_max_relative_path, 'x')));
  CHECK(!is_contained_relative_path(std::string(k_max_relative_path + 1, 'x')));
}

TEST_CASE("is_printable_utf8 refuses control characters and invalid UTF-8") {
  CHECK(is_printable_utf8("blur[T=float,WIDTH=4]"));
  CHECK(is_printable_utf8("ядро-ü-€-😀"));
  CHECK(is_printable_utf8(""));
  for (std::string bad :
       {"a\x1b[31mred"s, "a\rb"s, "a\0b"s, "\x7f"s, "\xc2\x9b"s /* C1 CSI */, "\xff"s, "\xc0\xaf"s /* overlong '/' */,
        "\xed\xa0\x80"s /* surrogate */, "\xe2\x82"s /* cut */, "\xf4\x90\x80\x80"s /* > U+10FFFF */})
    CHECK_MESSAGE(!is_printable_utf8(bad), escape_untrusted(bad));
}

TEST_CASE("escape_untrusted keeps printable text and makes the rest visible") {
  CHECK(escape_untrusted("blur-ü") == "blur-ü");
  CHECK(escape_untrusted("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(escape_untrusted("a\rb\n") == "a\\x0db\\x0a");
  CHECK(escape_untrusted("\xff\xfe") == "\\xff\\xfe");
  CHECK(escape_untrusted("a\\x1b") == "a\\\\x1b");  // a literal backslash cannot forge an escape
  CHECK(escape_untrusted("a\0b"s) == "a\\x00b");
  for (std::string s : {"\x1b]0;title\x07"s, "\xc2\x9b"s, "x\xed\xa0\x80y"s})
    CHECK(is_printable_utf8(escape_untrusted(s)));
}

TEST_CASE("printable_text escapes what a terminal would act on, once") {
  CHECK(printable_text("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(printable_text("path\\name") == "path\\name");  // backslashes kept
  const std::string once = escape_untrusted("k\x1b]0;x\x07");
  CHECK(printable_text(once) == once);  // already escaped text is not escaped twice
  CHECK(printable_text(printable_text("\xff\r")) == printable_text("\xff\r"));
}

TEST_CASE("shown_untrusted cuts long text at a character boundary, then escapes") {
  CHECK(shown_untrusted("short\x1b") == "short\\x1b");
  const std::string long_text = std::string(119, 'a') + "ü" + "tail";  // ü straddles byte 120
  CHECK(shown_untrusted(long_text) == std::string(119, 'a') + "...");
  CHECK(is_printable_utf8(shown_untrusted(std::string(1000, '\xff'))));
  CHECK(shown_untrusted(std::string(1000, 'x')).size() == 123);
}

TEST_CASE("edit_distance counts insertions, deletions and substitutions") {
  using kcache::util::edit_distance;
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("build", "build") == 0);
  CHECK(edit_distance("biuld", "build") == 2);  // a swap is two substitutions
  CHECK(edit_distance("buld", "build") == 1);
  CHECK(edit_distance("builds", "build") == 1);
  CHECK(edit_distance("", "gc") == 2);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("ad", "add") == 1);
}

TEST_CASE("split_lines: every line between newlines, empty ones included") {
  using V = std::vector<std::string_view>;
  CHECK(split_lines("") == V{""});
  CHECK(split_lines("one") == V{"one"});
  CHECK(split_lines("a\nb") == V{"a", "b"});
  CHECK(split_lines("a\n\nb\n") == V{"a", "", "b", ""});
}
