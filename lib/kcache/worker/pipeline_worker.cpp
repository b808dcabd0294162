// Pipeline creation in worker processes (contract and crash policy in
// pipeline_worker.hpp, wire format in worker_protocol.hpp).
//
// Parent: one poll() loop per worker over the worker's socket (jobs out,
// frames in) and its stderr pipe (kept as a bounded tail). No threads: the
// loop both writes jobs and reads answers, so neither side can block the
// other. Worker: a reader thread queues jobs; N threads announce (BEGIN),
// validate, hand them to the driver and answer (RESULT).
#include "kcache/worker/pipeline_worker.hpp"

#include "kcache/compile/compiler.hpp"
#include "kcache/core/timing.hpp"
#include "kcache/util/worker_pool.hpp"
#include "kcache/worker/protocol.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

extern char** environ;

namespace kcache::worker {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t k_stderr_tail_bytes = 4096;

// --- Parent side -------------------------------------------------------------

/// An fd closed on scope exit.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : m_fd(fd) {}
  Fd(Fd&& o) noexcept : m_fd(std::exchange(o.m_fd, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    reset();
    m_fd = std::exchange(o.m_fd, -1);
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
  }
  int get() const { return m_fd; }

 private:
  int m_fd = -1;
};

/// A running worker process: its pid, socket and stderr pipe. One that is
/// dropped before it was collected (reap()) is killed and collected.
struct Worker {
  pid_t pid = -1;
  Fd sock;
  Fd err;
  std::string stderr_tail;

  Worker() = default;
  Worker(Worker&& o) noexcept
      : pid(std::exchange(o.pid, -1)),
        sock(std::move(o.sock)),
        err(std::move(o.err)),
        stderr_tail(std::move(o.stderr_tail)) {}
  Worker& operator=(Worker&&) = delete;
  ~Worker() {
    if (pid > 0) ::kill(pid, SIGKILL);
    reap();
  }
  /// Waits for the process to end; its exit status.
  int reap() {
    int status = 0;
    if (pid > 0)
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    pid = -1;
    return status;
  }

  void keep_stderr(const char* data, std::size_t n) {
    stderr_tail.append(data, n);
    if (stderr_tail.size() > k_stderr_tail_bytes) stderr_tail.erase(0, stderr_tail.size() - k_stderr_tail_bytes);
  }
};

Result<Worker> spawn_worker(const device::DeviceInfo& device, const WorkerOptions& options, unsigned threads,
                            JobMode mode) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return fail(Category::io_error, "pipeline worker: socketpair failed: {}", std::strerror(errno));
  Fd parent_sock(sv[0]), child_sock(sv[1]);
  int ep[2];
  if (::pipe2(ep, O_CLOEXEC) != 0)
    return fail(Category::io_error, "pipeline worker: pipe failed: {}", std::strerror(errno));
  Fd err_read(ep[0]), err_write(ep[1]);

  std::vector<std::string> args = options.command;
  if (args.empty()) args = {"/proc/self/exe", std::string(k_worker_subcommand)};
  args.insert(args.end(), {"--device", device.fingerprint(), "--threads", std::to_string(threads)});
  if (device.profile != device::DeviceProfile::all_supported)
    args.insert(args.end(), {"--profile", std::string(device::device_profile_name(device.profile))});
  if (options.timed && mode == JobMode::verify) args.emplace_back("--timed");
  args.insert(args.end(), options.faults.begin(), options.faults.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // dup2 clears FD_CLOEXEC on the targets; everything else of ours closes on exec.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_sock.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, child_sock.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
  pid_t pid = -1;
  // posix_spawn, not fork: a forked copy of a process that has loaded Vulkan
  // must not run (device.hpp, "Processes").
  int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return fail(Category::io_error, "pipeline worker: cannot start '{}': {}", args[0], std::strerror(rc));
  Worker w;
  w.pid = pid;
  w.sock = std::move(parent_sock);
  w.err = std::move(err_read);
  ::fcntl(w.sock.get(), F_SETFL, ::fcntl(w.sock.get(), F_GETFL) | O_NONBLOCK);
  ::fcntl(w.err.get(), F_SETFL, ::fcntl(w.err.get(), F_GETFL) | O_NONBLOCK);
  return w;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), name ? name : "?");
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

/// What became of one worker's share of the jobs.
struct RoundEnd {
  bool died = false;                   ///< it ended before answering every job
  std::vector<std::size_t> in_flight;  ///< begun, not answered, when it died
  std::vector<std::size_t> unstarted;  ///< never begun
  std::size_t answered = 0;
  std::optional<Error> fatal;  ///< it could not serve at all (FATAL)
  std::string why;             ///< how it died, with its stderr tail
};

PipelineOutcome to_outcome(protocol::JobResult&& r) {
  PipelineOutcome o;
  o.error = std::move(r.error);
  o.blob = std::move(r.blob);
  o.create_ms = r.create_ms;
  o.cpu_ms = r.cpu_ms;
  o.verify.outcome = r.outcome;
  o.verify.create_ms = r.create_ms;
  o.verify.empty_cache_ms = r.empty_cache_ms;
  o.verify.blob_refused = r.blob_refused;
  o.verify.message = std::move(r.message);
  return o;
}

/// Runs `batch` (indices into `jobs`) in one worker of `threads` threads
/// until it has answered all of them or died.
/// `w` is a worker spawned for it (spawn_worker with `mode`).
Result<RoundEnd> run_round(Worker w, JobMode mode, std::span<const PipelineJob> jobs,
                           const std::vector<std::uint8_t>& validated, const std::vector<std::size_t>& batch,
                           const WorkerOptions& options,
                           const std::function<void(std::size_t, PipelineOutcome&&)>& done) {
  const auto stall = options.stall_timeout;

  // Every job, then END, queued up front: the socket drains as the worker reads.
  std::vector<std::uint8_t> out;
  const auto wire_mode = mode == JobMode::build ? protocol::Mode::build : protocol::Mode::verify;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const PipelineJob& j = jobs[batch[i]];
    auto f = protocol::job_frame(static_cast<std::uint32_t>(i), wire_mode, validated[batch[i]] != 0, j.kernel, j.target,
                                 j.entry, j.spec, j.spirv, j.wrapped_blob);
    out.insert(out.end(), f.begin(), f.end());
  }
  auto end = protocol::frame(protocol::FrameType::end, {});
  out.insert(out.end(), end.begin(), end.end());
  std::size_t out_pos = 0;

  enum class State { pending, begun, answered };
  std::vector<State> state(batch.size(), State::pending);
  RoundEnd result;
  protocol::FrameReader reader;
  bool ready = false, finished = false, killed = false, sock_open = true, err_open = true;
  std::string protocol_error;
  auto last_activity = Clock::now();

  while (!finished && sock_open) {
    pollfd fds[2] = {{w.sock.get(), static_cast<short>(POLLIN | (out_pos < out.size() ? POLLOUT : 0)), 0},
                     {err_open ? w.err.get() : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, 250);
    if (n < 0 && errno != EINTR)
      return fail(Category::io_error, "pipeline worker: poll failed: {}", std::strerror(errno));
    if (n > 0 && (fds[1].revents & (POLLIN | POLLHUP))) {
      char buf[4096];
      ssize_t got = ::read(w.err.get(), buf, sizeof buf);
      if (got > 0) w.keep_stderr(buf, static_cast<std::size_t>(got));
      else if (got == 0 || (errno != EAGAIN && errno != EINTR)) err_open = false;
    }
    if (n > 0 && (fds[0].revents & POLLOUT) && out_pos < out.size()) {
      ssize_t sent = ::send(w.sock.get(), out.data() + out_pos, out.size() - out_pos, MSG_NOSIGNAL);
      if (sent > 0) out_pos += static_cast<std::size_t>(sent);
      else if (sent < 0 && errno != EAGAIN && errno != EINTR) out_pos = out.size();  // peer gone: reads tell why
    }
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      std::uint8_t buf[1 << 16];
      ssize_t got = ::recv(w.sock.get(), buf, sizeof buf, 0);
      if (got > 0) {
        reader.append({buf, static_cast<std::size_t>(got)});
        last_activity = Clock::now();
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        sock_open = false;
      }
      for (;;) {
        auto next = reader.next();
        if (!next) {
          protocol_error = next.error().message;
          sock_open = false;
          break;
        }
        if (!*next) break;
        protocol::Frame& f = **next;
        auto bad_index = [&](std::uint32_t index) { return index >= batch.size(); };
        if (f.type == protocol::FrameType::ready) {
          auto r = protocol::decode_ready(f.body);
          if (!r || r->first != protocol::k_protocol_version) {
            protocol_error =
                r ? fmt::format("protocol version {} ≠ {}", r->first, protocol::k_protocol_version) : r.error().message;
            sock_open = false;
            break;
          }
          ready = true;
        } else if (f.type == protocol::FrameType::fatal) {
          auto e = protocol::decode_fatal(f.body);
          result.fatal = e ? *e : Error{Category::device_unavailable, "the pipeline worker could not start"};
          finished = true;
          break;
        } else if (f.type == protocol::FrameType::begin) {
          auto index = protocol::decode_begin(f.body);
          if (!index || bad_index(*index) || state[*index] != State::pending) {
            protocol_error = "unexpected BEGIN";
            sock_open = false;
            break;
          }
          state[*index] = State::begun;
        } else if (f.type == protocol::FrameType::result) {
          auto r = protocol::decode_result(f.body);
          if (!r || bad_index(r->index) || state[r->index] == State::answered) {
            protocol_error = r ? "unexpected RESULT" : r.error().message;
            sock_open = false;
            break;
          }
          state[r->index] = State::answered;
          ++result.answered;
          const std::size_t index = r->index;
          done(batch[index], to_outcome(std::move(*r)));
          if (result.answered == batch.size()) finished = true;
        } else {
          protocol_error = fmt::format("unexpected frame type {}", static_cast<std::uint32_t>(f.type));
          sock_open = false;
          break;
        }
      }
    }
    const bool waiting = !finished && sock_open;
    const bool busy = std::any_of(state.begin(), state.end(), [](State s) { return s == State::begun; });
    // A worker that has not said READY yet is opening the device: that may
    // hang too, so the same limit applies.
    if (waiting && (busy || !ready) && Clock::now() - last_activity > stall) {
      ::kill(w.pid, SIGKILL);
      killed = true;
      sock_open = false;
    }
  }

  // Collect the process. After FATAL or a full answer it exits by itself;
  // otherwise it is dead or killed, or must be.
  if (!finished && !killed) ::kill(w.pid, SIGKILL);
  const int status = w.reap();
  // Whatever it wrote to stderr up to its end.
  for (char buf[4096];;) {
    ssize_t got = ::read(w.err.get(), buf, sizeof buf);
    if (got <= 0) break;
    w.keep_stderr(buf, static_cast<std::size_t>(got));
  }
  if (finished) return result;

  result.died = true;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (state[i] == State::begun) result.in_flight.push_back(batch[i]);
    if (state[i] == State::pending) result.unstarted.push_back(batch[i]);
  }
  std::string how =
      killed ? fmt::format("sent nothing for {} s and was killed", std::chrono::duration<double>(stall).count())
      : !protocol_error.empty() ? "broke the protocol (" + protocol_error + ")"
                                : describe_status(status);
  std::string tail = w.stderr_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
  result.why = fmt::format("the pipeline worker {}{}", how, tail.empty() ? "" : "; its last output: " + tail);
  return result;
}

// --- Worker side -----------------------------------------------------------------

/// Frames to the parent from several threads, one whole frame at a time.
class Sender {
 public:
  explicit Sender(int fd) : m_fd(fd) {}
  void send(std::span<const std::uint8_t> frame) {
    std::lock_guard lock(m_mutex);
    // A failed write means the parent is gone; exiting is all that is left.
    if (!protocol::write_all(m_fd, frame)) std::_Exit(3);
  }

 private:
  int m_fd;
  std::mutex m_mutex;
};

protocol::JobResult serve_job(device::Device& dev, const protocol::Job& job) {
  protocol::JobResult r;
  r.index = job.index;
  Stopwatch watch;
  PhaseTime cpu;
  auto run = [&]() -> Result<void> {
    // No unvalidated byte reaches a driver (docs/reliability.md promise 5): the
    // module passes spirv-val for its target (in the parent, for these very
    // bytes, when the job says so; else here), a blob its wrapper and header
    // checks here, right before the driver sees them.
    auto words = KCACHE_TRY(compile::spirv_words(job.spirv));
    if (!job.validated) KCACHE_CHECK(compile::validate(words, job.target));
    if (job.mode == protocol::Mode::build) {
      auto built = KCACHE_TRY(dev.build_pipeline(words, job.entry, job.spec));
      r.create_ms = built.create_ms;
      r.blob = std::move(built.data);
      return {};
    }
    auto raw = KCACHE_TRY(device::unwrap_blob(job.wrapped_blob, dev.info()));
    auto v = KCACHE_TRY(dev.verify_pipeline(words, job.entry, job.spec, raw));
    r.create_ms = v.create_ms;
    r.empty_cache_ms = v.empty_cache_ms;
    r.outcome = v.outcome;
    r.blob_refused = v.blob_refused;
    r.message = std::move(v.message);
    return {};
  };
  if (auto ok = run(); !ok) r.error = std::move(ok).error();
  watch.lap(cpu);
  r.cpu_ms = cpu.cpu_ms;
  return r;
}

}  // namespace

Result<void> run_pipeline_jobs(const device::DeviceInfo& device, JobMode mode, std::span<const PipelineJob> jobs,
                               const WorkerOptions& options,
                               const std::function<void(std::size_t, PipelineOutcome&&)>& done) {
  const unsigned threads = std::max(1u, options.threads);
  // The first worker starts now, so that it opens its device (a tenth of a
  // second or more) while the modules are validated. If it cannot start,
  // the first round tries again and reports why, after the invalid modules.
  std::optional<Worker> first;
  if (!jobs.empty())
    if (auto w =
            spawn_worker(device, options, static_cast<unsigned>(std::min<std::size_t>(threads, jobs.size())), mode))
      first.emplace(std::move(*w));
  // Every module through spirv-val here first, on the -j threads, rather
  // than in the worker while it creates pipelines. The worker is told which
  // bytes were validated and skips them (protocol JOB); a module spirv-val
  // rejects never reaches a worker.
  std::vector<std::uint8_t> validated(jobs.size(), 0);  // not vector<bool>: written from several threads
  std::vector<std::optional<Error>> invalid(jobs.size());
  util::parallel_for(jobs.size(), threads, [&](std::size_t i) {
    auto words = compile::spirv_words(jobs[i].spirv);
    auto ok = words ? compile::validate(*words, jobs[i].target) : Result<void>(tl::unexpected(words.error()));
    if (ok) validated[i] = 1;
    else invalid[i] = std::move(ok).error();
  });
  std::vector<std::size_t> normal, suspects;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!invalid[i]) {
      normal.push_back(i);
      continue;
    }
    PipelineOutcome o;
    o.error = std::move(invalid[i]);
    done(i, std::move(o));
  }
  int fruitless_deaths = 0;

  auto fail_all = [&](std::vector<std::size_t>& list, const Error& e, bool crashed) {
    for (auto i : list) {
      PipelineOutcome o;
      o.error = e;
      o.crashed = crashed;
      done(i, std::move(o));
    }
    list.clear();
  };

  while (!normal.empty() || !suspects.empty()) {
    // Suspects run after everything else, each alone (one thread, so at
    // most one job is in flight when a worker dies).
    const bool isolating = normal.empty();
    std::vector<std::size_t>& batch = isolating ? suspects : normal;
    const unsigned n_threads = isolating ? 1u : static_cast<unsigned>(std::min<std::size_t>(threads, batch.size()));
    Worker w = first ? std::move(*first) : KCACHE_TRY(spawn_worker(device, options, n_threads, mode));
    first.reset();
    auto end = KCACHE_TRY(run_round(std::move(w), mode, jobs, validated, batch, options, done));
    if (end.fatal) {
      fail_all(normal, *end.fatal, false);
      fail_all(suspects, *end.fatal, false);
      return {};
    }
    if (!end.died) {
      batch.clear();
      continue;
    }
    batch = std::move(end.unstarted);
    if (end.in_flight.size() == 1) {
      PipelineOutcome o;
      o.crashed = true;
      o.error = Error{Category::compile_failed,
                      fmt::format("{} while creating this pipeline; the other kernels went on", end.why)};
      done(end.in_flight.front(), std::move(o));
    } else {
      suspects.insert(suspects.end(), end.in_flight.begin(), end.in_flight.end());
    }
    // No endless restarts: a worker that dies twice in a row having answered
    // nothing and with nothing to blame fails what is left.
    if (end.answered == 0 && end.in_flight.empty()) {
      if (++fruitless_deaths >= 2) {
        Error e{Category::device_unavailable, end.why};
        fail_all(normal, e, true);
        fail_all(suspects, e, true);
        return {};
      }
    } else {
      fruitless_deaths = 0;
    }
  }
  return {};
}

int serve_pipeline_worker(const WorkerArgs& args) {
  // The protocol owns the original stdout; stdout itself now goes to stderr,
  // so whatever a driver prints cannot corrupt the stream.
  const int out_fd = ::dup(STDOUT_FILENO);
  if (out_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return 3;
  Sender sender(out_fd);

  // Before Vulkan loads: hits must come from kcache's blobs, cold times from
  // real compiles, not from the driver's own disk cache.
  device::disable_driver_disk_caches();
  auto opened = [&]() -> Result<std::unique_ptr<device::Device>> {
    const auto profile = KCACHE_TRY(device::parse_device_profile(args.profile));
    auto devices = KCACHE_TRY(device::list_devices());
    for (const auto& listed : devices)
      if (auto d = listed.with_profile(profile); d.fingerprint() == args.fingerprint)
        return device::Device::open(d, device::Device::Options{.fail_on_compile_required = !args.timed});
    return fail(Category::device_unavailable, "no Vulkan device with fingerprint {} is present", args.fingerprint);
  }();
  if (!opened) {
    sender.send(protocol::fatal_frame(opened.error()));
    return 1;
  }
  device::Device& dev = **opened;
  sender.send(protocol::ready_frame(dev.info().name));

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<protocol::Job> queue;
  bool closing = false;
  std::jthread reader([&] {
    for (;;) {
      auto f = protocol::read_frame(STDIN_FILENO);
      std::lock_guard lock(mutex);
      if (!f || !*f || (*f)->type != protocol::FrameType::job) {
        closing = true;  // END, end of stream, or garbage: finish what is queued
        wake.notify_all();
        return;
      }
      auto job = protocol::decode_job((*f)->body);
      if (!job) {
        closing = true;
        wake.notify_all();
        return;
      }
      queue.push_back(std::move(*job));
      wake.notify_one();
    }
  });

  // Each of the threads takes jobs until the queue is closed and empty; a
  // thread the OS refuses leaves the jobs to the others (parallel_for).
  const unsigned n = std::max(1u, args.threads);
  util::parallel_for(n, n, [&](std::size_t) {
    for (;;) {
      protocol::Job job;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return !queue.empty() || closing; });
        if (queue.empty()) return;
        job = std::move(queue.front());
        queue.pop_front();
      }
      sender.send(protocol::begin_frame(job.index));
      if (args.before_create) args.before_create(job.kernel);  // a test's injected fault, if any
      sender.send(protocol::result_frame(serve_job(dev, job)));
    }
  });  // returns once every queued job is answered
  // The reader may still be blocked in read(): the parent closes the socket
  // once every answer is in, which ends it.
  reader.join();
  return 0;
}

}  // namespace kcache::worker
