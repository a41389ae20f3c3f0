#include "runtime/checkpoint/repartition_plan.h"

#include <algorithm>
#include <stdexcept>

#include "runtime/checkpoint/checkpoint_error.h"

namespace dsrt::checkpoint {

std::vector<CopyRun> planRepartition(const zero::PartitionPlan& saved, const zero::PartitionPlan& target,
                                     int targetRank) {
  if (targetRank < 0 || targetRank >= target.worldSize) {
    throw CheckpointError("repartition: target rank must be in [0, " + std::to_string(target.worldSize) +
                          "), got '" + std::to_string(targetRank) + "'");
  }
  if (saved.paramNumels.size() != target.paramNumels.size()) {
    throw CheckpointError("repartition: checkpoint has " + std::to_string(saved.paramNumels.size()) +
                          " parameters, the model " + std::to_string(target.paramNumels.size()) + ", got '" +
                          std::to_string(saved.paramNumels.size()) + "'");
  }
  for (size_t i = 0; i < saved.paramNumels.size(); ++i) {
    if (saved.paramNumels[i] != target.paramNumels[i]) {
      throw CheckpointError("repartition: parameter " + std::to_string(i) + " has " +
                            std::to_string(target.paramNumels[i]) + " elements in the model, got '" +
                            std::to_string(saved.paramNumels[i]) + "' in the checkpoint");
    }
  }
  std::vector<CopyRun> runs;
  const int64_t dstBase = target.partitionBegin(targetRank);
  for (const zero::ParamPiece& piece : target.piecesOf(targetRank)) {
    // The same elements in the saved layout may straddle several saved partitions.
    int64_t src = saved.paramOffsets[piece.param] + piece.paramOffset;
    int64_t dst = piece.flatOffset - dstBase;
    int64_t left = piece.numel;
    while (left > 0) {
      const int owner = saved.ownerOf(src);
      const int64_t n = std::min(left, saved.partitionEnd(owner) - src);
      const CopyRun run{owner, src - saved.partitionBegin(owner), dst, n};
      if (!runs.empty() && runs.back().srcRank == run.srcRank &&
          runs.back().srcOffset + runs.back().numel == run.srcOffset &&
          runs.back().dstOffset + runs.back().numel == run.dstOffset) {
        runs.back().numel += n;
      } else {
        runs.push_back(run);
      }
      src += n;
      dst += n;
      left -= n;
    }
  }
  return runs;
}

nlohmann::json planToJson(const zero::PartitionPlan& plan) {
  return {{"param_numels", plan.paramNumels},
          {"alignment", plan.alignment},
          {"world_size", plan.worldSize},
          {"partition_numel", plan.partitionNumel}};
}

zero::PartitionPlan planFromJson(const nlohmann::json& j, const std::string& source) {
  zero::PartitionPlan plan;
  try {
    plan = zero::planPartition(j.at("param_numels").get<std::vector<int64_t>>(), j.at("world_size").get<int>(),
                               j.at("alignment").get<int64_t>());
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(source + ": malformed partition metadata, got '" + std::string(e.what()) + "'");
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(source + ": invalid partition metadata, got '" + std::string(e.what()) + "'");
  }
  if (j.contains("partition_numel") && j["partition_numel"].get<int64_t>() != plan.partitionNumel) {
    throw CheckpointError(source + ": partition_numel does not match its plan (" +
                          std::to_string(plan.partitionNumel) + "), got '" + j["partition_numel"].dump() + "'");
  }
  return plan;
}

}  // namespace dsrt::checkpoint
