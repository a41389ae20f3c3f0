#pragma once
// What the optimizer benches share: their flags (--params N --threads T --reps R) and the best wall and CPU
// time of interleaved candidates. A bench defines benchName() (its program name) before including this.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace dsrun::bench {

const char* benchName();

struct Options {
  int64_t params = 0;
  int threads = 1;
  int reps = 5;
};

[[noreturn]] inline void usage(const std::string& why) {
  std::fprintf(stderr, "%s: %s\nusage: %s [--params N] [--threads T] [--reps R]\n", benchName(),
               why.c_str(), benchName());
  std::exit(2);
}

inline int64_t parsePositive(const char* flag, const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0) {
    usage(std::string(flag) + ": expected a positive integer, got '" + text + "'");
  }
  return v;
}

inline Options parse(int argc, char** argv, int64_t defaultParams) {
  Options o;
  o.params = defaultParams;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      usage(flag == "--help" ? "help" : flag + ": missing value");
    }
    if (flag == "--params") {
      o.params = parsePositive(argv[i], argv[i + 1]);
    } else if (flag == "--threads") {
      o.threads = static_cast<int>(parsePositive(argv[i], argv[i + 1]));
    } else if (flag == "--reps") {
      o.reps = static_cast<int>(parsePositive(argv[i], argv[i + 1]));
    } else {
      usage("unknown option '" + flag + "'");
    }
    ++i;
  }
  return o;
}

struct Timing {
  double wall = 1e30;
  /// Process CPU time: on a shared, oversubscribed machine it excludes the time the scheduler gave
  /// to others, so it shows what the code would do on a quiet machine (wall time stays the headline).
  double cpu = 1e30;
};

inline double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Best wall and CPU time of each of `fns` over `reps` rounds after one warm-up round (which also faults
// the pages in). The functions alternate within a round, so a neighbour's load hits all alike.
inline std::vector<Timing> bestTimes(int reps, const std::vector<std::function<void()>>& fns) {
  std::vector<Timing> best(fns.size());
  for (int r = -1; r < reps; ++r) {
    for (size_t k = 0; k < fns.size(); ++k) {
      const double c0 = cpuSeconds();
      const auto t0 = std::chrono::steady_clock::now();
      fns[k]();
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = cpuSeconds() - c0;
      if (r >= 0) {
        best[k].wall = std::min(best[k].wall, wall);
        best[k].cpu = std::min(best[k].cpu, cpu);
      }
    }
  }
  return best;
}

}  // namespace dsrun::bench
