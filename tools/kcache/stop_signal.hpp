// Ctrl-C (SIGINT) and SIGTERM during a transfer (`push`, `pull`, `import`
// of a URL or an OCI reference): instead of ending the process at once,
// which would leave a pulled file's temporary behind, the signal sets a flag
// that the library's HTTP client asks at least once a second
// (remote::HttpClientOptions::cancelled). The transfer then ends with
// "interrupted", every temporary file is removed on the way out (RAII), and
// the command exits 128 + the signal (130, 143), as the signal would have.
// The library installs no handler; the CLI does, here, only while a
// transfer runs. `build` has its own (cmd_build.cpp).
//
// Thread-safety: construct and destroy on the main thread; stop_requested()
// from any thread.
#pragma once

#include "kcache/util/error.hpp"

#include <functional>

namespace kcache::cli {

/// While alive, SIGINT and SIGTERM set a flag instead of ending the process
/// (a second one of them ends it at once: a user who means it).
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  /// Whether a signal arrived; what HttpClientOptions::cancelled asks.
  static bool stop_requested();
  /// stop_requested as a callable, for the library's options.
  static std::function<bool()> flag() { return &stop_requested; }
  /// The exit code for a failed transfer: when a signal stopped it, one
  /// line says so and the code is 128 + the signal; otherwise report_error(e).
  static int report(const Error& e);
};

}  // namespace kcache::cli
