// libFuzzer entry point for a store's remote setting (docs/reliability.md F1,
// lib/kcache/remote/setting.hpp): the file lies in the store folder, which
// anyone who can write there can change. Any outcome is fine except a crash,
// a sanitizer report, a hang or unbounded memory; a refusal names the file
// (and a line) in printable text; an accepted setting holds at most
// k_max_setting_remotes URLs and is written and read back to the same URLs.
#include "kcache/remote/setting.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = kcache::remote::parse_remote_setting(text, "STORE/remotes");
  if (!r) {
    const auto& m = r.error().message;
    if (m.empty() || !kcache::util::is_printable_utf8(m) || m.size() > 8192 ||
        m.find("STORE/remotes") == std::string::npos)
      std::abort();
    return 0;
  }
  if (r->size() > kcache::remote::k_max_setting_remotes) std::abort();
  auto again = kcache::remote::parse_remote_setting(kcache::remote::format_remote_setting(*r), "again");
  if (!again || again->size() != r->size()) std::abort();
  for (std::size_t i = 0; i < r->size(); ++i)
    if ((*again)[i].text != (*r)[i].text || (*again)[i].url.shown() != (*r)[i].url.shown()) std::abort();
  return 0;
}
