#include "kcache/maintain/verify_cuda.hpp"

#include "kcache/core/cuda.hpp"
#include "kcache/util/worker_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

namespace kcache::maintain {
namespace {

struct Work {
  std::size_t row = 0;
  std::vector<std::uint8_t> payload;
};

}  // namespace

std::string_view cuda_load_status_name(CudaLoadStatus s) {
  switch (s) {
    case CudaLoadStatus::loaded: return "loaded";
    case CudaLoadStatus::refused: return "refused";
    case CudaLoadStatus::failed: return "failed";
  }
  return "?";
}

std::size_t CudaVerify::count(CudaLoadStatus s) const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [&](const auto& r) { return r.status == s; }));
}

bool has_problems(const CudaVerify& v) {
  const bool none_runs = std::none_of(v.namespaces.begin(), v.namespaces.end(), [](const auto& n) { return n.runs; });
  return none_runs || v.count(CudaLoadStatus::refused) > 0 || v.count(CudaLoadStatus::failed) > 0;
}

Result<CudaVerify> verify_cuda_device(store::Store& store, const cuda_device::DeviceInfo& device,
                                      const CudaLoader& load, const CudaVerifyOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  CudaVerify out;
  out.device = device;
  std::vector<Work> work;
  // One read snapshot: every record checked here; payloads kept for loading.
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& rec : KCACHE_TRY(reader.namespace_records())) {
      if (rec.ns.backend != k_cuda_backend) continue;
      CudaVerifyNamespace n;
      n.ns = rec.ns.name();
      if (auto runs = cuda_device::check_runs(rec.ns.record, device); runs) n.runs = true;
      else n.why_not = runs.error().message;
      KCACHE_CHECK(reader.scan(n.ns, [&](Entry&& e) {
        ++n.entries;
        if (!n.runs) return true;
        CudaVerifyRow row;
        row.ns = n.ns;
        row.kernel = e.kernel;
        row.kind = e.payload_kind;
        row.symbol = cuda_function_symbol(e);
        if (auto ok = check_cuda_payload(e.payload_kind, rec.ns.fingerprint, e.payload); !ok) {
          row.status = CudaLoadStatus::refused;
          row.message = ok.error().message;
          row.category = ok.error().category;
        } else {
          work.push_back({out.rows.size(), std::move(e.payload)});
        }
        out.rows.push_back(std::move(row));
        return true;
      }));
      // Entries scan() could not decode are refused rows too: never loaded.
      for (const auto& d : reader.damaged())
        if (d.ns == n.ns) {
          ++n.entries;
          if (n.runs)
            out.rows.push_back({n.ns,
                                d.kernel,
                                PayloadKind::cubin,
                                {},
                                CudaLoadStatus::refused,
                                -1,
                                -1,
                                d.error.message,
                                d.error.category});
        }
      out.namespaces.push_back(std::move(n));
    }
    return {};
  }));
  if (out.namespaces.empty())
    return fail(Category::not_found,
                "the store holds no cuda namespace: build CUDA kernels (manifest language = \"cuda\") or import a "
                "cuda bundle first");

  // Load on `jobs` threads (the one -j rule); each row is written by one
  // thread only.
  util::parallel_for(work.size(), util::worker_threads(options.jobs), [&](std::size_t i) {
    CudaVerifyRow& row = out.rows[work[i].row];
    const std::string functions[] = {row.symbol};
    auto loaded = load(work[i].payload, row.kind, functions);
    if (loaded) {
      row.status = CudaLoadStatus::loaded;
      row.load_ms = loaded->load_ms;
      row.resolve_ms = loaded->resolve_ms;
    } else {
      row.status = CudaLoadStatus::failed;
      row.message = loaded.error().message;
      row.category = loaded.error().category;
    }
  });

  // Cubin against PTX for the same kernel: the highest-arch loaded row of each kind.
  std::map<std::string, std::pair<const CudaVerifyRow*, const CudaVerifyRow*>> by_kernel;  // cubin, ptx
  auto arch_of = [](const CudaVerifyRow& r) { return parse_cuda_arch(r.ns.substr(r.ns.find('/') + 1)); };
  for (const auto& r : out.rows) {
    if (r.status != CudaLoadStatus::loaded) continue;
    auto& [cubin, ptx] = by_kernel[r.kernel];
    auto& slot = r.kind == PayloadKind::ptx ? ptx : cubin;
    auto a = arch_of(r);
    if (!slot || (a && arch_of(*slot) &&
                  std::pair(a->major, a->minor) > std::pair(arch_of(*slot)->major, arch_of(*slot)->minor)))
      slot = &r;
  }
  for (const auto& [kernel, pair] : by_kernel) {
    if (!pair.first || !pair.second) continue;
    ++out.pairs;
    out.pair_cubin_ms += pair.first->load_ms;
    out.pair_ptx_ms += pair.second->load_ms;
  }
  out.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace kcache::maintain
