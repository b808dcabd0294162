// The remotes of one run as build's secondary tier (build/secondary.hpp,
// docs/design.md "Remote caches"): asked in order on a local miss, every
// value checked exactly as an import checks an entry, compiled kernels
// written back to the writable ones. A remote never fails a build: each
// failure is counted and answered as a miss, and after max-failures
// consecutive failures (the URL's option) the remote is skipped for the rest
// of the run. A refused value (damaged, foreign, a decompression bomb, over
// the size bound) is such a failure too; a hit or a miss resets the count.
//
// Thread-safety: fetch/publish/stats may be called from many threads.
#pragma once

#include "kcache/build/secondary.hpp"
#include "kcache/bundle/bundle.hpp"
#include "kcache/remote/backend.hpp"
#include "kcache/remote/url.hpp"
#include "kcache/util/error.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace kcache::remote {

struct TierOptions {
  std::vector<RemoteUrl> remotes;  ///< asked in this order
  bool read_only = false;          ///< --remote-read-only: write back to none
  /// When non-empty, only values signed by one of these keys are accepted,
  /// from every remote; a remote's own trust= keys (RemoteUrl::trust) add to
  /// these for that remote.
  std::vector<bundle::PublicKey> trusted;
  /// When set, values written back are signed with it.
  std::optional<bundle::KeyPair> sign;
};

/// The most refusal and warning lines kept per remote (counts stay exact).
inline constexpr std::size_t k_max_kept_messages = 20;

class RemoteTier final : public build::SecondaryTier {
 public:
  explicit RemoteTier(TierOptions options);
  /// For tests: the backends given (one per options.remotes entry, same order).
  RemoteTier(TierOptions options, std::vector<std::unique_ptr<Backend>> backends);
  ~RemoteTier() override;

  std::optional<Entry> fetch(const Namespace& ns, std::string_view kernel, const Key& key,
                             const build::EntryCheck& check) override;
  /// fetch() without a stage's own check.
  std::optional<Entry> fetch(const Namespace& ns, std::string_view kernel, const Key& key) {
    return fetch(ns, kernel, key, {});
  }
  void publish(const Namespace& ns, const Entry& entry) override;
  std::vector<build::SecondaryStats> stats() const override;

  /// Checks a value fetched for (ns, kernel, key): the envelope, its
  /// namespace, the signature when trust is configured, the record
  /// (decode_entry, validate_entry_record), that it is the entry asked for,
  /// and its payload (transfer::check_entry_payload). The entry, marked
  /// imported from `origin`; corruption / validation_failed naming what is
  /// wrong. Pure: the one check of every remote value.
  static Result<Entry> check_value(std::span<const std::uint8_t> bytes, const Namespace& ns, std::string_view kernel,
                                   const Key& key, std::span<const bundle::PublicKey> trusted, std::string_view origin);

 private:
  struct Remote;
  TierOptions m_options;
  std::vector<std::unique_ptr<Remote>> m_remotes;
};

}  // namespace kcache::remote
