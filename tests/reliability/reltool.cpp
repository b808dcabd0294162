// kcache_reltool: the reliability tier's probe into stores, used by the
// tests/reliability/*.sh scripts. It goes through the store library exactly
// as kcache does; it only adds what a test needs to observe or provoke.
//
//   state STORE            print "txn=.. namespaces=.. entries=.. digest=.."
//                          (reliability_support.hpp); decodes every record,
//                          so exit 6 also means a corrupt entry. Read-only.
//   names STORE            print "namespace<TAB>kernel" of every entry
//   hold-readers STORE N   hold N read snapshots (N reader slots) on N threads,
//                          print "holding N" and sleep until killed
//   write-loop STORE LOG ID [BATCH]
//                          commit batches of BATCH entries forever; after
//                          each commit append "ID-i" to LOG. Killed by C2.
//   check-batches STORE LOG [BATCH]
//                          every batch named in LOG is in the store whole
//                          (committed ⇒ never lost), and every batch in the
//                          store is whole (all or nothing); prints counts
//   fill STORE BYTES       put 64 KiB entries until the store refuses one;
//                          prints the refusal's category and message (D1)
//   bundle-head V OUT BYTES
//                          a format-V bundle whose header body (after
//                          decompression) is about BYTES of distinct minimal
//                          index entries, and no frames (B4 bounds: the
//                          whole index is parsed, then the trailer is missing)
//   bundle-records V OUT GOLDEN N BYTES
//                          the first N entries of bundle GOLDEN with BYTES
//                          zero bytes as payload (every digest right; spirv-val
//                          refuses each at once)
//   bundle-module V OUT GOLDEN BYTES
//                          GOLDEN's first entry, its module padded with
//                          OpNoLine to BYTES: a valid module of that size
// zstd shrinks repeated bytes enormously, so each of these bundles is small
// (KiB) whatever it declares: the bounds of FORMAT.md "Memory" must hold on
// what is declared, not on the file's size.
//
// Exit codes: 0 ok, 1 check failed, 2 usage, else kcache's code for the
// error category (4 store, 6 corruption).
#include "reliability_support.hpp"

#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/core/key_binding.hpp"
#include "kcache/store/store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace kcache;
namespace fs = std::filesystem;

namespace {

int code_for(const Error& e) {
  std::fprintf(stderr, "kcache_reltool: %s: %s\n", std::string(category_name(e.category)).c_str(), e.message.c_str());
  switch (e.category) {
    case Category::corruption:
    case Category::version_mismatch: return 6;
    case Category::not_found: return 3;
    default: return 4;
  }
}

Result<std::unique_ptr<store::Store>> open(const fs::path& dir, bool read_only) {
  store::OpenOptions o;
  o.read_only = read_only;
  return store::open_lmdb_store(dir, o);
}

/// Entries of batch `name`: deterministic, valid SPIR-V payloads (so `kcache
/// verify` checks them like built ones), compared byte for byte by
/// check-batches, so a torn record could not pass as a good one.
std::vector<Entry> batch_entries(const std::string& name, int size) {
  std::vector<Entry> out;
  for (int k = 0; k < size; ++k) {
    Entry e;
    e.kernel = name + "#" + std::to_string(k);
    e.id_fields = {{"name", e.kernel}};
    e.ir_fields = {{"expanded_source", util::hash_string("ir " + e.kernel).hex()}};
    e.key = bound_key(e);  // bound to its fields: verify checks it
    e.payload = reliability::spirv_module(512 + 64 * static_cast<std::size_t>(k), e.kernel);
    seal_payload(e);
    e.created = 1;
    e.origin_detail = "kcache_reltool write-loop";
    out.push_back(std::move(e));
  }
  return out;
}

const Namespace& loop_ns() {
  static const Namespace ns = spirv_namespace("vulkan1.2");
  return ns;
}

int cmd_state(const fs::path& dir) {
  auto s = open(dir, true);
  if (!s) return code_for(s.error());
  auto st = reliability::store_state(**s);
  if (!st) return code_for(st.error());
  std::printf("%s\n", st->line().c_str());
  return 0;
}

int cmd_names(const fs::path& dir) {
  auto s = open(dir, true);
  if (!s) return code_for(s.error());
  auto r = (*s)->read([](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespaces()))
      KCACHE_CHECK(reader.scan(info.ns.name(), [&](Entry&& e) {
        std::printf("%s\t%s\n", info.ns.name().c_str(), e.kernel.c_str());
        return true;
      }));
    if (!reader.damaged().empty()) return tl::unexpected(reader.damaged().front().error);  // skipped by scan
    return {};
  });
  return r ? 0 : code_for(r.error());
}

int cmd_hold_readers(const fs::path& dir, int n) {
  auto s = open(dir, false);
  if (!s) return code_for(s.error());
  std::mutex m;
  std::condition_variable cv;
  int holding = 0, failed = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&] {
      auto r = (*s)->read([&](store::Reader&) -> Result<void> {
        std::unique_lock lock(m);
        ++holding;
        cv.notify_all();
        cv.wait(lock, [] { return false; });  // hold the snapshot until killed
        return {};
      });
      std::lock_guard lock(m);
      if (!r) {
        ++failed;
        std::fprintf(stderr, "kcache_reltool: %s\n", r.error().message.c_str());
      }
      cv.notify_all();
    });
  std::unique_lock lock(m);
  cv.wait(lock, [&] { return holding + failed == n; });
  std::printf("holding %d\n", holding);
  std::fflush(stdout);
  if (failed) return 4;
  cv.wait(lock, [] { return false; });
  return 0;
}

int cmd_write_loop(const fs::path& dir, const std::string& log, const std::string& id, int batch) {
  auto s = open(dir, false);
  if (!s) return code_for(s.error());
  int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return 4;
  for (int i = 0;; ++i) {
    std::string name = id + "-" + std::to_string(i);
    auto r = (*s)->put(loop_ns(), batch_entries(name, batch));
    if (!r) return code_for(r.error());
    std::string line = name + "\n";
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 4;
  }
}

int cmd_check_batches(const fs::path& dir, const std::string& log, int batch) {
  auto s = open(dir, true);
  if (!s) return code_for(s.error());
  std::map<std::string, std::vector<Entry>> stored;  // batch name -> its entries in the store
  auto r = (*s)->read([&](store::Reader& reader) -> Result<void> {
    return reader.scan(loop_ns().name(), [&](Entry&& e) {
      auto slash = e.kernel.rfind('#');
      stored[e.kernel.substr(0, slash)].push_back(std::move(e));
      return true;
    });
  });
  if (!r) return code_for(r.error());
  int bad = 0;
  std::size_t whole = 0;
  for (const auto& [name, entries] : stored) {
    auto want = batch_entries(name, batch);
    if (entries.size() != want.size()) {
      std::fprintf(stderr, "batch %s is half-visible: %zu of %d entries\n", name.c_str(), entries.size(), batch);
      ++bad;
      continue;
    }
    for (const auto& e : entries) {
      auto k = std::stoi(e.kernel.substr(e.kernel.rfind('#') + 1));
      if (e.payload != want[static_cast<std::size_t>(k)].payload) {
        std::fprintf(stderr, "entry %s has the wrong payload\n", e.kernel.c_str());
        ++bad;
      }
    }
    ++whole;
  }
  std::ifstream in(log);
  std::size_t logged = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    ++logged;
    if (!stored.count(line)) {
      std::fprintf(stderr, "committed batch %s is lost\n", line.c_str());
      ++bad;
    }
  }
  std::printf("batches_stored=%zu batches_logged=%zu problems=%d\n", whole, logged, bad);
  return bad ? 1 : 0;
}

int cmd_fill(const fs::path& dir, std::uint64_t map_size) {
  store::OpenOptions o;
  o.map_size = map_size;
  auto s = store::open_lmdb_store(dir, o);
  if (!s) return code_for(s.error());
  for (int i = 0;; ++i) {
    auto entries = batch_entries("fill-" + std::to_string(i), 1);
    entries[0].payload = reliability::spirv_module(64 << 10, entries[0].kernel);
    seal_payload(entries[0]);
    auto r = (*s)->put(loop_ns(), entries);
    if (!r) {
      std::printf("refused after %d entries: %s: %s\n", i, std::string(category_name(r.error().category)).c_str(),
                  r.error().message.c_str());
      return r.error().category == Category::store_full ? 0 : code_for(r.error());
    }
  }
}

int write_file(const fs::path& out, std::span<const std::uint8_t> bytes) {
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return f ? 0 : 4;
}

int cmd_bundle_head(int version, const fs::path& out, std::uint64_t body_bytes) {
  bundle::BundleHeader h;
  h.format_version = static_cast<std::uint16_t>(version);
  h.ns = spirv_namespace("vulkan1.2");
  h.compression = {1, 21, false, 64u << 20};
  const std::size_t fixed = bundle::internal::encode_header_body(h).size() + 4;
  const std::size_t per = 4 + 8 + 32 + 1 + 8 + 8 + 32;  // an index entry with an 8-byte name
  const std::size_t n = body_bytes > fixed ? (body_bytes - fixed) / per : 0;
  h.index.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    h.index[i].kernel = fmt::format("k{:07}", i);
    h.index[i].payload_size = 4;
    h.index[i].record_size = bundle::internal::k_min_record_size + 8;
  }
  h.block_entry_counts = {static_cast<std::uint32_t>(n)};
  auto body = bundle::internal::encode_header_body(h);
  if (version >= 2) body = bundle::internal::compress_frame(body, 1, 21, /*declare_size=*/true);
  util::ByteWriter w;
  w.raw(bundle::internal::k_magic);
  w.u16(static_cast<std::uint16_t>(version));
  w.u16(0);
  w.u32(static_cast<std::uint32_t>(body.size()));
  w.raw(body);
  w.raw(bundle::digest_bytes(w.bytes()).bytes);
  auto bytes = w.take();
  bundle::internal::append_trailer(bytes);
  std::printf("%zu entries, %zu-byte bundle\n", n, bytes.size());
  return write_file(out, bytes);
}

Result<std::vector<Entry>> golden_entries(const fs::path& golden, Namespace& ns) {
  auto reader = KCACHE_TRY(bundle::BundleReader::open_file(golden));
  ns = reader.header().ns;
  std::vector<Entry> out;
  while (auto e = KCACHE_TRY(reader.next())) out.push_back(std::move(*e));
  return out;
}

int write_entries(int version, const fs::path& out, const Namespace& ns, const std::vector<Entry>& entries) {
  auto header = bundle::make_header(ns, {}, 1'700'000'000, entries);
  bundle::WriteOptions o;
  o.format_version = version;
  auto ok = bundle::write_bundle_file(out, header, bundle::entries_from(entries), o);
  if (!ok) return code_for(ok.error());
  std::printf("%zu entries, %ju-byte bundle\n", entries.size(), static_cast<std::uintmax_t>(fs::file_size(out)));
  return 0;
}

int cmd_bundle_records(int version, const fs::path& out, const fs::path& golden, std::size_t n, std::size_t bytes) {
  Namespace ns;
  auto entries = golden_entries(golden, ns);
  if (!entries) return code_for(entries.error());
  if (entries->size() < n) return 2;
  entries->resize(n);
  for (auto& e : *entries) {
    e.payload.assign(bytes, 0);
    seal_payload(e);
  }
  return write_entries(version, out, ns, *entries);
}

int cmd_bundle_module(int version, const fs::path& out, const fs::path& golden, std::size_t bytes) {
  Namespace ns;
  auto entries = golden_entries(golden, ns);
  if (!entries) return code_for(entries.error());
  entries->resize(1);
  Entry& e = entries->front();
  // OpNoLine (one word) may stand anywhere in a block: inserted after the
  // first OpLabel, any number of them leaves the module valid.
  std::vector<std::uint32_t> words(e.payload.size() / 4);
  std::memcpy(words.data(), e.payload.data(), words.size() * 4);
  std::size_t at = 5;
  while (at < words.size() && (words[at] & 0xffff) != 248) at += words[at] >> 16;
  if (at >= words.size()) return 1;
  at += words[at] >> 16;
  const std::size_t pad = bytes > e.payload.size() ? (bytes - e.payload.size()) / 4 : 0;
  words.insert(words.begin() + static_cast<std::ptrdiff_t>(at), pad, (1u << 16) | 317u);
  e.payload.resize(words.size() * 4);
  std::memcpy(e.payload.data(), words.data(), e.payload.size());
  seal_payload(e);
  return write_entries(version, out, ns, *entries);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  auto usage = [] {
    std::fprintf(
        stderr,
        "usage: kcache_reltool state|names STORE | hold-readers STORE N | write-loop STORE LOG ID [BATCH] |\n"
        "       check-batches STORE LOG [BATCH] | fill STORE MAP_BYTES |\n"
        "       bundle-head V OUT BYTES | bundle-records V OUT GOLDEN N BYTES | bundle-module V OUT GOLDEN BYTES\n");
    return 2;
  };
  if (a.size() < 2) return usage();
  const auto& cmd = a[0];
  if (cmd == "state" && a.size() == 2) return cmd_state(a[1]);
  if (cmd == "names" && a.size() == 2) return cmd_names(a[1]);
  if (cmd == "hold-readers" && a.size() == 3) return cmd_hold_readers(a[1], std::stoi(a[2]));
  if (cmd == "write-loop" && (a.size() == 4 || a.size() == 5))
    return cmd_write_loop(a[1], a[2], a[3], a.size() == 5 ? std::stoi(a[4]) : 8);
  if (cmd == "check-batches" && (a.size() == 3 || a.size() == 4))
    return cmd_check_batches(a[1], a[2], a.size() == 4 ? std::stoi(a[3]) : 8);
  if (cmd == "fill" && a.size() == 3) return cmd_fill(a[1], std::stoull(a[2]));
  if (cmd == "bundle-head" && a.size() == 4) return cmd_bundle_head(std::stoi(a[1]), a[2], std::stoull(a[3]));
  if (cmd == "bundle-records" && a.size() == 6)
    return cmd_bundle_records(std::stoi(a[1]), a[2], a[3], std::stoull(a[4]), std::stoull(a[5]));
  if (cmd == "bundle-module" && a.size() == 5) return cmd_bundle_module(std::stoi(a[1]), a[2], a[3], std::stoull(a[4]));
  return usage();
}
