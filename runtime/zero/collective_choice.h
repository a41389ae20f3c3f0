#pragma once
// How ZeRO moves flat buffers between ranks, as a pure function of the process group's backend and the
// buffers' device, so the choice is tested here without NCCL or a GPU.

#include <c10/core/DeviceType.h>

#include <string>

namespace dsrt::zero {

/// The transfer a ZeRO all-gather or reduce-scatter of flat buffers uses.
enum class FlatCollective {
  /// Gloo on host memory: send/recv straight from and into the flat buffer (no per-step allocation).
  kPointToPoint,
  /// NCCL: _allgather_base / _reduce_scatter_base on contiguous flat buffers (one kernel each).
  kFlatBase,
  /// Anything else: the list collectives every c10d backend implements.
  kList,
};

/// The transfer for `backend` (getBackendName(): "gloo", "nccl", ...) moving tensors on `device`.
FlatCollective chooseFlatCollective(const std::string& backend, c10::DeviceType device);

/// Its name in logs and test failures ("point-to-point", "flat-base", "list").
const char* flatCollectiveName(FlatCollective c);

/// How a ZeRO gradient bucket is reduce-scattered. A bucket follows the partition boundaries, so its
/// per-rank runs are uneven (often all of it in one rank's partition).
enum class BucketReduceScatter {
  /// alltoall_base with the runs' counts, then a local sum of the worldSize copies of this rank's run
  /// (Gloo: torch 1.13's Gloo has no reduce-scatter; measured faster than allreduce there, docs/zero.md).
  kAlltoall,
  /// Each run padded to the longest (an even split, as DeepSpeed pads its flat buffers), then one
  /// reduce_scatter_tensor: NCCL's fused ring kernel sums on the device, and per rank it moves no more than
  /// the alltoall's busiest rank receives ((worldSize - 1) x the longest run either way).
  kPaddedTensor,
};

/// The reduce-scatter for `backend` on `device`: kPaddedTensor where the flat-base collectives are used
/// (NCCL with CUDA tensors), kAlltoall elsewhere.
BucketReduceScatter chooseBucketReduceScatter(const std::string& backend, c10::DeviceType device);

/// Its name in logs and test failures ("alltoall", "padded-tensor").
const char* bucketReduceScatterName(BucketReduceScatter c);

}  // namespace dsrt::zero
