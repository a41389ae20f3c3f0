#include "launcher/backends/agent/connect_pacer.h"

#include <catch2/catch.hpp>
#include <vector>

using dsrun::launcher::ConnectPacer;

TEST_CASE("ConnectPacer starts at most its window of connections and one more as each ends", "[launcher][agent]") {
  ConnectPacer pacer(2);
  std::vector<int> started;
  for (int i = 0; i < 5; ++i) pacer.add([&started, i] { started.push_back(i); });
  CHECK(started == std::vector<int>{0, 1});
  CHECK(pacer.inFlight() == 2);
  CHECK(pacer.waiting() == 3);
  pacer.finished();
  CHECK(started == std::vector<int>{0, 1, 2});
  pacer.finished();
  pacer.finished();
  CHECK(started == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(pacer.waiting() == 0);
  pacer.finished();
  pacer.finished();
  CHECK(pacer.inFlight() == 0);
  pacer.finished();  // more ends than starts (a late failure report) never goes below zero
  CHECK(pacer.inFlight() == 0);
  pacer.add([&started] { started.push_back(5); });
  CHECK(started.back() == 5);
}

TEST_CASE("ConnectPacer keeps its window when a started connection ends at once", "[launcher][agent]") {
  ConnectPacer pacer(1);
  std::vector<int> started;
  pacer.add([&started] { started.push_back(0); });
  pacer.add([&] { started.push_back(1); pacer.finished(); });  // fails as it starts
  pacer.add([&started] { started.push_back(2); });
  pacer.finished();  // 0 ends: 1 starts and ends, then 2 starts
  CHECK(started == std::vector<int>{0, 1, 2});
  CHECK(pacer.inFlight() == 1);
}

TEST_CASE("ConnectPacer forgets what it has not started when cleared", "[launcher][agent]") {
  ConnectPacer pacer(1);
  int started = 0;
  for (int i = 0; i < 3; ++i) pacer.add([&started] { ++started; });
  pacer.clear();
  pacer.finished();
  CHECK(started == 1);
  CHECK(pacer.waiting() == 0);
}
