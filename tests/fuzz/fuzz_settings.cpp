// libFuzzer entry point for settings files and the resolver over them
// (docs/reliability.md F1, lib/kcache/settings/settings.hpp, resolver.hpp):
// a store's file lies in the store folder, which anyone who can write there
// can change, and the user's may be edited by hand. Any outcome is fine
// except a crash, a sanitizer report, a hang or unbounded memory; a refusal
// names the file (and a line) in printable text; accepted settings hold every
// key once, each value accepted by check_setting, and read back the same once
// written.
//
// The input is also split at the first two 0x1e bytes into a store's file, a
// user's file and an environment value, written to files and resolved for
// every key at every level (flag, environment, store, user, default): a
// store's value that applies never names code to run or the store folder,
// stays within its bound, and names only trust keys the user trusts.
#include "kcache/settings/remote_url.hpp"
#include "kcache/settings/resolver.hpp"
#include "kcache/settings/settings.hpp"
#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace {

using namespace kcache::settings;

void check_parse(std::string_view text) {
  auto r = parse_settings(text, "STORE/config");
  if (!r) {
    const auto& m = r.error().message;
    if (m.empty() || !kcache::util::is_printable_utf8(m) || m.size() > 8192 ||
        m.find("STORE/config") == std::string::npos)
      std::abort();
    return;
  }
  for (std::size_t i = 0; i < r->size(); ++i) {
    if (!check_setting((*r)[i].key, (*r)[i].value)) std::abort();
    if ((*r)[i].line < 2) std::abort();
    for (std::size_t j = 0; j < i; ++j)
      if ((*r)[j].key == (*r)[i].key) std::abort();
  }
  auto again = parse_settings(format_settings(*r), "again");
  if (!again || *again != *r) std::abort();
}

/// This process's own folder for the files the resolver reads.
const std::filesystem::path& folder() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("kcache-fuzz-settings-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d / "store");
    std::filesystem::create_directories(d / "config" / "kcache");
    return d;
  }();
  return dir;
}

void write(const std::filesystem::path& path, std::string_view text) {
  if (!kcache::util::write_file_atomic(path, kcache::util::as_bytes(text), 0600, kcache::util::Flush::none))
    std::abort();
}

void check_levels(std::string_view input) {
  const auto a = input.find('\x1e');
  if (a == std::string_view::npos) return;
  const auto b = input.find('\x1e', a + 1);
  const std::string_view store_text = input.substr(0, a);
  const std::string_view user_text =
      input.substr(a + 1, b == std::string_view::npos ? std::string_view::npos : b - a - 1);
  const std::string_view env_value = b == std::string_view::npos ? std::string_view() : input.substr(b + 1);
  write(folder() / "store" / "config", store_text);
  write(folder() / "config" / "kcache" / "config", user_text);
  // One resolver for every key, as a command has: the environment value
  // given to every variable at once.
  Environment env;
  env.values["XDG_CONFIG_HOME"] = (folder() / "config").string();
  if (!env_value.empty() && env_value.find('\0') == std::string_view::npos)
    for (const auto& key : setting_keys())
      if (!key.env.empty()) env.values[std::string(key.env)] = std::string(env_value);
  Resolver resolver(env);
  for (const auto& key : setting_keys()) {
    for (bool every : {false, true}) {
      auto r =
          every ? resolver.explain(key.name, folder() / "store") : resolver.resolve(key.name, "", folder() / "store");
      if (!r) {
        if (r.error().message.empty() || !kcache::util::is_printable_utf8(r.error().message)) std::abort();
        continue;
      }
      for (const auto& refused : r->refused)
        if (refused.why.empty() || !kcache::util::is_printable_utf8(refused.text())) std::abort();
      if (r->source == Source::env && r->value != env_value) std::abort();
      if (r->source != Source::store) continue;
      // What a store's value that applies may be.
      if (key.store == StoreRule::refused || !store_refusal(key.name, r->value).empty()) std::abort();
      if (key.store == StoreRule::narrows) {
        auto user = resolver.user_settings();
        if (!user) std::abort();  // it was read to judge the store's
        const auto mine = split_remote_list(find_setting(**user, key.name).value_or(""));
        for (const auto& k : split_remote_list(r->value))
          if (std::find(mine.begin(), mine.end(), k) == mine.end()) std::abort();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_parse(text);
  check_levels(text);
  return 0;
}
