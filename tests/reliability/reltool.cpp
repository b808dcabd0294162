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
//
// Exit codes: 0 ok, 1 check failed, 2 usage, else kcache's code for the
// error category (4 store, 6 corruption).
#include "reliability_support.hpp"

#include "kcache/core/key_binding.hpp"
#include "kcache/store/store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
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

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  auto usage = [] {
    std::fprintf(stderr,
                 "usage: kcache_reltool state|names STORE | hold-readers STORE N | write-loop STORE LOG ID [BATCH] |\n"
                 "       check-batches STORE LOG [BATCH] | fill STORE MAP_BYTES\n");
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
  return usage();
}
