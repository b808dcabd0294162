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

#include "kcache/bundle/bundle.hpp"
#include "kcache/engine/secondary.hpp"
#include "kcache/remote/backend.hpp"
#include "kcache/remote/url.hpp"
#include "kcache/util/error.hpp"

#include <functional>
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

class RemoteTier final : public engine::SecondaryTier {
 public:
  explicit RemoteTier(TierOptions options);
  /// For tests: the backends given (one per options.remotes entry, same order).
  RemoteTier(TierOptions options, std::vector<std::unique_ptr<Backend>> backends);
  ~RemoteTier() override;

  std::optional<Entry> fetch(const Namespace& ns, std::string_view kernel, const Key& key,
                             const engine::EntryCheck& check) override;
  /// fetch() without a stage's own check.
  std::optional<Entry> fetch(const Namespace& ns, std::string_view kernel, const Key& key) {
    return fetch(ns, kernel, key, {});
  }
  /// Under `direct` too only with a signing key (publish_direct's rule).
  void publish(const Namespace& ns, const Entry& entry, const std::optional<Hash128>& direct = std::nullopt) override;
  /// Asks only the remotes with trusted keys (the run's --trust or the URL's
  /// trust=); each value must be signed by one of them.
  std::optional<Entry> fetch_direct(const Namespace& ns, std::string_view kernel, const Hash128& id,
                                    const Hash128& direct, const engine::EntryCheck& check) override;
  /// Writes only with a signing key (--sign): readers believe no other.
  void publish_direct(const Namespace& ns, const Entry& entry, const Hash128& direct) override;
  std::vector<engine::SecondaryStats> stats() const override;

  /// Checks a value fetched for (ns, kernel, key): the envelope, its
  /// namespace, the signature when trust is configured, the record
  /// (decode_entry, validate_entry_record), that it is the entry asked for,
  /// and its payload (transfer::check_entry_payload). The entry, marked
  /// imported from `origin`; corruption / validation_failed naming what is
  /// wrong. Pure: the one check of every remote value.
  static Result<Entry> check_value(std::span<const std::uint8_t> bytes, const Namespace& ns, std::string_view kernel,
                                   const Key& key, std::span<const bundle::PublicKey> trusted, std::string_view origin);
  /// check_value() for a direct value (fetch_direct): any key whose id half
  /// is `id`, and signed by one of `trusted`, which must not be empty
  /// (invalid_argument: an unsigned value's recorded inputs are never
  /// believed).
  static Result<Entry> check_direct_value(std::span<const std::uint8_t> bytes, const Namespace& ns,
                                          std::string_view kernel, const Hash128& id,
                                          std::span<const bundle::PublicKey> trusted, std::string_view origin);

 private:
  struct Remote;
  using Checker = std::function<Result<Entry>(std::span<const std::uint8_t>, const Remote&)>;
  /// The fetch loop of fetch() and fetch_direct(): each remote `asks` in
  /// turn, the value under `key_of(remote)` checked by `checked` then `check`;
  /// a miss resets the remote's count of consecutive failures only when
  /// `miss_resets`.
  std::optional<Entry> fetch_from(const std::function<bool(const Remote&)>& asks,
                                  const std::function<std::string(const Remote&)>& key_of, std::string_view kernel,
                                  const Checker& checked, const engine::EntryCheck& check, bool miss_resets);
  /// Writes `entry`, encoded once, to every writable remote under each of
  /// `keys_of(remote)`.
  void publish_to(const Namespace& ns, const Entry& entry,
                  const std::function<std::vector<std::string>(const Remote&)>& keys_of);
  TierOptions m_options;
  std::vector<std::unique_ptr<Remote>> m_remotes;
};

}  // namespace kcache::remote
