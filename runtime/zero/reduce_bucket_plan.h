#pragma once
// Pure planner for ZeRO's gradient reduction buckets. Parameters are taken in reverse registration
// order (the order autograd finishes their gradients), like DeepSpeed's ipg buckets, but each bucket
// is a run of consecutive parameters, so it covers one contiguous range of the flat layout and its
// reduce-scatter cuts into per-rank runs that follow the partition boundaries. Torch-free.

#include "runtime/zero/partition_plan.h"

#include <cstdint>
#include <vector>

namespace dsrt::zero {

/// One reduction bucket: parameters [firstParam, endParam) and the flat range they cover.
struct ReduceBucket {
  int64_t firstParam = 0;  ///< first parameter (registration order)
  int64_t endParam = 0;    ///< one past the last parameter
  int64_t flatBegin = 0;   ///< first flat element covered
  int64_t flatEnd = 0;     ///< one past the last; the bucket holding the last parameter also covers the padding
  /// Elements of [flatBegin, flatEnd) inside each rank's partition (worldSize entries, some maybe 0).
  /// In rank order they tile the bucket: rank r's run starts at flatBegin + sum of earlier counts.
  std::vector<int64_t> rankNumels;

  int64_t numel() const { return flatEnd - flatBegin; }
  /// Offset inside the bucket of `rank`'s run.
  int64_t rankOffset(int rank) const;
  /// The longest run: each rank's share of the bucket padded to an even split (reduce_scatter_tensor),
  /// rank r's run then starting at r * evenChunk(), zeros after it.
  int64_t evenChunk() const;
};

/// Buckets in launch order (bucket 0 holds the last parameters). A bucket is closed before a
/// parameter that would take it past `bucketNumel` elements (DeepSpeed's rule), so a parameter
/// larger than the cap gets a bucket of its own. The buckets tile [0, plan.paddedNumel) exactly.
/// Throws std::invalid_argument when bucketNumel < 1.
std::vector<ReduceBucket> planReduceBuckets(const PartitionPlan& plan, int64_t bucketNumel);

/// For each parameter, the index of the bucket that holds it.
std::vector<int64_t> bucketOfParam(const std::vector<ReduceBucket>& buckets, int64_t numParams);

}  // namespace dsrt::zero
