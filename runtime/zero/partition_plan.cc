#include "runtime/zero/partition_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dsrt::zero {

int64_t PartitionPlan::partitionBegin(int rank) const {
  return static_cast<int64_t>(rank) * partitionNumel;
}

int64_t PartitionPlan::partitionEnd(int rank) const {
  return partitionBegin(rank) + partitionNumel;
}

int64_t PartitionPlan::paddingNumel(int rank) const {
  return partitionEnd(rank) - std::clamp(numel, partitionBegin(rank), partitionEnd(rank));
}

int PartitionPlan::ownerOf(int64_t flatOffset) const {
  if (flatOffset < 0 || flatOffset >= paddedNumel) {
    throw std::invalid_argument("ownerOf: flat offset outside [0, " + std::to_string(paddedNumel) + "), got '" +
                                std::to_string(flatOffset) + "'");
  }
  return static_cast<int>(flatOffset / partitionNumel);
}

std::vector<ParamPiece> PartitionPlan::piecesIn(int64_t begin, int64_t end) const {
  std::vector<ParamPiece> pieces;
  // The first parameter that ends after `begin`; parameters are sorted by offset.
  auto first = std::upper_bound(paramOffsets.begin(), paramOffsets.end(), begin);
  size_t i = first == paramOffsets.begin() ? 0 : static_cast<size_t>(first - paramOffsets.begin()) - 1;
  for (; i < paramNumels.size() && paramOffsets[i] < end; ++i) {
    int64_t lo = std::max(begin, paramOffsets[i]);
    int64_t hi = std::min(end, paramOffsets[i] + paramNumels[i]);
    if (hi > lo) {
      pieces.push_back(ParamPiece{static_cast<int64_t>(i), lo - paramOffsets[i], lo, hi - lo});
    }
  }
  return pieces;
}

std::vector<ParamPiece> PartitionPlan::piecesOf(int rank) const {
  return piecesIn(partitionBegin(rank), partitionEnd(rank));
}

PartitionPlan planPartition(const std::vector<int64_t>& paramNumels, int worldSize, int64_t alignment) {
  if (worldSize < 1) {
    throw std::invalid_argument("planPartition: worldSize must be >= 1, got '" + std::to_string(worldSize) + "'");
  }
  if (alignment < 1) {
    throw std::invalid_argument("planPartition: alignment must be >= 1, got '" + std::to_string(alignment) + "'");
  }
  PartitionPlan plan;
  plan.worldSize = worldSize;
  plan.alignment = alignment;
  plan.paramNumels = paramNumels;
  plan.paramOffsets.reserve(paramNumels.size());
  for (size_t i = 0; i < paramNumels.size(); ++i) {
    if (paramNumels[i] < 0) {
      throw std::invalid_argument("planPartition: parameter " + std::to_string(i) + " has a negative numel, got '" +
                                  std::to_string(paramNumels[i]) + "'");
    }
    plan.paramOffsets.push_back(plan.numel);
    plan.numel += paramNumels[i];
  }
  // DeepSpeed pads the whole group once (align_dense_tensors), not each parameter: partitions are
  // equal so all-gather can use one fixed size per rank.
  const int64_t unit = alignment * worldSize;
  plan.paddedNumel = (plan.numel + unit - 1) / unit * unit;
  plan.partitionNumel = plan.paddedNumel / worldSize;
  return plan;
}

}  // namespace dsrt::zero
