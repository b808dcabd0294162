#include "kcache/remote/tier.hpp"

#include "kcache/remote/value.hpp"
#include "kcache/transfer/transfer.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <mutex>

namespace kcache::remote {

/// One remote's backend and its state for this run.
struct RemoteTier::Remote {
  RemoteUrl url;
  std::unique_ptr<Backend> backend;
  std::vector<bundle::PublicKey> trusted;  ///< empty: values are not authenticated
  mutable std::mutex mutex;
  engine::SecondaryStats stats;
  unsigned consecutive_failures = 0;

  bool skipped() const {
    std::lock_guard lock(mutex);
    return !stats.skipped.empty();
  }

  /// Counts a failed request; gives the remote up after max_failures in a row.
  void failed(const Error& e) {
    std::lock_guard lock(mutex);
    ++stats.errors;
    if (stats.warnings.size() < k_max_kept_messages) stats.warnings.push_back(e.message);
    count_failure(e.message);
  }

  /// Counts a refused value (damaged, foreign, a bomb, over the size bound)
  /// as a failure too: a remote serving such values would otherwise cost
  /// every kernel of the run its fetch and check. Called with `mutex` held.
  void refused_value(std::string_view kernel, const Error& e) {
    ++stats.refused;
    if (stats.refusals.size() < k_max_kept_messages) stats.refusals.push_back(fmt::format("{}: {}", kernel, e.message));
    count_failure(e.message);
  }

  void worked() {
    std::lock_guard lock(mutex);
    consecutive_failures = 0;
  }

 private:
  void count_failure(std::string_view message) {
    if (++consecutive_failures >= url.max_failures && stats.skipped.empty())
      stats.skipped = fmt::format("{} consecutive failures, the last: {}", consecutive_failures, message);
  }
};

RemoteTier::RemoteTier(TierOptions options) : RemoteTier(std::move(options), {}) {}

RemoteTier::RemoteTier(TierOptions options, std::vector<std::unique_ptr<Backend>> backends)
    : m_options(std::move(options)) {
  for (std::size_t i = 0; i < m_options.remotes.size(); ++i) {
    auto r = std::make_unique<Remote>();
    r->url = m_options.remotes[i];
    r->backend = i < backends.size() && backends[i] ? std::move(backends[i]) : make_backend(r->url);
    r->stats.name = r->url.shown();
    r->stats.writable = !r->url.read_only && !m_options.read_only;
    // Whom this remote's values must be signed by: the run's --trust keys
    // and the URL's own trust= keys (saved with it in the store's setting
    // or KCACHE_REMOTE).
    r->trusted = m_options.trusted;
    for (const auto& k : r->url.trust) r->trusted.push_back(bundle::PublicKey{k});
    r->stats.authenticated = !r->trusted.empty();
    m_remotes.push_back(std::move(r));
  }
}

RemoteTier::~RemoteTier() = default;

namespace {

/// The one check of every remote value: the envelope, its namespace, the
/// signature when `trusted` is given, the record, that it is the entry
/// `asked` for, and its payload. The entry, marked imported from `origin`.
Result<Entry> checked_entry(std::span<const std::uint8_t> bytes, const Namespace& ns, std::string_view kernel,
                            const std::function<bool(const Key&)>& asked, std::span<const bundle::PublicKey> trusted,
                            std::string_view origin) {
  auto parts = KCACHE_TRY(decode_value(bytes));
  // The key names the namespace already; a value claiming another one was
  // put there by someone else (or another compatibility class): foreign.
  if (parts.ns != ns.name())
    return fail(Category::corruption, "remote value: holds namespace {}, not {}", util::shown_untrusted(parts.ns),
                ns.name());
  if (!trusted.empty()) KCACHE_CHECK(verify_value(parts, trusted));
  auto entry = KCACHE_TRY(decode_entry(parts.record));
  if (entry.kernel != kernel || !asked(entry.key))
    return fail(Category::corruption, "remote value: holds kernel '{}' key {}, not the '{}' asked for",
                util::shown_untrusted(entry.kernel), entry.key.ir.hex().substr(0, 16), kernel);
  KCACHE_CHECK(validate_entry_record(entry));
  // Signed by a trusted key: its build validated the module, and the
  // signature binds that verdict (spirv-val was most of a remote hit).
  auto payload = KCACHE_TRY(transfer::check_entry_payload(entry, ns, ns.record, !trusted.empty()));
  if (!payload.empty()) {
    entry.payload = std::move(payload);
    seal_payload(entry);
  }
  entry.origin_kind = OriginKind::imported;
  entry.origin_detail = fmt::format("remote {}", origin);
  return entry;
}

}  // namespace

Result<Entry> RemoteTier::check_value(std::span<const std::uint8_t> bytes, const Namespace& ns, std::string_view kernel,
                                      const Key& key, std::span<const bundle::PublicKey> trusted,
                                      std::string_view origin) {
  return checked_entry(
      bytes, ns, kernel, [&](const Key& k) { return k == key; }, trusted, origin);
}

Result<Entry> RemoteTier::check_direct_value(std::span<const std::uint8_t> bytes, const Namespace& ns,
                                             std::string_view kernel, const Hash128& id,
                                             std::span<const bundle::PublicKey> trusted, std::string_view origin) {
  if (trusted.empty())
    return fail(Category::invalid_argument, "a direct value is read only from a remote with trusted keys");
  return checked_entry(
      bytes, ns, kernel, [&](const Key& k) { return k.id == id; }, trusted, origin);
}

std::optional<Entry> RemoteTier::fetch_from(const std::function<bool(const Remote&)>& asks,
                                            const std::function<std::string(const Remote&)>& key_of,
                                            std::string_view kernel, const Checker& checked,
                                            const engine::EntryCheck& check, bool miss_resets) {
  for (auto& r : m_remotes) {
    if (r->skipped() || !asks(*r)) continue;
    auto got = r->backend->get(key_of(*r), k_max_value_bytes);
    if (!got && got.error().category != Category::corruption) {
      r->failed(got.error());
      continue;
    }
    if (got && !*got) {
      if (miss_resets) r->worked();
      std::lock_guard lock(r->mutex);
      ++r->stats.misses;
      continue;
    }
    std::size_t size = got ? (*got)->size() : 0;
    auto entry = got ? checked(**got, *r) : Result<Entry>(tl::unexpected(got.error()));
    if (entry && check)
      if (auto ok = check(*entry); !ok) entry = tl::unexpected(std::move(ok).error());
    std::lock_guard lock(r->mutex);
    r->stats.bytes_read += size;
    if (!entry) {
      r->refused_value(kernel, entry.error());
      continue;
    }
    ++r->stats.hits;
    r->consecutive_failures = 0;
    return std::move(*entry);
  }
  return std::nullopt;
}

std::optional<Entry> RemoteTier::fetch(const Namespace& ns, std::string_view kernel, const Key& key,
                                       const engine::EntryCheck& check) {
  return fetch_from([](const Remote&) { return true; },
                    [&](const Remote& r) { return value_key(r.url.prefix, ns.name(), key); }, kernel,
                    [&](std::span<const std::uint8_t> bytes, const Remote& r) {
                      return check_value(bytes, ns, kernel, key, r.trusted, r.url.shown());
                    },
                    check, true);
}

std::optional<Entry> RemoteTier::fetch_direct(const Namespace& ns, std::string_view kernel, const Hash128& id,
                                              const Hash128& direct, const engine::EntryCheck& check) {
  return fetch_from([](const Remote& r) { return !r.trusted.empty(); },
                    [&](const Remote& r) { return value_direct_key(r.url.prefix, ns.name(), direct); }, kernel,
                    [&](std::span<const std::uint8_t> bytes, const Remote& r) {
                      return check_direct_value(bytes, ns, kernel, id, r.trusted, r.url.shown());
                    },
                    // A remote with no direct values misses every one: that
                    // must not clear a run of refusals of its keyed values.
                    check, false);
}

void RemoteTier::publish_to(const Namespace& ns, const Entry& entry,
                            const std::function<std::vector<std::string>(const Remote&)>& keys_of) {
  std::optional<std::vector<std::uint8_t>> value;
  for (auto& r : m_remotes) {
    if (!r->stats.writable || r->skipped()) continue;
    if (!value) {
      auto encoded = encode_value(ns.name(), encode_entry(entry), m_options.sign ? &*m_options.sign : nullptr);
      if (!encoded) {
        r->failed(encoded.error());
        return;
      }
      value = std::move(*encoded);
    }
    for (const auto& key : keys_of(*r)) {
      auto put = r->backend->put(key, *value);
      if (!put) {
        r->failed(put.error());
        break;
      }
      r->worked();
      std::lock_guard lock(r->mutex);
      ++r->stats.writes;
      r->stats.bytes_written += value->size();
    }
  }
}

void RemoteTier::publish(const Namespace& ns, const Entry& entry, const std::optional<Hash128>& direct) {
  const bool with_direct = direct && m_options.sign;  // an unsigned direct value would never be read
  publish_to(ns, entry, [&](const Remote& r) {
    std::vector<std::string> keys{value_key(r.url.prefix, ns.name(), entry.key)};
    if (with_direct) keys.push_back(value_direct_key(r.url.prefix, ns.name(), *direct));
    return keys;
  });
}

void RemoteTier::publish_direct(const Namespace& ns, const Entry& entry, const Hash128& direct) {
  if (!m_options.sign) return;
  publish_to(ns, entry, [&](const Remote& r) {
    return std::vector<std::string>{value_direct_key(r.url.prefix, ns.name(), direct)};
  });
}

std::vector<engine::SecondaryStats> RemoteTier::stats() const {
  std::vector<engine::SecondaryStats> out;
  for (const auto& r : m_remotes) {
    std::lock_guard lock(r->mutex);
    out.push_back(r->stats);
  }
  return out;
}

}  // namespace kcache::remote
