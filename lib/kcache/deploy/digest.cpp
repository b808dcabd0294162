// FORMAT.md "Digest": a tree of SHA-256 leaves, hashed on several threads.
#include "kcache/deploy/deploy_file.hpp"

#include "kcache/deploy/format_internal.hpp"

#include "kcache/util/worker_pool.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <string_view>

namespace kcache::deploy {

using namespace detail;

namespace {
// Below this a second thread costs more to start than it saves.
constexpr std::size_t k_parallel_from = 4u << 20;
}  // namespace

std::array<std::uint8_t, 32> file_digest(std::span<const std::uint8_t> file, std::uint32_t leaf_size,
                                         unsigned threads) {
  const std::span<const std::uint8_t> body = file.subspan(std::min(file.size(), k_head_size));
  const std::size_t leaves = (body.size() + leaf_size - 1) / leaf_size;
  std::vector<std::array<std::uint8_t, 32>> digests(leaves);
  auto leaf = [&](std::size_t i) {
    const std::size_t begin = i * std::size_t{leaf_size};
    const std::size_t n = std::min<std::size_t>(leaf_size, body.size() - begin);
    SHA256(body.data() + begin, n, digests[i].data());
  };
  util::parallel_for(leaves, body.size() < k_parallel_from ? 1 : util::worker_threads(threads), leaf);
  // The root over one buffer: SHA256() is OpenSSL's one-shot call that is
  // not deprecated, and the leaf list is small (32 bytes a MiB).
  std::vector<std::uint8_t> root(k_digest_domain.begin(), k_digest_domain.end());
  root.insert(root.end(), file.begin(),
              file.begin() + static_cast<std::ptrdiff_t>(std::min(file.size(), k_digested_head)));
  for (const auto& d : digests) root.insert(root.end(), d.begin(), d.end());
  std::array<std::uint8_t, 32> out{};
  SHA256(root.data(), root.size(), out.data());
  return out;
}

}  // namespace kcache::deploy
