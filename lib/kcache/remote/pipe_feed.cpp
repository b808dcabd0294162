#include "kcache/remote/pipe_feed_internal.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace kcache::remote::internal {

Result<std::unique_ptr<PipeFeed>> PipeFeed::start(Produce produce, std::string_view label) {
  std::unique_ptr<PipeFeed> feed(new PipeFeed());
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return fail(Category::io_error, "cannot make a pipe for {}: {}", label, std::strerror(errno));
  feed->m_read_fd = fds[0];
  feed->m_write_fd = fds[1];
  PipeFeed* self = feed.get();
  try {
    feed->m_thread = std::thread([self, produce = std::move(produce)] {
      // A write into a pipe whose reader is gone raises SIGPIPE on this
      // thread: blocked here, it is EPIPE instead, and dropped with the thread.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      auto outcome = produce(self->m_write_fd, self->m_stop);
      if (!outcome) self->m_error = std::move(outcome).error();
      // Done before the end of the stream: a reader that sees the end finds it set.
      self->m_done = true;
      ::close(self->m_write_fd);
    });
  } catch (const std::system_error& e) {
    ::close(feed->m_write_fd);
    return fail(Category::io_error, "cannot start a thread for {}: {}", label, e.what());
  }
  return feed;
}

PipeFeed::~PipeFeed() { (void)finish(); }

Result<void> PipeFeed::finish() {
  if (m_read_fd >= 0) {
    m_abandoned = !m_done;
    m_stop = true;
    ::close(m_read_fd);
    m_read_fd = -1;
  }
  if (m_thread.joinable()) m_thread.join();
  if (m_error && !m_abandoned) return tl::unexpected(*m_error);
  return {};
}

}  // namespace kcache::remote::internal
