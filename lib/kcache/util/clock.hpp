// The time source of everything kcache stamps (entry created times, usage
// records, bundle heads, gc ages). Passed in, so tests pin it without
// waiting and without anything read from the environment.
// Thread-safety: now() may be called from any thread.
#pragma once

#include <cstdint>

namespace kcache::util {

/// A source of wall-clock time in unix seconds.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::uint64_t now() const = 0;
};

/// The real clock (std::chrono::system_clock).
const Clock& system_clock();

/// A clock that always says `seconds` (tests, and `KCACHE_TEST_NOW` in the CLI).
class FixedClock final : public Clock {
 public:
  explicit FixedClock(std::uint64_t seconds) : m_seconds(seconds) {}
  std::uint64_t now() const override { return m_seconds; }

 private:
  std::uint64_t m_seconds;
};

}  // namespace kcache::util
