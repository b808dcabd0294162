// The one rule for how many threads a -j means, and a parallel loop over
// indices that every module's CPU-bound fan-out shares, so that -j means the
// same everywhere and a thread the OS refuses never fails a command.
//
// Thread-safety: parallel_for blocks the calling thread until every index is
// done; `fn` runs concurrently on several threads and must synchronise any
// state its calls share (writing only its own index's slot needs nothing).
#pragma once

#include <cstddef>
#include <functional>

namespace kcache::util {

/// The most CPU-bound worker threads a -j asks for, unless the machine has
/// more cores: each thread beyond the cores only adds its own working memory,
/// and a huge -j must not exhaust threads.
inline constexpr unsigned k_max_worker_threads = 256;

/// The threads for `jobs` (0 = every core): never 0, never more than
/// k_max_worker_threads or the core count, whichever is larger. The one -j
/// rule of every command (build, import, verify, inspect, bundle reading).
unsigned worker_threads(unsigned jobs);

/// Calls fn(i) once for every i in [0, count), on min(threads, count)
/// threads of which the calling thread is one (threads 0 counts as 1), and
/// returns when every call has returned. Indices are handed out one at a time
/// in increasing order, so a slow one holds up no share of the others. A
/// thread the OS refuses to start (a process or thread limit) is not an
/// error: the indices run on the threads that did start, at least the
/// caller's. `fn` must not throw (an exception on a worker thread ends the
/// process); a caller that wants to stop early makes its remaining calls
/// return at once.
void parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn);

}  // namespace kcache::util
