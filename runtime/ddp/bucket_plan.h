#pragma once
// Pure bucket planner for stage 0 (DDP): parameter sizes in, buckets out. Torch-free (dtype and device
// are an opaque group key), so its tests start in milliseconds. Mirrors c10d's
// compute_bucket_assignment_by_size as PyTorch's DDP calls it: parameters taken in reverse order (the
// order autograd finishes their gradients), a small first bucket so communication starts early, then
// buckets of `bucketBytes`, and never two group keys (dtype/device) in one bucket.

#include <cstdint>
#include <vector>

namespace dsrt::ddp {

/// One parameter as the planner sees it.
struct ParamSize {
  int64_t numel = 0;        ///< elements
  int64_t elementSize = 4;  ///< bytes per element
  int groupKey = 0;         ///< parameters with different keys (dtype, device) never share a bucket
};

/// One reduction bucket: a contiguous flat buffer holding its parameters back to back.
struct Bucket {
  std::vector<int64_t> params;   ///< indices into the planner's input, in reverse parameter order
  std::vector<int64_t> offsets;  ///< element offset of each parameter in the bucket (same order)
  int64_t numel = 0;             ///< elements in the bucket
  int64_t bytes = 0;             ///< numel * elementSize
  int groupKey = 0;              ///< the group key all its parameters share
};

/// PyTorch DDP's first-bucket cap (dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB).
inline constexpr int64_t kDefaultFirstBucketBytes = int64_t{1} << 20;

/// Buckets in launch order (bucket 0 holds the last parameters, whose gradients are ready first).
/// A bucket is closed as soon as it reaches its cap (firstBucketBytes for the first bucket of each
/// group key, bucketBytes after that), so a parameter larger than the cap gets a bucket of its own.
/// Open buckets are closed at the end in the order their first parameter arrived. Zero-element
/// parameters are skipped. Throws std::invalid_argument for non-positive caps or element sizes.
std::vector<Bucket> planBuckets(const std::vector<ParamSize>& params, int64_t firstBucketBytes,
                                int64_t bucketBytes);

}  // namespace dsrt::ddp
