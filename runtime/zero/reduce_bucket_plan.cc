#include "runtime/zero/reduce_bucket_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dsrt::zero {

int64_t ReduceBucket::rankOffset(int rank) const {
  int64_t offset = 0;
  for (int r = 0; r < rank; ++r) {
    offset += rankNumels[static_cast<size_t>(r)];
  }
  return offset;
}

int64_t ReduceBucket::evenChunk() const {
  return rankNumels.empty() ? 0 : *std::max_element(rankNumels.begin(), rankNumels.end());
}

namespace {

ReduceBucket makeBucket(const PartitionPlan& plan, int64_t firstParam, int64_t endParam) {
  ReduceBucket b;
  b.firstParam = firstParam;
  b.endParam = endParam;
  const auto n = static_cast<int64_t>(plan.paramNumels.size());
  b.flatBegin = firstParam < n ? plan.paramOffsets[static_cast<size_t>(firstParam)] : plan.numel;
  // The bucket ending at the last parameter also carries the padding, so partitions are covered whole.
  b.flatEnd = endParam < n ? plan.paramOffsets[static_cast<size_t>(endParam)] : plan.paddedNumel;
  b.rankNumels.resize(static_cast<size_t>(plan.worldSize));
  for (int r = 0; r < plan.worldSize; ++r) {
    int64_t lo = std::max(b.flatBegin, plan.partitionBegin(r));
    int64_t hi = std::min(b.flatEnd, plan.partitionEnd(r));
    b.rankNumels[static_cast<size_t>(r)] = std::max<int64_t>(0, hi - lo);
  }
  return b;
}

}  // namespace

std::vector<ReduceBucket> planReduceBuckets(const PartitionPlan& plan, int64_t bucketNumel) {
  if (bucketNumel < 1) {
    throw std::invalid_argument("zero_optimization.reduce_bucket_size must be >= 1, got '" +
                                std::to_string(bucketNumel) + "'");
  }
  std::vector<ReduceBucket> buckets;
  const auto n = static_cast<int64_t>(plan.paramNumels.size());
  int64_t end = n;  // the open bucket holds parameters [i+1, end)
  int64_t filled = 0;
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t numel = plan.paramNumels[static_cast<size_t>(i)];
    if (filled > 0 && filled + numel > bucketNumel) {
      buckets.push_back(makeBucket(plan, i + 1, end));
      end = i + 1;
      filled = 0;
    }
    filled += numel;
  }
  if (end > 0 || (buckets.empty() && plan.paddedNumel > 0)) {
    buckets.push_back(makeBucket(plan, 0, end));
  }
  return buckets;
}

std::vector<int64_t> bucketOfParam(const std::vector<ReduceBucket>& buckets, int64_t numParams) {
  std::vector<int64_t> owner(static_cast<size_t>(numParams), -1);
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (int64_t p = buckets[b].firstParam; p < buckets[b].endParam; ++p) {
      owner[static_cast<size_t>(p)] = static_cast<int64_t>(b);
    }
  }
  return owner;
}

}  // namespace dsrt::zero
