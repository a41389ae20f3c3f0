#pragma once
// Pure planner for ZeRO's flat partitions: parameter sizes in, the flat layout and each rank's share
// out. Torch-free, so its table tests start in milliseconds. Mirrors DeepSpeed's stage 1/2 layout
// (stage_1_and_2.py): all parameters back to back in registration order in one flat buffer, padded at
// the end to a multiple of worldSize * alignment, then cut into worldSize equal partitions; a
// parameter may straddle partitions. Stage 3, offload and re-partitioning checkpoints reuse it (a
// checkpoint saved under one plan is re-cut under another through piecesOf()).

#include <cstdint>
#include <vector>

namespace dsrt::zero {

/// DeepSpeed's nccl_start_alignment_factor: every partition starts on a multiple of this many elements.
inline constexpr int64_t kDefaultAlignment = 2;

/// A contiguous run of one parameter that lies inside one rank's partition.
struct ParamPiece {
  int64_t param = 0;        ///< index into PartitionPlan::paramNumels
  int64_t paramOffset = 0;  ///< first element of the piece inside the parameter
  int64_t flatOffset = 0;   ///< first element of the piece in the flat buffer
  int64_t numel = 0;        ///< elements in the piece (> 0)
};

/// The flat layout and its cut into equal per-rank partitions. A value type; see planPartition().
struct PartitionPlan {
  int worldSize = 1;                  ///< number of partitions
  int64_t alignment = 1;              ///< partition sizes are multiples of this (elements)
  std::vector<int64_t> paramNumels;   ///< elements of each parameter, registration order
  std::vector<int64_t> paramOffsets;  ///< first element of each parameter in the flat buffer
  int64_t numel = 0;                  ///< sum of paramNumels (the unpadded flat size)
  int64_t paddedNumel = 0;            ///< numel rounded up to a multiple of worldSize * alignment
  int64_t partitionNumel = 0;         ///< paddedNumel / worldSize, the same for every rank

  /// First flat element of `rank`'s partition.
  int64_t partitionBegin(int rank) const;
  /// One past the last flat element of `rank`'s partition.
  int64_t partitionEnd(int rank) const;
  /// Elements of `rank`'s partition past `numel` (padding; DeepSpeed's groups_padding).
  int64_t paddingNumel(int rank) const;
  /// The rank whose partition holds flat element `flatOffset` (< paddedNumel).
  int ownerOf(int64_t flatOffset) const;
  /// The parameter pieces inside flat range [begin, end), in flat order; zero-element parameters
  /// and padding yield no piece.
  std::vector<ParamPiece> piecesIn(int64_t begin, int64_t end) const;
  /// The parameter pieces `rank` owns: piecesIn(partitionBegin(rank), partitionEnd(rank)).
  std::vector<ParamPiece> piecesOf(int rank) const;
};

/// Lays `paramNumels` out flat and cuts the padded buffer into `worldSize` equal partitions.
/// Throws std::invalid_argument for worldSize < 1, alignment < 1 or a negative numel (the message
/// names the offending value).
PartitionPlan planPartition(const std::vector<int64_t>& paramNumels, int worldSize,
                            int64_t alignment = kDefaultAlignment);

}  // namespace dsrt::zero
