#include "runtime/zero/partition_plan.h"

#include <catch2/catch.hpp>

#include <numeric>
#include <stdexcept>
#include <tuple>
#include <vector>

using dsrt::zero::ParamPiece;
using dsrt::zero::planPartition;
using Catch::Matchers::Contains;

TEST_CASE("planPartition pads the flat buffer to worldSize * alignment and cuts equal partitions",
          "[runtime][zero]") {
  using Numels = std::vector<int64_t>;
  // numels, worldSize, alignment -> numel, paddedNumel, partitionNumel
  auto [numels, world, align, numel, padded, part] = GENERATE(table<Numels, int, int64_t, int64_t, int64_t, int64_t>({
      {Numels{10}, 1, 2, 10, 10, 10},
      {Numels{11}, 1, 2, 11, 12, 12},
      {Numels{10}, 2, 2, 10, 12, 6},
      {Numels{10, 7, 3}, 4, 2, 20, 24, 6},
      {Numels{8, 8}, 4, 2, 16, 16, 4},
      {Numels{1}, 4, 1, 1, 4, 1},
      {Numels{5, 0, 5}, 3, 2, 10, 12, 4},
      {Numels{}, 2, 2, 0, 0, 0},
      {Numels{0, 0}, 2, 2, 0, 0, 0},
      {Numels{1000003}, 4, 16, 1000003, 1000064, 250016},
  }));
  auto plan = planPartition(numels, world, align);
  CHECK(plan.numel == numel);
  CHECK(plan.paddedNumel == padded);
  CHECK(plan.partitionNumel == part);
  CHECK(plan.paddedNumel % (world * align) == 0);
  int64_t padding = 0;
  for (int r = 0; r < world; ++r) {
    CHECK(plan.partitionEnd(r) - plan.partitionBegin(r) == part);
    padding += plan.paddingNumel(r);
  }
  CHECK(padding == padded - numel);
}

TEST_CASE("planPartition places parameters back to back in registration order", "[runtime][zero]") {
  auto plan = planPartition({3, 0, 4, 2}, 2);
  CHECK(plan.paramOffsets == std::vector<int64_t>{0, 3, 3, 7});
}

TEST_CASE("piecesOf gives each rank the parameter runs inside its partition, straddling params split",
          "[runtime][zero]") {
  // flat: p0 [0,10) p1 [10,17) p2 [17,20) padding [20,24); 4 partitions of 6.
  auto plan = planPartition({10, 7, 3}, 4);
  using Piece = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // param, paramOffset, flatOffset, numel
  auto [rank, expected] = GENERATE(table<int, std::vector<Piece>>({
      {0, {Piece{0, 0, 0, 6}}},
      {1, {Piece{0, 6, 6, 4}, Piece{1, 0, 10, 2}}},
      {2, {Piece{1, 2, 12, 5}, Piece{2, 0, 17, 1}}},
      {3, {Piece{2, 1, 18, 2}}},
  }));
  std::vector<Piece> got;
  for (const ParamPiece& p : plan.piecesOf(rank)) {
    got.emplace_back(p.param, p.paramOffset, p.flatOffset, p.numel);
  }
  CHECK(got == expected);
  CHECK(plan.paddingNumel(rank) == (rank == 3 ? 4 : 0));
}

TEST_CASE("piecesOf over all ranks covers every parameter element exactly once", "[runtime][zero]") {
  std::vector<int64_t> numels = GENERATE(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7},
                                         std::vector<int64_t>{100, 0, 1, 37},
                                         std::vector<int64_t>{3});
  int world = GENERATE(1, 2, 3, 4, 7, 16);
  auto plan = planPartition(numels, world);
  std::vector<std::vector<int>> seen(numels.size());
  for (size_t i = 0; i < numels.size(); ++i) {
    seen[i].assign(static_cast<size_t>(numels[i]), 0);
  }
  for (int r = 0; r < world; ++r) {
    for (const ParamPiece& p : plan.piecesOf(r)) {
      CHECK(p.flatOffset >= plan.partitionBegin(r));
      CHECK(p.flatOffset + p.numel <= plan.partitionEnd(r));
      CHECK(plan.ownerOf(p.flatOffset) == r);
      for (int64_t k = 0; k < p.numel; ++k) {
        seen[static_cast<size_t>(p.param)][static_cast<size_t>(p.paramOffset + k)] += 1;
      }
    }
  }
  for (const auto& s : seen) {
    CHECK(std::all_of(s.begin(), s.end(), [](int c) { return c == 1; }));
  }
}

TEST_CASE("planPartition rejects invalid inputs naming the value", "[runtime][zero]") {
  REQUIRE_THROWS_WITH(planPartition({4}, 0), Contains("worldSize must be >= 1, got '0'"));
  REQUIRE_THROWS_WITH(planPartition({4}, 2, 0), Contains("alignment must be >= 1, got '0'"));
  REQUIRE_THROWS_WITH(planPartition({4, -1}, 2), Contains("parameter 1 has a negative numel, got '-1'"));
  auto plan = planPartition({4}, 2);
  REQUIRE_THROWS_AS(plan.ownerOf(4), std::invalid_argument);
}
