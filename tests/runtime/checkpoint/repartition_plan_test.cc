#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/repartition_plan.h"

using namespace dsrt::checkpoint;
using dsrt::zero::PartitionPlan;
using dsrt::zero::planPartition;
using Catch::Contains;

namespace {

// Element i of the unpadded flat buffer has value i + 1; padding is 0.
std::vector<std::vector<float>> cut(const PartitionPlan& plan) {
  std::vector<std::vector<float>> parts(plan.worldSize, std::vector<float>(plan.partitionNumel, 0.0f));
  for (int64_t i = 0; i < plan.numel; ++i) parts[i / plan.partitionNumel][i % plan.partitionNumel] = float(i + 1);
  return parts;
}

}  // namespace

TEST_CASE("planRepartition rebuilds every rank's partition for every N -> M in 1..4", "[checkpoint]") {
  const auto numels = GENERATE(std::vector<int64_t>{1}, std::vector<int64_t>{5, 3, 8},
                               std::vector<int64_t>{7, 0, 13, 1, 2}, std::vector<int64_t>{64, 64},
                               std::vector<int64_t>{0});
  const int64_t savedAlign = GENERATE(1, 2, 4);
  const int64_t targetAlign = GENERATE(1, 2);
  for (int n = 1; n <= 4; ++n) {
    for (int m = 1; m <= 4; ++m) {
      const PartitionPlan saved = planPartition(numels, n, savedAlign);
      const PartitionPlan target = planPartition(numels, m, targetAlign);
      const auto savedParts = cut(saved);
      const auto expected = cut(target);
      for (int r = 0; r < m; ++r) {
        INFO("N=" << n << " M=" << m << " rank " << r << " numel " << saved.numel << " align " << savedAlign << "->"
                  << targetAlign);
        std::vector<float> got(target.partitionNumel, 0.0f);
        int64_t copied = 0;
        for (const CopyRun& run : planRepartition(saved, target, r)) {
          REQUIRE(run.numel > 0);
          REQUIRE(run.srcOffset + run.numel <= saved.partitionNumel);
          REQUIRE(run.dstOffset + run.numel <= target.partitionNumel);
          for (int64_t k = 0; k < run.numel; ++k) got[run.dstOffset + k] = savedParts[run.srcRank][run.srcOffset + k];
          copied += run.numel;
        }
        CHECK(got == expected[r]);
        CHECK(copied == target.partitionNumel - target.paddingNumel(r));
      }
    }
  }
}

TEST_CASE("planRepartition merges contiguous runs into one per source partition", "[checkpoint]") {
  const PartitionPlan saved = planPartition({5, 3, 8}, 2, 2);   // 16 -> partitions of 8
  const PartitionPlan target = planPartition({5, 3, 8}, 1, 2);  // one partition of 16
  CHECK(planRepartition(saved, target, 0) == std::vector<CopyRun>{{0, 0, 0, 8}, {1, 0, 8, 8}});
}

TEST_CASE("planRepartition refuses plans over different parameters", "[checkpoint]") {
  const PartitionPlan saved = planPartition({5, 3}, 2);
  REQUIRE_THROWS_WITH(planRepartition(saved, planPartition({5, 4}, 2), 0),
                      Contains("parameter 1 has 4 elements in the model, got '3' in the checkpoint"));
  REQUIRE_THROWS_WITH(planRepartition(saved, planPartition({5}, 2), 0), Contains("checkpoint has 2 parameters"));
  REQUIRE_THROWS_WITH(planRepartition(saved, saved, 2), Contains("target rank must be in [0, 2), got '2'"));
}

TEST_CASE("a plan survives its JSON form and a bad one names the file", "[checkpoint]") {
  const PartitionPlan plan = planPartition({7, 0, 13}, 3, 2);
  const PartitionPlan back = planFromJson(planToJson(plan), "f.pt");
  CHECK(back.paramNumels == plan.paramNumels);
  CHECK(back.partitionNumel == plan.partitionNumel);
  CHECK(back.worldSize == 3);
  auto j = planToJson(plan);
  j["partition_numel"] = 99;
  REQUIRE_THROWS_WITH(planFromJson(j, "f.pt"), Contains("f.pt: partition_numel does not match") && Contains("got '99'"));
  j.erase("alignment");
  REQUIRE_THROWS_WITH(planFromJson(j, "f.pt"), Contains("f.pt: malformed partition metadata"));
  j = planToJson(plan);
  j["world_size"] = 0;
  REQUIRE_THROWS_WITH(planFromJson(j, "f.pt"), Contains("f.pt: invalid partition metadata"));
}
