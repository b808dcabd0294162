#include "kcache/store/walk_isolated.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace kcache::store {

Result<int> walk_isolated(const std::filesystem::path& dir, const std::function<int()>& walk) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return walk();  // no child to spare: walk here
  if (pid == 0) {
    const int code = walk();
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(code);  // not exit(): the parent's atexit handlers and static objects are the parent's
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return fail(Category::io_error, "waitpid: {}", std::strerror(errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int sig = WTERMSIG(status);
  // SIGABRT too: a damaged length can make the walk abort (an allocation
  // that cannot succeed ends in std::terminate), and under AddressSanitizer a
  // SIGSEGV inside LMDB is reported and turned into an abort.
  if (sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT)
    return fail(Category::corruption,
                "store {} is damaged: reading it crashed ({}). LMDB keeps no checksums of its pages, so a damaged "
                "data.mdb can crash any program that reads it, applications using libkcache included: do not use "
                "or ship this store. Restore it from a copy, or move it away and rebuild it or re-import its "
                "bundles (docs/reliability.md \"A damaged store\")",
                dir.string(),
                sig == SIGSEGV  ? "SIGSEGV"
                : sig == SIGBUS ? "SIGBUS"
                                : "SIGABRT");
  return 128 + sig;
}

}  // namespace kcache::store
