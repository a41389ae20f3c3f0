#include "launcher/backends/agent/silence_budget.h"

#include <catch2/catch.hpp>

using dsrun::launcher::silentBeatsFor;

TEST_CASE("the heartbeat budget keeps the user's misses for small jobs", "[launcher][agent]") {
  CHECK(silentBeatsFor(5, 500, 1, 1) == 5);
  CHECK(silentBeatsFor(5, 500, 64, 512) == 5);    // 4 x (64 x 2.861 + 512 x 0.097) ms = 931 ms < 2.5 s
  CHECK(silentBeatsFor(2, 2000, 256, 2048) == 2);  // 4 s asked for, 3.7 s needed
}

TEST_CASE("the heartbeat budget grows with the job beyond what dsrun's loop needs for one pass", "[launcher][agent]") {
  // 256 x 8: 4 x (256 x 2.861 + 2048 x 0.097) ms = 3,725 ms -> 8 beats of 500 ms.
  CHECK(silentBeatsFor(5, 500, 256, 2048) == 8);
  // 1,000 x 8: 14,548 ms -> 30 beats of 500 ms, 15 of 1 s.
  CHECK(silentBeatsFor(5, 500, 1000, 8000) == 30);
  CHECK(silentBeatsFor(5, 1000, 1000, 8000) == 15);
  // More misses than the floor needs stand.
  CHECK(silentBeatsFor(40, 500, 1000, 8000) == 40);
}
