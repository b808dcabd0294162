// libFuzzer entry point for OCI references (remote/oci.hpp; docs/reliability.md
// F1): `push`, `pull` and `import oci://` take them from the command line,
// untrusted. Any outcome is fine except a crash, a sanitizer report or a
// hang; a refusal is printable; an accepted reference parses again from its
// shown() form to the same fields. And no password shows: the input is
// also split at its first two NUL bytes into USER, PASSWORD and REST, and
// for oci://USER:PASSWORD@REST, shown_oci_text holds no PASSWORD (when it is
// 4 bytes or more and appears nowhere else) and the refusal quotes the
// reference only that way.
#include "kcache/remote/oci.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void check(std::string_view text) {
  auto ref = kcache::remote::parse_oci_ref(text);
  if (!ref) {
    const auto& m = ref.error().message;
    if (m.empty() || !kcache::util::is_printable_utf8(m) || m.size() > 4096) std::abort();
    return;
  }
  auto again = kcache::remote::parse_oci_ref(ref->shown());
  if (!again || again->host != ref->host || again->repository != ref->repository || again->tag != ref->tag ||
      again->digest != ref->digest || again->plain_http != ref->plain_http)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check(text);
  auto first = text.find('\0');
  auto second = first == std::string_view::npos ? first : text.find('\0', first + 1);
  if (second == std::string_view::npos) return 0;
  const auto user = text.substr(0, first), password = text.substr(first + 1, second - first - 1),
             rest = text.substr(second + 1);
  const std::string composed = "oci://" + std::string(user) + ":" + std::string(password) + "@" + std::string(rest);
  check(composed);
  // A password that appears elsewhere, or that is too short to tell apart
  // from the rest of the message, proves nothing; nor does an '@' that may
  // begin a digest (oci://HOST/REPO@sha256:HEX, the one '@' a reference holds).
  if ((rest.size() == 71 && rest.starts_with("sha256:")) || password.size() < 4) return 0;
  for (char c : password)  // escaped or masked bytes could match by chance
    if (c < 0x21 || c > 0x7e || c == '\\' || c == '*') return 0;
  const auto masked = "oci://" + std::string(user) + ":***@" + std::string(rest);
  if (kcache::util::escape_untrusted(masked).find(password) != std::string::npos) return 0;
  auto ref = kcache::remote::parse_oci_ref(composed);
  // Accepted only where the text is also a reference without user info
  // (oci://HOST:PORT/REPO@sha256:...): then nothing marks a password.
  if (ref) return 0;
  // The refusal quotes the text only as shown_oci_text shows it (the rest
  // of the message is fixed text), and that holds no password.
  const auto shown = kcache::remote::shown_oci_text(composed);
  if (shown.find(password) != std::string::npos) std::abort();
  if (ref.error().message.find("'" + shown + "'") == std::string::npos) std::abort();
  return 0;
}
