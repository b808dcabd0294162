// Bytes made on a thread of their own and read through a pipe: how a
// download (an http(s) bundle URL, an OCI artifact) reaches the importer as
// it arrives, so that memory and scratch space stay bounded whatever the
// download's size, and the importer refuses a bad section at its head
// rather than after the whole download.
//
// Thread-safety: start, fd and finish are called from one thread; the
// producer runs on the feed's own.
#pragma once

#include "kcache/util/error.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

namespace kcache::remote::internal {

class PipeFeed {
 public:
  /// Writes the stream into `fd` (SIGPIPE is blocked on the feed's thread,
  /// so a reader that went away is EPIPE); should end soon after `stop`.
  using Produce = std::function<Result<void>(int fd, const std::atomic<bool>& stop)>;

  /// Starts `produce` on a thread; the write end is closed when it returns,
  /// so the reader sees the end of the stream. io_error naming `label` when
  /// the pipe or the thread cannot be made.
  static Result<std::unique_ptr<PipeFeed>> start(Produce produce, std::string_view label);
  ~PipeFeed();
  PipeFeed(const PipeFeed&) = delete;
  PipeFeed& operator=(const PipeFeed&) = delete;

  /// The read end (owned here).
  int fd() const { return m_read_fd; }

  /// Closes the read end and waits for the producer. Its error when it had
  /// already returned (a download that failed ends the stream early, so the
  /// reader saw a truncated stream: this error says why); success when the
  /// reader stopped first (its own error says why): the producer is then
  /// told to stop and its outcome, a consequence, is dropped.
  Result<void> finish();

 private:
  PipeFeed() = default;
  int m_read_fd = -1, m_write_fd = -1;
  std::thread m_thread;
  std::atomic<bool> m_stop{false}, m_done{false};
  std::optional<Error> m_error;
  bool m_abandoned = false;
};

}  // namespace kcache::remote::internal
