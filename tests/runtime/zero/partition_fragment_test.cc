// partitionFragment: each rank's run of a parameter, as views of its partition tensors. The runs of all
// ranks, placed at their offsets, rebuild every parameter, and writes through a run land in the partition.
#include "runtime/zero/partition_fragment.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <catch2/catch.hpp>

#include <vector>

using dsrt::ParamFragment;
using dsrt::zero::PartitionTensors;
using dsrt::zero::partitionFragment;
using dsrt::zero::planPartition;

TEST_CASE("partitionFragment cuts each parameter's run out of every rank's partition", "[runtime][zero]") {
  // Numels 5, 7, 3 on 2 ranks: flat 15 padded to 16, partitions [0, 8) and [8, 16). Parameter 1 straddles
  // the cut (3 elements on rank 0, 4 on rank 1); parameter 0 lies on rank 0 only, parameter 2 on rank 1 only.
  const std::vector<int64_t> numels{5, 7, 3};
  const auto plan = planPartition(numels, 2, 2);
  const at::Tensor flat = at::arange(16, at::kFloat);
  std::vector<PartitionTensors> partitions;
  for (int r = 0; r < 2; ++r) {
    at::Tensor master = flat.narrow(0, plan.partitionBegin(r), plan.partitionNumel).clone();
    partitions.push_back({master, master.to(at::kBFloat16), master * 2});
  }
  struct Want {
    int rank;
    int64_t param, paramOffset, numel, optimizerOffset;
  };
  const std::vector<Want> wants{{0, 0, 0, 5, 0}, {0, 1, 0, 3, 5}, {0, 2, 0, 0, 0},
                                {1, 0, 0, 0, 0}, {1, 1, 3, 4, 0}, {1, 2, 0, 3, 4}};
  for (const Want& w : wants) {
    CAPTURE(w.rank, w.param);
    const ParamFragment f = partitionFragment(plan, w.rank, w.param, {numels[w.param]}, partitions[w.rank]);
    CHECK(f.partitioned);
    CHECK(f.paramOffset == w.paramOffset);
    CHECK(f.numel == w.numel);
    CHECK(f.optimizerOffset == w.optimizerOffset);
    CHECK(f.master.numel() == w.numel);
    CHECK(f.model.scalar_type() == at::kBFloat16);
    CHECK(at::equal(f.grad, f.master * 2));
  }
  for (int64_t p = 0; p < 3; ++p) {
    at::Tensor rebuilt = at::zeros({numels[p]});
    for (int r = 0; r < 2; ++r) {
      const ParamFragment f = partitionFragment(plan, r, p, {numels[p]}, partitions[r]);
      rebuilt.narrow(0, f.paramOffset, f.numel).add_(f.master);
    }
    CHECK(at::equal(rebuilt, flat.narrow(0, plan.paramOffsets[p], numels[p])));
  }
  // The runs are views: a write lands in the partition the optimizer steps.
  partitionFragment(plan, 1, 1, {7}, partitions[1]).master.fill_(-1);
  CHECK(at::equal(partitions[1].master.narrow(0, 0, 4), at::full({4}, -1.0f)));
  CHECK_THROWS_AS(partitionFragment(plan, 0, 3, {1}, partitions[0]), c10::Error);
}
