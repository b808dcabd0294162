// Reports over hostile text: kernel names, fingerprint fields, origins and
// run-log fields that came from a store or bundle may hold terminal escapes,
// CR, NUL and invalid UTF-8. Every text report must print them escaped, and
// every JSON report must dump (never throw) as valid UTF-8.
//
// The test case "hostile store: write one for cli.hostile_output" doubles as
// the tool tests/cli/hostile_output.sh runs to get such a store (the CLI
// refuses to create one): with KCACHE_HOSTILE_STORE=DIR it writes the store
// into DIR.
#include "kcache/compile/compiler.hpp"
#include "kcache/maintain/gc.hpp"
#include "kcache/maintain/inspect.hpp"
#include "kcache/maintain/stats.hpp"
#include "kcache/maintain/verify.hpp"
#include "kcache/report/device_report.hpp"
#include "kcache/report/inspect_report.hpp"
#include "kcache/report/lifecycle.hpp"
#include "kcache/report/report.hpp"
#include "kcache/report/transfer_report.hpp"
#include "kcache/store/gc.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/text.hpp"

#include "test_support.hpp"

#include <cstdlib>
#include <string>

using namespace std::string_literals;

namespace kcache {
namespace {

namespace fs = std::filesystem;

/// ESC sequences (clear screen, window title), BEL, CR, NUL, DEL, a C1 CSI
/// and bytes that are not UTF-8.
const std::string k_evil = "evil\x1b[2J\x1b]0;pwned\x07\r\0\x7f\xc2\x9b"s + "\xff\xfe-name";

/// Every line (split at '\n') is printable UTF-8: nothing a terminal acts on.
bool clean(const std::string& text) {
  std::size_t from = 0;
  while (from <= text.size()) {
    std::size_t nl = text.find('\n', from);
    if (nl == std::string::npos) nl = text.size();
    if (!util::is_printable_utf8(std::string_view(text).substr(from, nl - from))) return false;
    from = nl + 1;
  }
  return true;
}

#define CHECK_CLEAN(text)                                               \
  do {                                                                  \
    const std::string t_ = (text);                                      \
    CHECK_MESSAGE(clean(t_), #text ": " << util::escape_untrusted(t_)); \
  } while (0)

Entry hostile_entry(const std::string& kernel) {
  Entry e;
  e.kernel = kernel;
  e.key.id = util::hash_string("id:" + kernel);
  e.key.ir = util::hash_string("ir:" + kernel);
  e.id_fields = {{"source" + k_evil, k_evil}};
  e.ir_fields = {{"glslang", k_evil}};
  e.inputs = {{k_evil, util::hash_string("input")}};
  e.payload.assign(64, 'p');
  e.created = 1'700'000'000;
  e.origin_kind = OriginKind::imported;
  e.origin_detail = "bundle " + k_evil + ".kcb";
  seal_payload(e);
  return e;
}

/// A store as a hostile bundle or a damaged disk could leave it: two kernels
/// with hostile names in a spirv namespace, one in a vulkan namespace whose
/// fingerprint record is hostile, and a run record with hostile names.
void write_hostile_store(const fs::path& dir) {
  auto store = store::open_lmdb_store(dir);
  REQUIRE_MESSAGE(store.has_value(), store.error().message);
  auto put = (*store)->put(spirv_namespace("vulkan1.2"),
                           std::vector<Entry>{hostile_entry(k_evil), hostile_entry("b-" + k_evil)});
  REQUIRE_MESSAGE(put.has_value(), put.error().message);
  FingerprintRecord record{{{"vendorID", "0x10005"}, {"deviceName", k_evil}, {"driverInfo", k_evil}}};
  put = (*store)->put(vulkan_namespace(record), std::vector<Entry>{hostile_entry("c-" + k_evil)});
  REQUIRE_MESSAGE(put.has_value(), put.error().message);
  store::UsageBatch batch;
  batch.time = 1'700'000'100;
  batch.used = {{"spirv/vulkan1.2", k_evil}};
  batch.run = store::RunRecord{.time = 1'700'000'100, .command = "build" + k_evil, .kernels = 2, .hits = 1};
  batch.run->phases = {{.name = "phase" + k_evil, .wall_us = 10, .cpu_us = 5}};
  auto used = (*store)->record_usage(batch);
  REQUIRE_MESSAGE(used.has_value(), used.error().message);
}

}  // namespace

TEST_CASE("hostile store: write one for cli.hostile_output") {
  const char* dir = std::getenv("KCACHE_HOSTILE_STORE");
  test::TempDir tmp;
  write_hostile_store(dir && *dir ? fs::path(dir) : tmp.path() / "store");
}

TEST_CASE("reports of a hostile store: text escaped, JSON valid UTF-8") {
  test::TempDir tmp;
  write_hostile_store(tmp.path() / "store");
  auto store = store::open_lmdb_store(tmp.path() / "store");
  REQUIRE_MESSAGE(store.has_value(), store.error().message);
  const auto& toolchain = compile::Toolchain::installed();

  auto inspected = maintain::inspect_store(**store, nullptr, toolchain);
  REQUIRE_MESSAGE(inspected.has_value(), inspected.error().message);
  inspected->summaries.at(0).foreign = true;
  inspected->summaries.at(0).foreign_reason = k_evil;
  CHECK_CLEAN(report::store_text(*inspected));
  CHECK_CLEAN(report::store_json(*inspected));
  // Escaped, not dropped: the reader sees what the bytes were.
  CHECK(report::store_text(*inspected).find("evil\\x1b[2J") != std::string::npos);

  auto kernel = maintain::inspect_kernel(**store, k_evil, nullptr, toolchain);
  REQUIRE_MESSAGE(kernel.has_value(), kernel.error().message);
  CHECK_CLEAN(report::kernel_text(*kernel, false));
  CHECK_CLEAN(report::kernel_json(*kernel, false));

  auto totals = maintain::run_totals(**store, 0);
  REQUIRE_MESSAGE(totals.has_value(), totals.error().message);
  CHECK_CLEAN(report::stats_text(*totals));
  CHECK_CLEAN(report::stats_json(*totals));

  report::GcReport gc;
  gc.dry_run = true;
  auto candidates = maintain::gc_candidates(**store, nullptr, toolchain);
  REQUIRE_MESSAGE(candidates.has_value(), candidates.error().message);
  gc.candidates = *candidates;
  store::GcRules rules;
  rules.older_than = 1;
  rules.now = 1'800'000'000;
  gc.plan = store::plan_gc(gc.candidates, rules);
  REQUIRE(gc.plan.remove.size() == 3);
  CHECK_CLEAN(report::gc_text(gc));
  CHECK_CLEAN(report::gc_json(gc));

  maintain::StoreCheck check;
  check.problems.push_back({k_evil, k_evil, Error{Category::corruption, "record of " + k_evil}});
  CHECK_CLEAN(report::store_check_text(check));
  CHECK_CLEAN(report::store_check_json(check));
}

TEST_CASE("reports of hostile bundles, refusals and devices: text escaped, JSON valid UTF-8") {
  FingerprintRecord record{{{"deviceName", k_evil}}};
  Entry e = hostile_entry(k_evil);

  transfer::ImportResult imported;
  imported.header = bundle::make_header(vulkan_namespace(record), {{"kcache", k_evil}}, 1, std::span(&e, 1));
  imported.target = k_evil;
  imported.refused.push_back({k_evil, Error{Category::validation_failed, "kernel " + k_evil}});
  CHECK_CLEAN(report::import_text(imported, k_evil));
  CHECK_CLEAN(report::import_json(imported, k_evil));
  CHECK_CLEAN(report::import_refusals_text(imported));

  bundle::BundleSummary summary;
  summary.header = imported.header;
  summary.error = Error{Category::corruption, k_evil};
  CHECK_CLEAN(report::bundle_text(summary, k_evil));
  CHECK_CLEAN(report::bundle_json(summary, k_evil));

  bundle::MergeResult merged;
  merged.ns = imported.header.ns;
  merged.conflicts.push_back({k_evil, k_evil, k_evil, e.key, e.key, true});
  CHECK_CLEAN(report::merge_conflicts_text(merged));
  CHECK_CLEAN(report::merge_json(merged, k_evil));

  device::DeviceInfo dev;
  dev.name = k_evil;
  dev.driver_name = k_evil;
  dev.ns = vulkan_namespace(record);
  CHECK_CLEAN(report::devices_text({dev}, 0));
  CHECK_CLEAN(report::devices_json({dev}, 0));  // ordered_json: the other dump
}

TEST_CASE("terminal_text keeps newlines and escapes everything else a terminal acts on") {
  CHECK(report::terminal_text("plain ü → ok\nsecond line\n") == "plain ü → ok\nsecond line\n");
  CHECK(report::terminal_text("a\x1b[31mb\r\n\xff") == "a\\x1b[31mb\\x0d\n\\xff");
}

}  // namespace kcache
