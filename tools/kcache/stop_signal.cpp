#include "stop_signal.hpp"

#include "cli.hpp"
#include "kcache/report/report.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace kcache::cli {
namespace {

std::atomic<int> g_stop_signal{0};
struct sigaction g_old_int {
}, g_old_term{};

extern "C" void on_stop_signal(int sig) {
  // The second signal ends the process as the default action would.
  if (g_stop_signal.exchange(sig) != 0) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
}

}  // namespace

StopOnSignal::StopOnSignal() {
  g_stop_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes go on; the transfer ends itself
  ::sigaction(SIGINT, &action, &g_old_int);
  ::sigaction(SIGTERM, &action, &g_old_term);
}

StopOnSignal::~StopOnSignal() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
}

bool StopOnSignal::stop_requested() { return g_stop_signal.load() != 0; }

int StopOnSignal::report(const Error& e) {
  const int sig = g_stop_signal.load();
  if (sig == 0) return report_error(e);
  fmt::print(stderr, "{}",
             report::terminal_text(
                 fmt::format("kcache: interrupted by {}: the transfer was stopped and its temporary files removed\n",
                             sig == SIGINT ? "Ctrl-C" : "SIGTERM")));
  return 128 + sig;
}

}  // namespace kcache::cli
