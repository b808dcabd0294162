// Small text renderings shared by every report and message: sizes, hex,
// times. Thread-safety: pure functions.
#pragma once

#include "kcache/util/error.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache::util {

/// "812 B", "1.5 KiB", "64 KiB", "3.2 MiB" … "EiB": binary units; one decimal
/// unless the value is a whole number of its unit.
std::string human_bytes(std::uint64_t bytes);

/// Lowercase hex of `bytes`, two digits each.
std::string to_hex(std::span<const std::uint8_t> bytes);
/// The value of one hex digit (either case), -1 for any other character.
int hex_digit_value(char c);
/// Fills `out` from exactly 2 × out.size() hex digits (either case); false
/// (out unspecified) for another length or a character that is not one.
bool from_hex(std::string_view text, std::span<std::uint8_t> out);

/// Levenshtein distance between `a` and `b` (insertions, deletions and
/// substitutions of bytes): how far a mistyped name is from a known one.
/// O(|a|·|b|) time: for short names.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// "90s", "90m", "12h", "30d", "2w" (one number, one unit) → seconds.
/// invalid_argument naming the text and the accepted units otherwise.
Result<std::uint64_t> parse_duration(std::string_view text);

/// The one parser of sizes (gc --max-size, the max_size and map_size
/// settings, $KCACHE_MAP_SIZE): "4096", "100K", "500M", "2G", "1T" → bytes. Units are binary (K = 1024);
/// "KiB"/"MiB"/... and a trailing "B" ("500MB") mean the same. Fractions
/// ("1.5G") are accepted. invalid_argument otherwise.
Result<std::uint64_t> parse_size(std::string_view text);

/// How a small versioned text file of the store or the user is read (the
/// store's remote setting, the settings files): a first line "MAGIC VERSION",
/// then one item a line.
struct VersionedText {
  std::string_view label;      ///< "remote setting": starts every message
  std::string_view magic;      ///< "kcache-remotes"
  std::uint16_t version = 1;   ///< the newest version this kcache reads
  std::size_t max_bytes = 0;   ///< a larger file is refused unread
  bool allow_tab = false;      ///< whether '\t' is allowed (every other control byte is refused)
  std::string_view fix;        ///< what to do about a damaged line, after what is wrong
  std::string_view newer_fix;  ///< what to do about a newer version
};

/// A damaged line of such a file: corruption "LABEL FILE:LINE: WHAT; FIX".
Error versioned_text_error(const VersionedText& rules, std::string_view shown_path, std::size_t line,
                           std::string_view what);

/// The lines after the first of `text` with their 1-based numbers, checked
/// by `rules`: at most max_bytes, no control byte (but '\t' when allowed),
/// a first line "MAGIC VERSION" of a version from 1 to rules.version.
/// corruption (versioned_text_error) otherwise; version_mismatch for a newer
/// version; `shown_path` is escaped for the messages.
Result<std::vector<std::pair<std::size_t, std::string_view>>> versioned_text_lines(std::string_view text,
                                                                                   std::string_view shown_path,
                                                                                   const VersionedText& rules);

/// The lines of `text`, split at each '\n' (a text without one is one line,
/// "" one empty line); views into `text`.
std::vector<std::string_view> split_lines(std::string_view text);

/// "2025-01-31T12:00:00Z": unix seconds as ISO 8601 UTC.
std::string iso_time(std::uint64_t unix_seconds);

/// Whether `text` is valid UTF-8 (shortest forms, no surrogates) holding no
/// control character (C0, DEL, C1): safe to print as it is. Names that come
/// from elsewhere (a bundle's kernel names) must satisfy this to be accepted.
bool is_printable_utf8(std::string_view text);

/// `text` made safe for a terminal or a log: printable UTF-8 is kept, every
/// control character and every byte of invalid UTF-8 becomes "\xNN" (and a
/// backslash "\\"), so untrusted bytes can neither move the cursor nor
/// corrupt JSON. Equal to `text` when is_printable_utf8(text) and it holds
/// no backslash.
std::string escape_untrusted(std::string_view text);

/// Untrusted text for a message: escape_untrusted of at most `max_bytes`
/// of it (cut at a character boundary before escaping, then "..."), so that
/// one huge field cannot make a huge message.
std::string shown_untrusted(std::string_view text, std::size_t max_bytes = 120);

/// Like escape_untrusted but leaves backslashes as they are, so that text
/// holding names already escaped by escape_untrusted is not escaped twice:
/// for a terminal, where only control characters and invalid UTF-8 do harm.
/// printable_text(printable_text(x)) == printable_text(x).
std::string printable_text(std::string_view text);

}  // namespace kcache::util
