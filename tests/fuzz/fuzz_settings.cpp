// libFuzzer entry point for a settings file (docs/reliability.md F1,
// lib/kcache/settings/settings.hpp): a store's lies in the store folder,
// which anyone who can write there can change. Any outcome is fine except a
// crash, a sanitizer report, a hang or unbounded memory; a refusal names the
// file (and a line) in printable text; accepted settings hold every key once,
// each value accepted by check_setting, and read back the same once written.
#include "kcache/settings/settings.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kcache::settings;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (Scope scope : {Scope::store, Scope::user}) {
    auto r = parse_settings(text, "STORE/config", scope);
    if (!r) {
      const auto& m = r.error().message;
      if (m.empty() || !kcache::util::is_printable_utf8(m) || m.size() > 8192 ||
          m.find("STORE/config") == std::string::npos)
        std::abort();
      continue;
    }
    for (std::size_t i = 0; i < r->size(); ++i) {
      if (!check_setting((*r)[i].key, (*r)[i].value)) std::abort();
      for (std::size_t j = 0; j < i; ++j)
        if ((*r)[j].key == (*r)[i].key) std::abort();
    }
    auto again = parse_settings(format_settings(*r), "again", scope);
    if (!again || *again != *r) std::abort();
  }
  return 0;
}
