// libFuzzer entry point for the remote URL parser (docs/reliability.md F1):
// URLs come from command lines and KCACHE_REMOTE, so every byte is
// untrusted. Any outcome is fine except a crash, a sanitizer report or a
// hang; a refusal says what is wrong in printable text and never quotes a
// password; an accepted URL has a bounded, printable host, path and prefix,
// and parses again from its shown() form (password aside) to the same fields.
#include "kcache/remote/url.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto url = kcache::remote::parse_remote_url(text);
  if (!url) {
    const auto& m = url.error().message;
    if (m.empty() || !kcache::util::is_printable_utf8(m) || m.size() > 4096) std::abort();
    return 0;
  }
  if (url->host.size() > 253 || url->prefix.size() > 128 || url->timeout_ms < 1 || url->timeout_ms > 600000 ||
      url->max_failures < 1 || url->max_failures > 1000 || url->trust.size() > kcache::remote::k_max_trusted_keys)
    std::abort();
  for (const std::string* s : {&url->host, &url->path, &url->prefix, &url->user, &url->password})
    for (char c : *s)
      if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) std::abort();
  auto shown = url->shown();
  if (!url->password.empty() && shown.find(url->password) != std::string::npos && url->password != "***" &&
      url->password.size() > 3)
    if (shown.find(":" + url->password + "@") != std::string::npos) std::abort();
  if (url->password.empty()) {
    auto again = kcache::remote::parse_remote_url(shown);
    if (!again || again->host != url->host || again->path != url->path || again->prefix != url->prefix ||
        again->read_only != url->read_only || again->db != url->db || again->port != url->port)
      std::abort();
  }
  return 0;
}
