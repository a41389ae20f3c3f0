#pragma once
// What a checkpoint's files hold, as values, and their (de)serialisation in checkpoint_file format.
// The module-states file (rank 0; layout in checkpoint_layout.h) holds the full parameters by name, the
// engine's counters and scheduler position, the client state and, for ZeRO, the partition plan; at
// stage 0 it also holds the optimizer state (as DeepSpeed does without ZeRO). Each optimizer-partition
// file holds one rank's fp32 flat partition, its optimizer state tensors and the plan it was cut by.

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/optim/flat_optimizer.h"
#include "runtime/zero/partition_plan.h"

namespace dsrt::checkpoint {

/// Rank 0's module file.
struct ModelStates {
  int zeroStage = 0;
  int worldSize = 1;                         ///< ranks that saved
  std::vector<std::string> paramNames;       ///< registration order
  std::vector<at::Tensor> params;            ///< full tensors, same order (CPU copies on read)
  nlohmann::json engineState = nlohmann::json::object();  ///< global_steps, global_samples, ...
  nlohmann::json clientState = nlohmann::json::object();  ///< the caller's, returned on load
  std::optional<zero::PartitionPlan> plan;   ///< stages >= 1
  optim::OptimizerState optimizerState;      ///< stage 0 only: the whole (replicated) optimizer
  int64_t optimizerStep = 0;                 ///< stage 0 only
};

/// One rank's ZeRO optimizer partition.
struct OptimPartition {
  int rank = 0;
  int zeroStage = 1;
  zero::PartitionPlan plan;
  at::Tensor fp32Partition;                  ///< plan.partitionNumel fp32 elements
  optim::OptimizerState state;               ///< each plan.partitionNumel elements
  int64_t step = 0;                          ///< optimizer step count
};

/// Write / read the files. Writers fsync the file (checkpoint_file.h); readers validate the format and
/// the contents (names, counts, sizes, a partition's rank against `expectedRank`) and throw
/// CheckpointError naming the file on any mismatch.
void writeModelStates(const std::string& path, const ModelStates& states);
ModelStates readModelStates(const std::string& path);
void writeOptimPartition(const std::string& path, const OptimPartition& part);
OptimPartition readOptimPartition(const std::string& path, int expectedRank);

}  // namespace dsrt::checkpoint
