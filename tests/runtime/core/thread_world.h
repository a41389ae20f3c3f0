#pragma once
// Multi-rank tests as threads in one process (STYLE §13): runThreadWorld(N, fn) starts N std::threads,
// each builds a c10d::ProcessGroupGloo on 127.0.0.1 over one shared c10d::HashStore and calls
// fn(rank, pg). Reusable by every runtime test (DDP, ZeRO 1/2): include "tests/runtime/core/thread_world.h"
// and link dsrt (or torch). Header-only on purpose.

#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/compat/process_group_compat.h"

/// Catch2 v2 assertions (CHECK, REQUIRE, INFO) are not thread-safe: with several ranks they corrupt
/// Catch's state. Inside a rank use RANK_REQUIRE(cond, "context" << value): it throws, and
/// runThreadWorld rethrows the first failure on the calling thread, where Catch reports it.
#define RANK_REQUIRE(cond, context)                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::ostringstream rankRequireOut_;                                                \
      rankRequireOut_ << __FILE__ << ":" << __LINE__ << ": " << #cond << " failed; " << context; \
      throw std::runtime_error(rankRequireOut_.str());                                   \
    }                                                                                    \
  } while (0)

namespace dsrt {
namespace testing {

using RankFn = std::function<void(int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg)>;

/// Runs fn on `worldSize` threads, one Gloo process group per thread. Joins all threads, then rethrows
/// the first exception any rank threw (a rank that throws leaves its peers blocked until `timeout`
/// expires in their collective, which then throws too, so a failure never hangs the test).
/// Each thread runs with at::set_num_threads(1) so N ranks do not oversubscribe the cores.
inline void runThreadWorld(int worldSize, const RankFn& fn,
                           std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  static std::atomic<int> worldCounter{0};
  // A fresh key prefix per world: HashStore keys from an earlier world in this process never collide.
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::string prefix = "world" + std::to_string(worldCounter++);
  std::vector<std::thread> threads;
  std::mutex mu;
  std::exception_ptr firstError;
  for (int rank = 0; rank < worldSize; ++rank) {
    threads.emplace_back([&, rank] {
      // Declared outside the try: a failing rank records its own error before its group closes, so the
      // peers' "connection closed" errors (which that closing causes) never win the race to be reported.
      c10::intrusive_ptr<c10d::ProcessGroup> pg;
      try {
        at::set_num_threads(1);
        dsrt::compat::GlooGroupOptions opts;
        opts.timeout = timeout;
        opts.hostname = "127.0.0.1";
        opts.threads = 1;
        auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
        pg = dsrt::compat::makeGlooGroup(prefixed, rank, worldSize, opts);
        fn(rank, pg);
        // Tear down together: a rank destroying its group while a peer still connects made about one
        // run in 20 fail with "Connection closed by peer".
        pg->barrier()->wait();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!firstError) {
          firstError = std::current_exception();
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  if (firstError) {
    std::rethrow_exception(firstError);
  }
}

}  // namespace testing
}  // namespace dsrt
