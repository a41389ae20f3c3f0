#pragma once
// Re-partitioning ZeRO's flat state for a different number of ranks (pure planner, torch-free).
// A checkpoint saved by N ranks holds N equal flat partitions cut by one PartitionPlan; a run on M
// ranks needs rank r's partition under another plan over the same parameters. Both plans lay the
// parameters out back to back, so the copy is a list of runs from saved partitions into the target
// partition, found through each plan's parameter pieces (robust to plans that pad differently).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/zero/partition_plan.h"

namespace dsrt::checkpoint {

/// Copy `numel` elements from saved partition `srcRank` at `srcOffset` to the target partition at
/// `dstOffset` (offsets are inside the partitions).
struct CopyRun {
  int srcRank = 0;
  int64_t srcOffset = 0;
  int64_t dstOffset = 0;
  int64_t numel = 0;
  bool operator==(const CopyRun& o) const {
    return srcRank == o.srcRank && srcOffset == o.srcOffset && dstOffset == o.dstOffset && numel == o.numel;
  }
};

/// The runs that fill `targetRank`'s partition of `target` from the partitions of `saved`, in target
/// order, adjacent runs merged; target padding is covered by no run (the caller zero-fills it).
/// Throws CheckpointError when the plans describe different parameters (names the first mismatch) or
/// targetRank is outside [0, target.worldSize).
std::vector<CopyRun> planRepartition(const zero::PartitionPlan& saved, const zero::PartitionPlan& target,
                                     int targetRank);

/// {"param_numels": [...], "alignment": a, "world_size": n, "partition_numel": p}.
nlohmann::json planToJson(const zero::PartitionPlan& plan);
/// Rebuilds the plan with zero::planPartition and checks partition_numel; `source` (a file path)
/// prefixes the CheckpointError on a missing field or a mismatch.
zero::PartitionPlan planFromJson(const nlohmann::json& j, const std::string& source);

}  // namespace dsrt::checkpoint
