// Redis through hiredis (Debian's libhiredis, 0.14), pooled so that compile
// threads do not wait on each other. A value is one string key; GETRANGE
// bounds what a well-behaved server sends.
//
// hiredis connects and builds reply objects (its redisReader); the socket
// I/O is kcache's own. redisCommand's blocking loop bounds each read by the
// socket timeout, not the request (a server sending a byte every 1.5 s held
// a build for minutes), and buffers a reply whole before anyone can look at
// its size (a 300 MiB reply peaked at 700 MB). Here every request has one
// deadline, timeout-ms after it starts, connecting included, polled before
// every read and write; and a reply is scanned as it arrives (ReplyScanner),
// so a length or count over the request's bound is refused from its header,
// before its bytes are read, and that connection is dropped.
#include "kcache/remote/backend_internal.hpp"

#include <hiredis/hiredis.h>

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>

namespace kcache::remote::internal {
namespace {

using Clock = std::chrono::steady_clock;

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

/// What one reply may hold: its bytes in all (protocol included) and the
/// elements of its arrays in all.
struct ReplyLimits {
  std::size_t max_bytes = 0;
  std::size_t max_elements = 0;
};

/// The bound of every reply but a value's: a SCAN page (COUNT 1000 keys of
/// at most ~600 bytes), a status, an integer or an error line.
constexpr ReplyLimits k_small_reply{16u << 20, 100'000};
/// Bytes a value's reply may hold beyond the value: "$LEN\r\n" and "\r\n".
constexpr std::size_t k_value_reply_slack = 64;
/// The longest line (a status, an error, a length) before its CRLF.
constexpr std::size_t k_max_line = 64u << 10;
/// Array nesting (hiredis reads at most 7 levels).
constexpr std::size_t k_max_depth = 7;

/// Follows one RESP2 reply as its bytes arrive: where it ends, and whether
/// what it announces (a bulk string's length, an array's count) fits its
/// limits, checked as each header arrives, so an oversized reply is
/// refused before its body is read.
class ReplyScanner {
 public:
  enum class State { more, done, refused };

  explicit ReplyScanner(ReplyLimits limits) : m_limits(limits) {}

  /// Scans `buf` from where the last call stopped (`buf` only grows).
  State scan(std::string_view buf) {
    for (;;) {
      if (m_bulk_left) {
        const std::size_t end = m_pos + *m_bulk_left + 2;
        if (buf.size() < end) return State::more;
        if (buf.substr(end - 2, 2) != "\r\n") return refuse("a bulk string not ended by CRLF");
        m_pos = end;
        m_bulk_left.reset();
        if (value_done()) return State::done;
        continue;
      }
      const auto eol = buf.find("\r\n", m_pos);
      if (eol == std::string_view::npos) {
        if (buf.size() - m_pos > k_max_line) return refuse(fmt::format("a line over {} bytes", k_max_line));
        return State::more;
      }
      const char type = buf[m_pos];
      const auto text = buf.substr(m_pos + 1, eol - m_pos - 1);
      m_total += eol + 2 - m_pos;
      m_pos = eol + 2;
      if (m_total > m_limits.max_bytes) return refuse(fmt::format("over {} bytes in all", m_limits.max_bytes));
      if (type == '+' || type == '-' || type == ':') {
        if (value_done()) return State::done;
        continue;
      }
      if (type != '$' && type != '*')
        return refuse(
            fmt::format("not a Redis reply (a line starting with byte 0x{:02x})", static_cast<unsigned char>(type)));
      std::int64_t n = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec != std::errc{} || p != text.data() + text.size() || n < -1) return refuse("a length that is not a number");
      if (type == '$') {
        if (n < 0) {
          if (value_done()) return State::done;
          continue;
        }
        const auto len = static_cast<std::uint64_t>(n);
        if (len > m_limits.max_bytes || m_total + len + 2 > m_limits.max_bytes)
          return refuse(fmt::format("it announces a string of {} bytes, over the limit of {}", len,
                                    m_limits.max_bytes - std::min(m_limits.max_bytes, m_total)));
        if (m_stack.empty()) m_top_bulk = len;
        m_total += len + 2;
        m_bulk_left = len;
        continue;
      }
      const auto count = static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0));
      m_elements += count;
      if (m_elements > m_limits.max_elements)
        return refuse(
            fmt::format("it announces an array of {} elements, over the limit of {}", count, m_limits.max_elements));
      if (count == 0) {
        if (value_done()) return State::done;
        continue;
      }
      if (m_stack.size() == k_max_depth) return refuse(fmt::format("arrays nested over {} deep", k_max_depth));
      m_stack.push_back(count);
    }
  }

  /// Once done: the reply's length in the buffer.
  std::size_t end() const { return m_pos; }
  /// The bytes the reply is known to hold so far (to size the buffer once).
  std::size_t announced() const { return m_bulk_left ? m_pos + *m_bulk_left + 2 : m_pos; }
  /// When the reply is one bulk string: its length (its bytes follow the
  /// first line).
  std::optional<std::uint64_t> top_bulk() const { return m_top_bulk; }
  const std::string& why() const { return m_why; }

 private:
  State refuse(std::string why) {
    m_why = std::move(why);
    return State::refused;
  }
  /// A value ended: the arrays it completes are popped; true when that was
  /// the whole reply.
  bool value_done() {
    while (!m_stack.empty()) {
      if (--m_stack.back() > 0) return false;
      m_stack.pop_back();
    }
    return true;
  }

  ReplyLimits m_limits;
  std::size_t m_pos = 0, m_total = 0;
  std::uint64_t m_elements = 0;
  std::optional<std::uint64_t> m_bulk_left;  ///< inside a bulk string of this length
  std::optional<std::uint64_t> m_top_bulk;
  std::vector<std::uint64_t> m_stack;  ///< elements left in each open array
  std::string m_why;
};

/// A reply: a bulk string's bytes as they came (a value, read once into
/// its own buffer), or hiredis's object for any other reply.
struct Answer {
  bool is_bulk = false;
  bool nil = false;
  std::vector<std::uint8_t> bytes;
  Reply reply;
};

class RedisBackend final : public Backend {
 public:
  explicit RedisBackend(RemoteUrl url) : m_url(std::move(url)) {}

  Result<std::optional<std::vector<std::uint8_t>>> get(const std::string& key, std::size_t max_bytes) override {
    // GETRANGE KEY 0 max: a server sends at most max+1 bytes, so a value
    // over the bound is recognised from its length, and its bytes never read.
    // A missing key reads as "".
    const std::string last = std::to_string(max_bytes);
    auto answer = KCACHE_TRY(
        command({"GETRANGE", key, "0", last}, {max_bytes + k_value_reply_slack, 1}, max_bytes, "GETRANGE " + key));
    if (!answer.is_bulk) return unexpected_reply(answer, "GETRANGE");
    if (answer.nil || answer.bytes.empty()) return std::optional<std::vector<std::uint8_t>>{};
    return std::optional(std::move(answer.bytes));
  }

  Result<void> put(const std::string& key, std::span<const std::uint8_t> value) override {
    std::string_view bytes(reinterpret_cast<const char*>(value.data()), value.size());
    auto answer = KCACHE_TRY(command({"SET", key, bytes}, k_small_reply, 0, "SET"));
    if (answer.reply && answer.reply->type == REDIS_REPLY_STATUS) return {};
    return unexpected_reply(answer, "SET");
  }

  Result<bool> exists(const std::string& key) override {
    auto answer = KCACHE_TRY(command({"EXISTS", key}, k_small_reply, 0, "EXISTS"));
    if (!answer.reply || answer.reply->type != REDIS_REPLY_INTEGER) return unexpected_reply(answer, "EXISTS");
    return answer.reply->integer > 0;
  }

  Result<void> remove(const std::string& key) override {
    auto answer = KCACHE_TRY(command({"DEL", key}, k_small_reply, 0, "DEL"));
    if (!answer.reply || answer.reply->type != REDIS_REPLY_INTEGER) return unexpected_reply(answer, "DEL");
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
      auto answer = KCACHE_TRY(command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, k_small_reply, 0, "SCAN"));
      const redisReply* reply = answer.reply.get();
      if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
          reply->element[0]->type != REDIS_REPLY_STRING || reply->element[1]->type != REDIS_REPLY_ARRAY)
        return unexpected_reply(answer, "SCAN");
      cursor.assign(reply->element[0]->str, reply->element[0]->len);
      if (cursor.size() > 32) return unexpected_reply(answer, "SCAN");
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
  /// free), all of it, connecting included, within timeout-ms. A connection
  /// is returned to the pool only after a whole, well-formed reply; one that
  /// failed, timed out or sent a refused reply is dropped. `value_bound`
  /// (a GET's limit, 0 for other commands) names the bound in a refusal.
  Result<Answer> command(std::initializer_list<std::string_view> args, ReplyLimits limits, std::size_t value_bound,
                         std::string_view what) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(m_url.timeout_ms);
    Context c = KCACHE_TRY(acquire(deadline));
    auto answer = KCACHE_TRY(request(c.get(), args, limits, deadline, what, value_bound));
    if (answer.reply && answer.reply->type == REDIS_REPLY_ERROR) {
      std::string msg(answer.reply->str, answer.reply->len);
      // OOM: maxmemory reached with noeviction; READONLY: a replica.
      Category cat = msg.starts_with("OOM")        ? Category::store_full
                     : msg.starts_with("READONLY") ? Category::read_only
                                                   : Category::io_error;
      release(std::move(c));
      return fail(cat, "remote {}: the server answered: {}", m_url.shown(), shown_text(msg));
    }
    release(std::move(c));
    return answer;
  }

  /// Sends one command on `c` and reads its reply by `deadline`. corruption
  /// for a reply the scanner refuses (over `limits`, not RESP), io_error for
  /// a timeout or a lost connection; the connection is then unusable.
  Result<Answer> request(redisContext* c, std::initializer_list<std::string_view> args, ReplyLimits limits,
                         Clock::time_point deadline, std::string_view what, std::size_t value_bound) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (auto a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    char* formatted = nullptr;
    const int len = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(), lens.data());
    if (len < 0) return fail(Category::io_error, "remote {}: cannot format {}", m_url.shown(), what);
    std::unique_ptr<char, void (*)(char*)> cmd(formatted, redisFreeCommand);
    for (std::size_t sent = 0; sent < static_cast<std::size_t>(len);) {
      KCACHE_CHECK(wait_for(c->fd, POLLOUT, deadline));
      auto n = ::send(c->fd, cmd.get() + sent, static_cast<std::size_t>(len) - sent, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return fail(Category::io_error, "remote {}: {}", m_url.shown(), std::strerror(errno));
      sent += static_cast<std::size_t>(n);
    }
    cmd.reset();

    ReplyScanner scanner(limits);
    std::vector<std::uint8_t> buf;
    for (;;) {
      const std::string_view seen(reinterpret_cast<const char*>(buf.data()), buf.size());
      const auto state = scanner.scan(seen);
      if (state == ReplyScanner::State::done) break;
      if (state == ReplyScanner::State::refused) {
        if (value_bound)
          return fail(Category::corruption, "remote {}: the value of {} is over {} bytes: {}; refused unread",
                      m_url.shown(), what, value_bound, scanner.why());
        return fail(Category::corruption, "remote {}: the reply to {} is refused unread: {}", m_url.shown(), what,
                    scanner.why());
      }
      KCACHE_CHECK(wait_for(c->fd, POLLIN, deadline));
      // A reply whose size is known is read into a buffer of exactly that
      // size: one copy of a value, never a doubling.
      const std::size_t want = std::max(scanner.announced(), buf.size() + 1);
      const std::size_t chunk = std::max<std::size_t>(std::min<std::size_t>(want - buf.size(), 16u << 20), 64u << 10);
      if (buf.capacity() < scanner.announced()) buf.reserve(scanner.announced());
      const std::size_t old = buf.size();
      buf.resize(old + chunk);
      auto n = ::recv(c->fd, buf.data() + old, chunk, 0);
      buf.resize(old + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n < 0) return fail(Category::io_error, "remote {}: {}", m_url.shown(), std::strerror(errno));
      if (n == 0) return fail(Category::io_error, "remote {}: connection lost", m_url.shown());
    }
    // Commands are never pipelined: bytes past the reply mean a confused
    // server. The reply stands, the connection does not.
    if (buf.size() != scanner.end()) c->err = REDIS_ERR_PROTOCOL;

    Answer answer;
    if (scanner.top_bulk() || (buf.size() >= 3 && buf[0] == '$' && buf[1] == '-')) {
      answer.is_bulk = true;
      if (!scanner.top_bulk()) {
        answer.nil = true;
        return answer;
      }
      // "$LEN\r\n" BYTES "\r\n": the bytes moved to the front, in place.
      const std::size_t start = buf.size() - 2 - *scanner.top_bulk() - (buf.size() - scanner.end());
      buf.resize(scanner.end() - 2);
      buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(start));
      answer.bytes = std::move(buf);
      return answer;
    }
    void* reply = nullptr;
    if (redisReaderFeed(c->reader, reinterpret_cast<const char*>(buf.data()), scanner.end()) != REDIS_OK ||
        redisReaderGetReply(c->reader, &reply) != REDIS_OK || !reply)
      return fail(Category::io_error, "remote {}: a reply to {} hiredis cannot read: {}", m_url.shown(), what,
                  shown_text(c->reader->errstr));
    answer.reply.reset(static_cast<redisReply*>(reply));
    return answer;
  }

  /// Waits until `fd` is ready for `events`, or fails at `deadline`.
  Result<void> wait_for(int fd, short events, Clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0)
        return fail(Category::io_error, "remote {}: timed out after {} ms", m_url.shown(), m_url.timeout_ms);
      pollfd p{fd, events, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
      if (n > 0) return {};
      if (n < 0 && errno != EINTR)
        return fail(Category::io_error, "remote {}: {}", m_url.shown(), std::strerror(errno));
    }
  }

  tl::unexpected<Error> unexpected_reply(const Answer& a, std::string_view what) {
    return fail(Category::io_error, "remote {}: unexpected reply {} to {}", m_url.shown(),
                a.is_bulk ? std::string("string") : fmt::format("type {}", a.reply ? a.reply->type : 0), what);
  }

  /// A pooled connection, or a new one (connected, authenticated, its
  /// database selected) by `deadline`.
  Result<Context> acquire(Clock::time_point deadline) {
    {
      std::lock_guard lock(m_mutex);
      if (!m_free.empty()) {
        Context c = std::move(m_free.back());
        m_free.pop_back();
        return c;
      }
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return fail(Category::io_error, "remote {}: timed out after {} ms", m_url.shown(), m_url.timeout_ms);
    timeval tv{static_cast<time_t>(left / 1000), static_cast<suseconds_t>(left % 1000 * 1000)};
    std::string host = m_url.host;
    if (host.starts_with('[')) host = host.substr(1, host.size() - 2);
    Context c(redisConnectWithTimeout(host.c_str(), m_url.port ? m_url.port : 6379, tv));
    if (!c) return fail(Category::io_error, "remote {}: cannot allocate a connection", m_url.shown());
    if (c->err)
      return fail(Category::io_error, "remote {}: cannot connect: {}", m_url.shown(),
                  c->errstr[0] ? shown_text(c->errstr) : "connection lost");
    // Non-blocking from here: every wait is a poll() on what is left of the deadline.
    if (int flags = ::fcntl(c->fd, F_GETFL); flags < 0 || ::fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) < 0)
      return fail(Category::io_error, "remote {}: cannot make the socket non-blocking", m_url.shown());
    auto setup = [&](std::initializer_list<std::string_view> args, std::string_view what) -> Result<void> {
      auto a = KCACHE_TRY(request(c.get(), args, k_small_reply, deadline, what, 0));
      if (a.reply && a.reply->type == REDIS_REPLY_ERROR)
        return fail(Category::io_error, "remote {}: {} refused: {}", m_url.shown(), what,
                    shown_text(std::string_view(a.reply->str, a.reply->len)));
      return {};
    };
    if (!m_url.password.empty()) {
      if (m_url.user.empty()) KCACHE_CHECK(setup({"AUTH", m_url.password}, "AUTH"));
      else KCACHE_CHECK(setup({"AUTH", m_url.user, m_url.password}, "AUTH"));
    }
    if (m_url.db != 0) KCACHE_CHECK(setup({"SELECT", std::to_string(m_url.db)}, "SELECT"));
    return c;
  }

  void release(Context c) {
    if (c->err) return;  // a confused connection is closed, not reused
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
