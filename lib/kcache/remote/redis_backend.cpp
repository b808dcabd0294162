// Redis through hiredis (Debian's libhiredis, 0.14): blocking connections
// with socket timeouts, pooled so that compile threads do not wait on each
// other. A value is one string key; GETRANGE bounds what is read.
#include "kcache/remote/backend_internal.hpp"

#include <hiredis/hiredis.h>

#include <fmt/format.h>

#include <sys/time.h>
#include <mutex>

namespace kcache::remote::internal {
namespace {

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

class RedisBackend final : public Backend {
 public:
  explicit RedisBackend(RemoteUrl url) : m_url(std::move(url)) {}

  Result<std::optional<std::vector<std::uint8_t>>> get(const std::string& key, std::size_t max_bytes) override {
    // GETRANGE KEY 0 max: at most max+1 bytes come back, so a value over the
    // bound is recognised without reading it. A missing key reads as "".
    auto reply = KCACHE_TRY(command([&](redisContext* c) {
      return redisCommand(c, "GETRANGE %b 0 %llu", key.data(), key.size(), static_cast<unsigned long long>(max_bytes));
    }));
    if (reply->type != REDIS_REPLY_STRING) return unexpected_reply(*reply, "GETRANGE");
    if (reply->len == 0) return std::optional<std::vector<std::uint8_t>>{};
    if (static_cast<std::size_t>(reply->len) > max_bytes)
      return fail(Category::corruption, "remote {}: the value of {} is over {} bytes", m_url.shown(), key, max_bytes);
    auto* p = reinterpret_cast<const std::uint8_t*>(reply->str);
    return std::optional(std::vector<std::uint8_t>(p, p + reply->len));
  }

  Result<void> put(const std::string& key, std::span<const std::uint8_t> value) override {
    auto reply = KCACHE_TRY(command([&](redisContext* c) {
      return redisCommand(c, "SET %b %b", key.data(), key.size(), value.data(), value.size());
    }));
    if (reply->type == REDIS_REPLY_STATUS) return {};
    return unexpected_reply(*reply, "SET");
  }

  Result<bool> exists(const std::string& key) override {
    auto reply =
        KCACHE_TRY(command([&](redisContext* c) { return redisCommand(c, "EXISTS %b", key.data(), key.size()); }));
    if (reply->type != REDIS_REPLY_INTEGER) return unexpected_reply(*reply, "EXISTS");
    return reply->integer > 0;
  }

  Result<void> remove(const std::string& key) override {
    auto reply =
        KCACHE_TRY(command([&](redisContext* c) { return redisCommand(c, "DEL %b", key.data(), key.size()); }));
    if (reply->type != REDIS_REPLY_INTEGER) return unexpected_reply(*reply, "DEL");
    return {};
  }

  Result<std::optional<std::map<std::string, std::uint64_t>>> count_values(const std::string& root) override {
    // SCAN in pages, bounded: a server with millions of keys is counted up
    // to k_max_scan keys (the report says "at least").
    constexpr std::uint64_t k_max_scan = 10'000'000;
    std::map<std::string, std::uint64_t> counts;
    std::string cursor = "0";
    std::string pattern = root + "*";
    std::uint64_t seen = 0;
    do {
      auto reply = KCACHE_TRY(command([&](redisContext* c) {
        return redisCommand(c, "SCAN %s MATCH %b COUNT 1000", cursor.c_str(), pattern.data(), pattern.size());
      }));
      if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 || reply->element[0]->type != REDIS_REPLY_STRING ||
          reply->element[1]->type != REDIS_REPLY_ARRAY)
        return unexpected_reply(*reply, "SCAN");
      cursor.assign(reply->element[0]->str, reply->element[0]->len);
      if (cursor.size() > 32) return unexpected_reply(*reply, "SCAN");
      auto* keys = reply->element[1];
      for (std::size_t i = 0; i < keys->elements; ++i) {
        if (keys->element[i]->type != REDIS_REPLY_STRING) continue;
        std::string_view k(keys->element[i]->str, keys->element[i]->len);
        ++counts[namespace_of(root, k)];
        ++seen;
      }
    } while (cursor != "0" && seen < k_max_scan);
    return std::optional(std::move(counts));
  }

 private:
  /// Runs one command on a pooled connection (connecting when none is
  /// free); a connection that failed is dropped, not returned.
  template <typename F>
  Result<Reply> command(F&& issue) {
    Context c = KCACHE_TRY(acquire());
    Reply reply(static_cast<redisReply*>(issue(c.get())));
    if (!reply) return fail(Category::io_error, "remote {}: {}", m_url.shown(), error_text(c.get()));
    if (reply->type == REDIS_REPLY_ERROR) {
      std::string msg(reply->str, reply->len);
      // OOM: maxmemory reached with noeviction; READONLY: a replica.
      Category cat = msg.starts_with("OOM")        ? Category::store_full
                     : msg.starts_with("READONLY") ? Category::read_only
                                                   : Category::io_error;
      release(std::move(c));
      return fail(cat, "remote {}: the server answered: {}", m_url.shown(), util_shown(msg));
    }
    release(std::move(c));
    return reply;
  }

  static std::string util_shown(std::string_view s) { return shown_text(s); }

  tl::unexpected<Error> unexpected_reply(const redisReply& r, std::string_view what) {
    return fail(Category::io_error, "remote {}: unexpected reply type {} to {}", m_url.shown(), r.type, what);
  }

  static std::string error_text(redisContext* c) {
    if (c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) return "timed out";
    return c->errstr[0] ? shown_text(c->errstr) : "connection lost";
  }

  Result<Context> acquire() {
    {
      std::lock_guard lock(m_mutex);
      if (!m_free.empty()) {
        Context c = std::move(m_free.back());
        m_free.pop_back();
        return c;
      }
    }
    timeval tv{static_cast<time_t>(m_url.timeout_ms / 1000), static_cast<suseconds_t>(m_url.timeout_ms % 1000 * 1000)};
    std::string host = m_url.host;
    if (host.starts_with('[')) host = host.substr(1, host.size() - 2);
    Context c(redisConnectWithTimeout(host.c_str(), m_url.port ? m_url.port : 6379, tv));
    if (!c) return fail(Category::io_error, "remote {}: cannot allocate a connection", m_url.shown());
    if (c->err) return fail(Category::io_error, "remote {}: cannot connect: {}", m_url.shown(), error_text(c.get()));
    if (redisSetTimeout(c.get(), tv) != REDIS_OK)
      return fail(Category::io_error, "remote {}: cannot set the timeout", m_url.shown());
    auto setup = [&](Reply r, std::string_view what) -> Result<void> {
      if (!r) return fail(Category::io_error, "remote {}: {}: {}", m_url.shown(), what, error_text(c.get()));
      if (r->type == REDIS_REPLY_ERROR)
        return fail(Category::io_error, "remote {}: {} refused: {}", m_url.shown(), what,
                    shown_text(std::string_view(r->str, r->len)));
      return {};
    };
    if (!m_url.password.empty()) {
      Reply r(static_cast<redisReply*>(
          m_url.user.empty() ? redisCommand(c.get(), "AUTH %s", m_url.password.c_str())
                             : redisCommand(c.get(), "AUTH %s %s", m_url.user.c_str(), m_url.password.c_str())));
      KCACHE_CHECK(setup(std::move(r), "AUTH"));
    }
    if (m_url.db != 0)
      KCACHE_CHECK(setup(Reply(static_cast<redisReply*>(redisCommand(c.get(), "SELECT %u", m_url.db))), "SELECT"));
    return c;
  }

  void release(Context c) {
    std::lock_guard lock(m_mutex);
    if (m_free.size() < 64) m_free.push_back(std::move(c));
  }

  RemoteUrl m_url;
  std::mutex m_mutex;
  std::vector<Context> m_free;
};

}  // namespace

std::unique_ptr<Backend> make_redis_backend(const RemoteUrl& url) { return std::make_unique<RedisBackend>(url); }

}  // namespace kcache::remote::internal
