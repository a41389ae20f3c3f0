#include "launcher/core_binding.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using Catch::Matchers::Contains;
using dsrun::launcher::coresForLocalRank;
using dsrun::launcher::parseRangeList;

TEST_CASE("parseRangeList expands DeepSpeed's core lists", "[launcher][core_binding]") {
  // DeepSpeed test_ds_arguments.py::test_core_binding_arguments (positive case) and more.
  auto [text, expected] = GENERATE(table<std::string, std::vector<int>>({
      {"0,2-4,6,8-9", {0, 2, 3, 4, 6, 8, 9}},
      {"3", {3}},
      {"1-1", {1}},
      {"0-3", {0, 1, 2, 3}},
  }));
  CHECK(parseRangeList(text) == expected);
}

TEST_CASE("parseRangeList rejects overlap, reverse order and malformed ranges", "[launcher][core_binding]") {
  // DeepSpeed's negative cases: overlap, reverse order (two kinds), plus malformed input.
  auto [text, expected] = GENERATE(table<std::string, std::string>({
      {"0,2-6,5-9", "--bind_core_list '0,2-6,5-9': sub ranges must be in ascending order without overlap, got '5-9'"},
      {"8,2-6", "--bind_core_list '8,2-6': sub ranges must be in ascending order without overlap, got '2-6' after 8"},
      {"1,6-2", "--bind_core_list '1,6-2': bad range, the end must be larger than or equal to the start, got '6-2'"},
      {"1-2-3", "bad range, expected a number or two numbers separated by a dash, got '1-2-3'"},
      {"", "bad range, expected a number or two numbers separated by a dash, got ''"},
      {"a", "got 'a'"},
      {"1, 2", "got ' 2'"},
      {"1,,2", "got ''"},
      {"-3", "got '-3'"},
  }));
  CAPTURE(text);
  REQUIRE_THROWS_AS(parseRangeList(text), dsrun::ParseError);
  REQUIRE_THROWS_WITH(parseRangeList(text), Contains(expected));
}

TEST_CASE("coresForLocalRank gives each rank an equal contiguous share, as DeepSpeed does", "[launcher][core_binding]") {
  const std::vector<int> eight = {0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(coresForLocalRank(eight, 2, 0, "h") == std::vector<int>{0, 1, 2, 3});
  CHECK(coresForLocalRank(eight, 2, 1, "h") == std::vector<int>{4, 5, 6, 7});
  // 8 cores / 3 ranks = 2 each; cores 6 and 7 stay unused.
  CHECK(coresForLocalRank(eight, 3, 2, "h") == std::vector<int>{4, 5});
  const std::vector<int> list = {0, 2, 3, 4, 6, 8, 9};
  CHECK(coresForLocalRank(list, 2, 1, "h") == std::vector<int>{4, 6, 8});
}

TEST_CASE("coresForLocalRank refuses fewer cores than ranks", "[launcher][core_binding]") {
  REQUIRE_THROWS_WITH(coresForLocalRank({0, 1}, 3, 0, "worker-0"),
                      Contains("--bind_cores_to_rank: 2 core(s) for 3 ranks on host 'worker-0'; at least one core "
                               "needs to be assigned to each rank"));
}
