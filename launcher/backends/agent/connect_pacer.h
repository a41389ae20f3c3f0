#pragma once
// ConnectPacer: starts at most `window` agent connections at a time and the next as each one ends
// (welcomed or failed), as pdsh's fanout does. dsrun's one loop does the client side of every TLS
// handshake; started all at once, N handshakes finish together after N times their CPU, and at 1,000
// agents on a loaded machine that passed the agents' handshake deadline (docs/benchmarks.md "Launch at
// scale"). Paced, each connection waits for about `window` handshakes, whatever N, and the total is
// the same CPU. Pure bookkeeping: the caller starts and reports the connections. Loop-thread only.

#include <cstddef>
#include <deque>
#include <functional>

namespace dsrun::launcher {

class ConnectPacer {
 public:
  /// Enough to keep dsrun's loop busy across a network round trip (a handshake is ~2 ms of its CPU),
  /// few enough that one handshake waits ~64 x 2 ms behind the others: far inside the agent's 10 s.
  static constexpr size_t kDefaultWindow = 64;

  explicit ConnectPacer(size_t window = kDefaultWindow);

  /// Runs `start` now if fewer than `window` connections are under way, else when one ends.
  void add(std::function<void()> start);
  /// One started connection ended (welcomed or failed): starts the next one waiting.
  void finished();
  /// Forgets the connections not yet started (the job is being abandoned).
  void clear() { waiting_.clear(); }

  size_t inFlight() const { return inFlight_; }
  size_t waiting() const { return waiting_.size(); }

 private:
  size_t window_;                                ///< most connections under way at once (at least 1)
  size_t inFlight_ = 0;                          ///< started, not yet ended
  std::deque<std::function<void()>> waiting_;    ///< not yet started, in order
};

}  // namespace dsrun::launcher
