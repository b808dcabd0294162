// kcache_test_tamper: rewrites one stored pipeline-cache blob as an attacker
// (or another machine's driver) would, for end-to-end tests of the checks
// that guard drivers (tests/cli/dev_foreign_blob.sh). Every digest is made
// consistent again afterwards (the wrapper's blob_digest, the entry's
// payload_digest, the record digest), so only the fingerprint and header
// checks can catch the change.
//
//   kcache_test_tamper STORE NAMESPACE KERNEL FIELD
//
// FIELD: vendorID, deviceID, pipelineCacheUUID, headerVersion (Vulkan
// header fields of the raw blob) or driverVersion (kcache's wrapper field).
// Exit 0 when rewritten, 1 with a message otherwise.
#include "kcache/device/device.hpp"
#include "kcache/store/store.hpp"

#include <fmt/format.h>

#include <string_view>

using namespace kcache;

namespace {

int run(int argc, char** argv) {
  if (argc != 5) {
    fmt::print(stderr, "usage: kcache_test_tamper STORE NAMESPACE KERNEL FIELD\n");
    return 1;
  }
  const std::string_view ns_name = argv[2], kernel = argv[3], field = argv[4];
  auto store = store::open_lmdb_store(argv[1]);
  if (!store) return fmt::print(stderr, "{}\n", store.error().message), 1;
  std::optional<Entry> entry;
  std::optional<Namespace> ns;
  auto read = (*store)->read([&](store::Reader& r) -> Result<void> {
    auto all = KCACHE_TRY(r.namespaces());
    for (auto& info : all)
      if (info.ns.name() == ns_name) ns = info.ns;
    entry = KCACHE_TRY(r.get(ns_name, kernel));
    return {};
  });
  if (!read) return fmt::print(stderr, "{}\n", read.error().message), 1;
  if (!ns || !entry) return fmt::print(stderr, "no entry {} in {}\n", kernel, ns_name), 1;

  auto w = device::parse_blob_wrapper(entry->payload);
  if (!w) return fmt::print(stderr, "{}\n", w.error().message), 1;
  std::vector<std::uint8_t> raw(w->blob.begin(), w->blob.end());
  // The wrapper is rebuilt with the hash of the namespace's record (so that
  // only the field named differs) and the blob's driver version.
  std::uint32_t driver_version = w->driver_version;
  // Header offsets (VkPipelineCacheHeaderVersionOne): headerSize 0,
  // headerVersion 4, vendorID 8, deviceID 12, pipelineCacheUUID 16.
  if (field == "headerVersion") raw.at(4) ^= 0x02;
  else if (field == "vendorID") raw.at(8) ^= 0x01;
  else if (field == "deviceID") raw.at(12) ^= 0x01;
  else if (field == "pipelineCacheUUID") raw.at(16) ^= 0x01;
  else if (field == "driverVersion") driver_version ^= 1;
  else return fmt::print(stderr, "unknown field {}\n", field), 1;
  entry->payload = device::wrap_blob_for(device::fingerprint_hash(ns->record), driver_version, w->pointer_size, raw);
  seal_payload(*entry);
  auto put = (*store)->put(*ns, std::span(&*entry, 1));
  if (!put) return fmt::print(stderr, "{}\n", put.error().message), 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
