#include "common/root_cause.h"

#include <catch2/catch.hpp>

using dsrun::earliestFailure;
using dsrun::rootCauseLine;
using dsrun::TimedFailure;

TEST_CASE("the earliest failure across hosts is named, not the first one reported", "[launcher][agent][root_cause]") {
  // Reported in this order: rank 0's "connection closed" arrived first, but rank 3 failed 40 ms earlier.
  std::vector<TimedFailure> f = {{1'000'040'000, 1, "rank 0 (dsn1 pid 10) exited with code 1"},
                                 {1'000'000'000, 3, "rank 3 (dsn2 pid 77) exited with code 3"}};
  CHECK(earliestFailure(f) == 1);
  CHECK(rootCauseLine(f, 2) ==
        "dsrun: rank 3 (dsn2 pid 77) exited with code 3; terminated 2 other ranks; 1 later failure counted as "
        "its consequence: rank 0 (dsn1 pid 10) exited with code 1");
}

TEST_CASE("rootCauseLine wording from a table", "[launcher][agent][root_cause]") {
  auto [failures, terminated, expected] = GENERATE(table<std::vector<TimedFailure>, size_t, std::string>({
      {{{5, 7, "rank 1 (a pid 1) exited with code 7"}}, 1,
       "dsrun: rank 1 (a pid 1) exited with code 7; terminated 1 other rank"},
      {{{5, 7, "A"}, {5, 1, "B"}}, 0, "dsrun: A; terminated 0 other ranks; 1 later failure counted as its consequence: B"},
      {{{9, 1, "A"}, {3, 1, "B"}, {4, 1, "C"}, {5, 1, "D"}, {6, 1, "E"}}, 4,
       "dsrun: B; terminated 4 other ranks; 4 later failures counted as its consequences: A, C, D and 1 more"},
  }));
  CHECK(rootCauseLine(failures, terminated) == expected);
}
