#include "agent/heartbeat_monitor.h"

#include <catch2/catch.hpp>

using namespace dsrun::agent;
using namespace std::chrono_literals;

// Each io.run_one() below completes exactly one monitor period (the only pending work is its timer),
// so the assertions count periods, not wall time.

TEST_CASE("a silent peer is lost after exactly failureThreshold periods", "[agent][heartbeat]") {
  boost::asio::io_context io;
  int lost = 0;
  std::vector<int> missed;
  HeartbeatMonitor monitor(io, 10ms, 3, [&] { ++lost; }, [&](int n) { missed.push_back(n); });
  monitor.start();
  io.run_one();
  io.run_one();
  CHECK(missed == std::vector<int>{1, 2});
  CHECK(lost == 0);
  io.run_one();
  CHECK(missed == std::vector<int>{1, 2, 3});
  CHECK(lost == 1);
  CHECK(io.poll() == 0);  // the monitor stopped: nothing is pending any more
}

TEST_CASE("a beat in every period keeps the peer alive", "[agent][heartbeat]") {
  boost::asio::io_context io;
  int lost = 0;
  HeartbeatMonitor monitor(io, 10ms, 2, [&] { ++lost; });
  monitor.start();
  for (int i = 0; i < 10; ++i) {
    monitor.beat();
    io.run_one();
  }
  CHECK(lost == 0);
  CHECK(monitor.misses() == 0);
}

TEST_CASE("a beat after misses resets the count and reports recovery", "[agent][heartbeat]") {
  boost::asio::io_context io;
  int lost = 0, recovered = 0;
  HeartbeatMonitor monitor(io, 10ms, 3, [&] { ++lost; }, {}, [&] { ++recovered; });
  monitor.start();
  io.run_one();
  io.run_one();
  CHECK(monitor.misses() == 2);
  monitor.beat();
  CHECK(recovered == 1);
  CHECK(monitor.misses() == 0);
  io.run_one();  // the period with the beat
  io.run_one();
  io.run_one();
  CHECK(lost == 0);
  io.run_one();
  CHECK(lost == 1);
}

TEST_CASE("a stopped monitor never calls back", "[agent][heartbeat]") {
  boost::asio::io_context io;
  int lost = 0;
  {
    HeartbeatMonitor monitor(io, 10ms, 1, [&] { ++lost; });
    monitor.start();
    monitor.stop();
    io.run();  // the cancelled timer completes with operation_aborted
  }
  CHECK(lost == 0);
}

TEST_CASE("a monitor destroyed with its timer pending is safe", "[agent][heartbeat]") {
  boost::asio::io_context io;
  int lost = 0;
  {
    HeartbeatMonitor monitor(io, 10ms, 1, [&] { ++lost; });
    monitor.start();
  }
  io.run();
  CHECK(lost == 0);
}
