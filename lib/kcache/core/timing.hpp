// Per-phase timing for receipts (docs/architecture.md "Data flow: build"): wall and thread-CPU
// milliseconds for each phase a kernel goes through. Thread-safety: a
// Stopwatch measures the thread that created it.
#pragma once

#include <array>
#include <cstddef>
#include <ctime>
#include <string_view>

namespace kcache {

/// nvrtc: the CUDA stage's compiles (loading NVRTC included); appended last.
enum class Phase { expand, hash, lookup, glslang, spirv_opt, spirv_val, pipeline, store, nvrtc };
inline constexpr std::size_t k_phase_count = 9;
/// Stable phase names used in summaries and JSON ("spirv-opt").
std::string_view phase_name(Phase p);

struct PhaseTime {
  double wall_ms = 0;
  double cpu_ms = 0;
};

struct PhaseTimes {
  std::array<PhaseTime, k_phase_count> times{};
  PhaseTime& operator[](Phase p) { return times[static_cast<std::size_t>(p)]; }
  const PhaseTime& operator[](Phase p) const { return times[static_cast<std::size_t>(p)]; }
  PhaseTimes& operator+=(const PhaseTimes& o) {
    for (std::size_t i = 0; i < k_phase_count; ++i) {
      times[i].wall_ms += o.times[i].wall_ms;
      times[i].cpu_ms += o.times[i].cpu_ms;
    }
    return *this;
  }
};

/// Measures wall and this thread's CPU time from construction.
class Stopwatch {
 public:
  Stopwatch() { start(); }
  void start() {
    clock_gettime(CLOCK_MONOTONIC, &m_wall);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &m_cpu);
  }
  /// Adds the time since start() to `into` and restarts.
  void lap(PhaseTime& into) {
    timespec wall, cpu;
    clock_gettime(CLOCK_MONOTONIC, &wall);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    into.wall_ms += ms(m_wall, wall);
    into.cpu_ms += ms(m_cpu, cpu);
    m_wall = wall;
    m_cpu = cpu;
  }

 private:
  static double ms(const timespec& a, const timespec& b) {
    return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
  }
  timespec m_wall{}, m_cpu{};
};

}  // namespace kcache
