#pragma once
// Pure planner for ZeRO-3's parameter all-gather: which elements of a set of parameters each rank
// holds in its partition of the flat layout (PartitionPlan), and where they travel in one all-gather
// of equal-size per-rank pieces (Gloo's allgather needs one size for every rank: each rank packs its
// intersection with the requested parameters and pads it to the largest). Torch-free.

#include "runtime/zero/partition_plan.h"

#include <cstdint>
#include <vector>

namespace dsrt::zero {

/// A run of one parameter inside one rank's partition, and its place in that rank's piece.
struct GatherPiece {
  int64_t param = 0;            ///< parameter index (PartitionPlan order)
  int64_t paramOffset = 0;      ///< first element inside the parameter
  int64_t partitionOffset = 0;  ///< first element inside the owner's partition
  int64_t pieceOffset = 0;      ///< first element inside the owner's all-gather piece
  int64_t numel = 0;            ///< > 0
};

/// What one all-gather of a set of parameters moves.
struct GatherPlan {
  std::vector<int64_t> params;                    ///< the parameters gathered, ascending
  std::vector<std::vector<GatherPiece>> pieces;   ///< per rank, in flat order
  std::vector<int64_t> rankNumels;                ///< per rank: elements it contributes
  int64_t pieceNumel = 0;                         ///< max of rankNumels: every rank sends this many
  int64_t numel = 0;                              ///< elements of the gathered parameters
};

/// Plans the all-gather of `params` (indices into plan.paramNumels, any order; duplicates are merged).
/// Throws std::invalid_argument for an index outside the plan (the message names it).
GatherPlan planGather(const PartitionPlan& plan, std::vector<int64_t> params);

}  // namespace dsrt::zero
