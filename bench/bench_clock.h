#pragma once
// The two clocks the C++ benches report: wall time and this process's CPU time, in milliseconds.
#include <time.h>

namespace dsrun::bench {

inline double clockMs(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

inline double wallMs() { return clockMs(CLOCK_MONOTONIC); }
inline double cpuMs() { return clockMs(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace dsrun::bench
