#include "runtime/checkpoint/repartition.h"

#include <ATen/ATen.h>

#include <set>

#include "runtime/checkpoint/checkpoint_error.h"

namespace dsrt::checkpoint {

std::vector<int> sourceRanks(const zero::PartitionPlan& saved, const zero::PartitionPlan& target, int targetRank) {
  std::set<int> ranks;
  for (const CopyRun& run : planRepartition(saved, target, targetRank)) ranks.insert(run.srcRank);
  return {ranks.begin(), ranks.end()};
}

at::Tensor repartition(const std::vector<at::Tensor>& savedPartitions, const zero::PartitionPlan& saved,
                       const zero::PartitionPlan& target, int targetRank) {
  if (static_cast<int>(savedPartitions.size()) != saved.worldSize) {
    throw CheckpointError("repartition: expected one partition per saved rank (" + std::to_string(saved.worldSize) +
                          "), got '" + std::to_string(savedPartitions.size()) + "'");
  }
  const std::vector<CopyRun> runs = planRepartition(saved, target, targetRank);
  c10::optional<at::ScalarType> dtype;
  for (const CopyRun& run : runs) {
    const at::Tensor& src = savedPartitions[run.srcRank];
    if (!src.defined() || src.dim() != 1 || src.numel() != saved.partitionNumel) {
      throw CheckpointError("repartition: saved partition " + std::to_string(run.srcRank) + " must be 1-D with " +
                            std::to_string(saved.partitionNumel) + " elements, got '" +
                            (src.defined() ? std::to_string(src.numel()) : std::string("undefined")) + "'");
    }
    if (dtype && *dtype != src.scalar_type()) {
      throw CheckpointError("repartition: saved partitions differ in dtype, got '" +
                            std::string(c10::toString(src.scalar_type())) + "'");
    }
    dtype = src.scalar_type();
  }
  at::Tensor out = at::zeros({target.partitionNumel}, at::TensorOptions().dtype(dtype.value_or(at::kFloat)));
  for (const CopyRun& run : runs) {
    out.narrow(0, run.dstOffset, run.numel).copy_(savedPartitions[run.srcRank].narrow(0, run.srcOffset, run.numel));
  }
  return out;
}

at::Tensor consolidateFlat(const std::vector<at::Tensor>& savedPartitions, const zero::PartitionPlan& saved) {
  // One rank with alignment 1 holds exactly the unpadded flat buffer.
  const zero::PartitionPlan whole = zero::planPartition(saved.paramNumels, 1, 1);
  return repartition(savedPartitions, saved, whole, 0).narrow(0, 0, saved.numel);
}

}  // namespace dsrt::checkpoint
