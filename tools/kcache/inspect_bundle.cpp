// `kcache inspect FILE.kcb`: a bundle's header, fingerprint, signature and
// entries, without importing it; then every entry and the whole-file digest
// are checked, so "ok" means `import` would accept the bytes.
#include "bundle_cli.hpp"
#include "cli.hpp"
#include "kcache/bundle/inspect.hpp"
#include "kcache/report/transfer_report.hpp"

#include <fmt/format.h>

namespace kcache::cli {

int run_inspect_bundle(const std::string& path, bool json) {
  auto in = bundle_stream(path, false);
  auto summary = bundle::inspect_release(in);
  if (!summary) return report_error(summary.error());
  // A damaged payload still shows the head: what the bundle claims to be.
  fmt::print("{}", json ? report::release_json(*summary, path) : report::release_text(*summary, in.label()));
  for (const auto& section : summary->sections)
    if (section.error) return report_error(Error(*section.error).context(in.label()));
  if (summary->error) return report_error(*summary->error);
  return k_exit_ok;
}

}  // namespace kcache::cli
