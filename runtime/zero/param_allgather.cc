#include "runtime/zero/param_allgather.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>
#include <vector>

namespace dsrt::zero {

void allgatherPartitions(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, int rank, const PartitionPlan& plan,
                         const at::Tensor& flat, int64_t bucketNumel) {
  TORCH_CHECK(flat.numel() == plan.paddedNumel, "zero: all-gather buffer has ", flat.numel(),
              " elements, expected '", plan.paddedNumel, "'");
  if (plan.worldSize == 1 || plan.partitionNumel == 0) {
    return;
  }
  TORCH_CHECK(bucketNumel >= 1, "zero_optimization.allgather_bucket_size must be >= 1, got '", bucketNumel, "'");
  const int64_t shard = std::max<int64_t>(1, bucketNumel / plan.worldSize);
  // Shards are issued back to back and awaited together: Gloo runs them in order on its own threads.
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (int64_t off = 0; off < plan.partitionNumel; off += shard) {
    const int64_t n = std::min(shard, plan.partitionNumel - off);
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < plan.worldSize; ++r) {
      outputs[0].push_back(flat.narrow(0, plan.partitionBegin(r) + off, n));
    }
    std::vector<at::Tensor> inputs{flat.narrow(0, plan.partitionBegin(rank) + off, n)};
    works.push_back(pg->allgather(outputs, inputs));
  }
  for (auto& w : works) {
    w->wait();
  }
}

}  // namespace dsrt::zero
