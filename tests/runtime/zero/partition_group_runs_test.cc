// Parameter-group runs of flat tensors and ZeRO partitions (torch-free tables).

#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "runtime/optim/param_groups.h"
#include "runtime/zero/partition_group_runs.h"
#include "runtime/zero/partition_plan.h"

using dsrt::optim::GroupRun;
using dsrt::optim::groupRunsOf;
using dsrt::optim::ParamSpan;

namespace {

std::vector<std::pair<int64_t, int>> flat(const std::vector<GroupRun>& runs) {
  std::vector<std::pair<int64_t, int>> out;
  for (const GroupRun& r : runs) {
    out.emplace_back(r.end, r.group);
  }
  return out;
}

}  // namespace

TEST_CASE("groupRunsOf merges spans of one group and gives padding to the run before it", "[runtime][zero]") {
  using V = std::vector<std::pair<int64_t, int>>;
  CHECK(flat(groupRunsOf({}, 10)) == V{{10, 0}});
  CHECK(flat(groupRunsOf({{0, 4, 1}, {4, 6, 1}}, 10)) == V{{10, 1}});
  // Out of order, a gap (alignment padding) between groups 0 and 1, trailing padding.
  CHECK(flat(groupRunsOf({{6, 2, 1}, {0, 4, 0}}, 12)) == V{{6, 0}, {12, 1}});
  // Leading padding joins the first run; zero-element spans are ignored.
  CHECK(flat(groupRunsOf({{2, 3, 2}, {5, 0, 7}, {5, 5, 0}}, 10)) == V{{5, 2}, {10, 0}});
  CHECK_THROWS_AS(groupRunsOf({{0, 4, 0}, {3, 2, 1}}, 10), std::invalid_argument);
  CHECK_THROWS_AS(groupRunsOf({{8, 4, 0}}, 10), std::invalid_argument);
}

TEST_CASE("partitionGroupRuns cuts the groups at each rank's partition", "[runtime][zero]") {
  using V = std::vector<std::pair<int64_t, int>>;
  // Parameters of 5, 3, 4 elements in groups 0, 1, 0 on 2 ranks, alignment 2: padded 12 -> 6 per rank.
  const auto plan = dsrt::zero::planPartition({5, 3, 4}, 2, 2);
  const std::vector<int> groups{0, 1, 0};
  // Rank 0 holds [0,6): param 0 whole (0..5) and the first element of param 1.
  CHECK(flat(dsrt::zero::partitionGroupRuns(plan, 0, groups)) == V{{5, 0}, {6, 1}});
  // Rank 1 holds [6,12): param 1's last two elements, then param 2 whole.
  CHECK(flat(dsrt::zero::partitionGroupRuns(plan, 1, groups)) == V{{2, 1}, {6, 0}});
  CHECK_THROWS_AS(dsrt::zero::partitionGroupRuns(plan, 0, {0, 1}), std::invalid_argument);
}
