// A large bundle (about 100 MB of SPIR-V-like records) written and read back
// through a file while entries are generated on the fly: peak RSS must stay
// far below the bundle size (FORMAT.md "Memory"). Prints size, ratio, times.
#include "test_bundle_support.hpp"

#include <chrono>

using namespace kcache;
using namespace kcache::test;

TEST_CASE("a 100 MB bundle streams with bounded memory") {
  const std::size_t n = 2500, words = 10'000;  // ~40 KB modules, 16 variants per family
  TempDir dir;
  auto path = dir.path() / "big.kcb";
  using clock = std::chrono::steady_clock;
  auto secs = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };

  // Pass 1: the index (small), as an exporter would build it from a store scan.
  bundle::BundleHeader header;
  header.ns = vulkan_ns();
  header.tool_versions = tool_versions();
  header.created = 1'700'000'000;
  for (std::size_t i = 0; i < n; ++i) header.index.push_back(bundle::index_entry(make_entry(i, words)));
  const std::uint64_t records = header.total_record_bytes(), payloads = header.total_payload_bytes();

  const auto base_write = begin_peak_measure();
  auto t0 = clock::now();
  // Pass 2: payloads one at a time.
  auto ok =
      bundle::write_bundle_file(path, header, [&](std::size_t i) -> Result<Entry> { return make_entry(i, words); });
  REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
  auto t1 = clock::now();
  const double write_growth = static_cast<double>(peak_growth_kib(base_write)) / 1024;

  const auto base_read = begin_peak_measure();
  auto t2 = clock::now();
  std::size_t matched = 0;
  {
    auto reader = bundle::BundleReader::open_file(path);
    REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
    for (;;) {
      auto e = reader->next();
      REQUIRE_MESSAGE(e.has_value(), e.error().message);
      if (!e->has_value()) break;
      // The reader already checked size and BLAKE2b digest against the index;
      // compare content too, regenerating (cheap) rather than holding it.
      matched += (*e)->payload == make_entry(matched, words).payload;
    }
    auto fin = reader->finish();
    REQUIRE_MESSAGE(fin.has_value(), fin.error().message);
  }
  auto t3 = clock::now();
  const double read_growth = static_cast<double>(peak_growth_kib(base_read)) / 1024;
  CHECK(matched == n);

  const auto file_size = std::filesystem::file_size(path);
  MESSAGE(n, " entries, ", records / 1e6, " MB records (", payloads / 1e6, " MB payload) -> ", file_size / 1e6,
          " MB bundle; ratio ", static_cast<double>(records) / static_cast<double>(file_size), " (payload ratio ",
          static_cast<double>(payloads) / static_cast<double>(file_size), ")");
  MESSAGE("write ", secs(t0, t1), " s, peak RSS growth ", write_growth, " MiB; read+verify ", secs(t2, t3),
          " s, peak RSS growth ", read_growth, " MiB", std::string(base_read == 0 ? " (VmHWM reset unavailable)" : ""));
  CHECK(records > 100'000'000);
  // Bounds from FORMAT.md "Memory": level-9 compression context with an
  // 8 MiB window (~45 MiB), decompression window (8 MiB) plus a record.
  if (base_write != 0 && base_read != 0) {
    CHECK(write_growth < 96);
    CHECK(read_growth < 48);
  }
}
