// ZeRO-3's pure planners: which pieces an all-gather moves (planGather) and what the coordinator does
// at each fetch of a recorded trace (planFetches).
#include "runtime/zero/stage3_fetch_plan.h"
#include "runtime/zero/stage3_gather_plan.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <tuple>
#include <vector>

using dsrt::zero::FetchPlan;
using dsrt::zero::FetchSettings;
using dsrt::zero::GatherPiece;
using dsrt::zero::planFetches;
using dsrt::zero::planGather;
using dsrt::zero::planPartition;
using Catch::Matchers::Contains;

namespace {
using Numels = std::vector<int64_t>;
using Units = std::vector<int>;
}  // namespace

TEST_CASE("planGather cuts each parameter at partition boundaries and pads pieces to the largest rank",
          "[runtime][zero][stage3]") {
  // numels {10, 7, 3} on 4 ranks: padded 24, partitions of 6: [0,6) [6,12) [12,18) [18,24).
  // param 0 = [0,10), param 1 = [10,17), param 2 = [17,20).
  auto plan = planPartition({10, 7, 3}, 4);
  auto [params, rankNumels, pieceNumel, numel] = GENERATE(table<std::vector<int64_t>, Numels, int64_t, int64_t>({
      {{0}, {6, 4, 0, 0}, 6, 10},
      {{1}, {0, 2, 5, 0}, 5, 7},
      {{2}, {0, 0, 1, 2}, 2, 3},
      {{2, 0, 2}, {6, 4, 1, 2}, 6, 13},  // unordered with a duplicate: merged and sorted
      {{0, 1, 2}, {6, 6, 6, 2}, 6, 20},
      {{}, {0, 0, 0, 0}, 0, 0},
  }));
  auto g = planGather(plan, params);
  CHECK(g.rankNumels == rankNumels);
  CHECK(g.pieceNumel == pieceNumel);
  CHECK(g.numel == numel);
  // Every element of every gathered parameter is covered exactly once, from its owner's partition.
  for (int64_t p : g.params) {
    std::vector<int> covered(static_cast<size_t>(plan.paramNumels[static_cast<size_t>(p)]), 0);
    for (int r = 0; r < 4; ++r) {
      int64_t expectOffset = 0;
      for (const GatherPiece& piece : g.pieces[static_cast<size_t>(r)]) {
        CHECK(piece.pieceOffset == expectOffset);  // pieces are packed back to back
        expectOffset += piece.numel;
        if (piece.param != p) {
          continue;
        }
        const int64_t flat = plan.paramOffsets[static_cast<size_t>(p)] + piece.paramOffset;
        CHECK(plan.ownerOf(flat) == r);
        CHECK(piece.partitionOffset == flat - plan.partitionBegin(r));
        for (int64_t e = 0; e < piece.numel; ++e) {
          covered[static_cast<size_t>(piece.paramOffset + e)] += 1;
        }
      }
    }
    for (int c : covered) {
      CHECK(c == 1);
    }
  }
}

TEST_CASE("planGather rejects a parameter index outside the plan", "[runtime][zero][stage3]") {
  auto plan = planPartition({4, 4}, 2);
  REQUIRE_THROWS_WITH(planGather(plan, {0, 2}), Contains("outside [0, 2), got '2'"));
  REQUIRE_THROWS_WITH(planGather(plan, {-1}), Contains("got '-1'"));
}

TEST_CASE("planFetches prefetches, keeps and evicts by the stage3 limits", "[runtime][zero][stage3]") {
  // The trace of a 3-layer model: forward 0 1 2, backward 2 1 0; units of 100, 50 and 10 elements.
  const Units trace{0, 1, 2, 2, 1, 0};
  const Numels numels{100, 50, 10};
  using Prefetches = std::vector<Units>;
  using Releases = std::vector<bool>;
  using Evicts = std::vector<Units>;
  // prefetch bucket, max live, max reuse -> per position: evicted before the fetch, prefetched after
  // it, released after use; most elements live at once; elements gathered in all.
  auto [bucket, maxLive, maxReuse, evict, prefetch, release, peak, fetched] =
      GENERATE(table<int64_t, int64_t, int64_t, Evicts, Prefetches, Releases, int64_t, int64_t>({
          // Unlimited: everything prefetched at the first fetch and kept until its last use.
          {1000, 1000, 1000, {{}, {}, {}, {}, {}, {}}, {{1, 2}, {}, {}, {}, {}, {}}, {0, 0, 0, 1, 1, 1}, 160, 160},
          // No prefetch, reuse distance 0: only the last layer is kept (used again right away).
          {0, 1000, 0, {{}, {}, {}, {}, {}, {}}, {{}, {}, {}, {}, {}, {}}, {1, 1, 0, 1, 1, 1}, 100, 310},
          // Reuse up to 100 elements: unit 1 (20 in between) and 2 are kept, unit 0 (120) is not.
          {0, 1000, 100, {{}, {}, {}, {}, {}, {}}, {{}, {}, {}, {}, {}, {}}, {1, 0, 0, 1, 1, 1}, 100, 260},
          // Prefetch bucket 55 takes unit 1 (50) but not 1 + 2 (60); later unit 2, then unit 1 again.
          {55, 1000, 0, {{}, {}, {}, {}, {}, {}}, {{1}, {2}, {1}, {}, {}, {}}, {1, 1, 0, 1, 1, 1}, 150, 310},
          // Max live 120: unit 0 is kept, then evicted to make room for unit 1; prefetch stops at 120.
          {1000, 120, 1000, {{}, {0}, {}, {}, {}, {}}, {{}, {2}, {}, {}, {}, {}}, {0, 0, 0, 1, 1, 1}, 100, 260},
          // Max live 55: unit 0 (100) is needed whole but not kept; unit 1 is kept, evicted for unit 2.
          {0, 55, 1000, {{}, {}, {1}, {}, {}, {}}, {{}, {}, {}, {}, {}, {}}, {1, 0, 0, 1, 1, 1}, 100, 310},
      }));
  FetchSettings s;
  s.prefetchBucketNumel = bucket;
  s.maxLiveNumel = maxLive;
  s.maxReuseDistance = maxReuse;
  FetchPlan plan = planFetches(trace, numels, s);
  REQUIRE(plan.steps.size() == trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    INFO("position " << i);
    CHECK(plan.steps[i].prefetch == prefetch[i]);
    CHECK(plan.steps[i].release == release[i]);
    CHECK(plan.steps[i].evict == evict[i]);
  }
  CHECK(plan.peakLiveNumel == peak);
  CHECK(plan.fetchedNumel == fetched);
}

TEST_CASE("planFetches evicts the kept unit used farthest ahead to make room under max live",
          "[runtime][zero][stage3]") {
  // Units 0 and 1 (40 each) are kept for their reuse; fetching unit 2 (40) with max live 100 would
  // make 120, so the kept unit needed last (0, next used at position 6) goes first.
  const Units trace{0, 1, 2, 3, 1, 2, 0};
  const Numels numels{40, 40, 40, 0};
  FetchSettings s;
  s.prefetchBucketNumel = 0;
  s.maxLiveNumel = 100;
  s.maxReuseDistance = 1000;
  FetchPlan plan = planFetches(trace, numels, s);
  CHECK_FALSE(plan.steps[0].release);
  CHECK_FALSE(plan.steps[1].release);
  CHECK(plan.steps[2].evict == Units{0});
  CHECK_FALSE(plan.steps[2].release);
  for (size_t i = 3; i < trace.size(); ++i) {
    CHECK(plan.steps[i].release);
    CHECK(plan.steps[i].evict.empty());
  }
  CHECK(plan.peakLiveNumel == 80);
  CHECK(plan.fetchedNumel == 40 + 40 + 40 + 40);  // unit 0 gathered again at position 6
}

TEST_CASE("planFetches handles an empty trace and rejects unknown units", "[runtime][zero][stage3]") {
  CHECK(planFetches({}, {}, FetchSettings{}).steps.empty());
  REQUIRE_THROWS_WITH(planFetches({0, 3}, {1, 2}, FetchSettings{}), Contains("trace[1] is not a unit in [0, 2), got '3'"));
  FetchSettings bad;
  bad.maxLiveNumel = -1;
  REQUIRE_THROWS_WITH(planFetches({0}, {1}, bad), Contains("got '-1'"));
}

TEST_CASE("markPersistent keeps small parameters within the model budget, in registration order, like DeepSpeed",
          "[runtime][zero][stage3]") {
  using Row = std::tuple<std::vector<int64_t>, int64_t, int64_t, std::vector<bool>>;
  auto [numels, paramThreshold, modelThreshold, expected] = GENERATE(table<std::vector<int64_t>, int64_t, int64_t,
                                                                           std::vector<bool>>({
      Row{{10, 100, 5, 1000}, 100, INT64_MAX, {true, true, true, false}},  // only the per-parameter size
      Row{{10, 100, 5, 1000}, 0, INT64_MAX, {false, false, false, false}},
      Row{{10, 100, 5, 1000}, 100, 110, {true, true, false, false}},      // 10 + 100 fills the budget
      Row{{10, 100, 5, 1000}, 100, 20, {true, false, true, false}},       // 100 is skipped, 5 still fits
      Row{{10, 100, 5, 1000}, 100, 0, {false, false, false, false}},
      Row{{0, 0}, 0, 0, {true, true}},                                     // empty tensors cost nothing
      Row{{}, 100, 100, {}},
  }));
  INFO("param threshold " << paramThreshold << ", model threshold " << modelThreshold);
  CHECK(dsrt::zero::markPersistent(numels, paramThreshold, modelThreshold) == expected);
}

TEST_CASE("markPersistent rejects negative sizes and thresholds", "[runtime][zero][stage3]") {
  CHECK_THROWS_WITH(dsrt::zero::markPersistent({1, -2}, 10, 10), Catch::Contains("got '-2'"));
  CHECK_THROWS_WITH(dsrt::zero::markPersistent({1}, -1, 10), Catch::Contains("got '-1, 10'"));
}
