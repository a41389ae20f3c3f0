#pragma once
// Collective save/load of one GradStrategy's model states (what engine.save_checkpoint /
// load_checkpoint do below the engine's counters): rank 0 writes the full parameters, the engine state
// and the client state; for ZeRO every rank writes its fp32 partition and optimizer state. Saves go
// through the atomic commit protocol (checkpoint_commit.h). Loads re-partition ZeRO state when the
// checkpoint was written by another number of ranks (stages 1 and 2 share one layout, so either loads
// the other). Stage 0 <-> ZeRO is refused (different optimizer layouts) unless the load is weights-only
// (StrategyLoadOptions::optimizerStates false: DeepSpeed's load_module_only / load_optimizer_states=False).
// Collective over the strategy's process group: every rank calls with the same dir and tag.
// Errors: CheckpointError (one line naming the file); a failure on any rank fails the call on every
// rank (no rank hangs in a barrier), and a failed save never moves `latest`.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/intrusive_ptr.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/grad_strategy.h"

namespace dsrt::checkpoint {

/// Who saves/loads: the strategy, the model's parameters (the tensors the strategy updates) and names.
struct StrategyHandle {
  GradStrategy* strategy = nullptr;
  std::vector<at::Tensor> params;          ///< registration order, as in StrategyContext::params
  std::vector<std::string> paramNames;     ///< same length; "param.<i>" when empty
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  int rank = 0;
  int worldSize = 1;
  int zeroStage = 0;
  /// The parameters' full shapes; when empty, params[i].sizes() (ZeRO-3 parameters hold no full data).
  std::vector<std::vector<int64_t>> paramShapes;
};

/// Test seam: called on each rank after each file it wrote (its path), before the commit. A throw
/// here behaves like a crash of that rank mid-save.
using FileWrittenHook = std::function<void(const std::string& path)>;

/// Saves to DIR/TAG and, when `updateLatest` (DeepSpeed's save_latest), points DIR/latest at TAG.
/// `engineState` (counters, scheduler position) and `clientState` are stored in the module file and
/// returned by loadStrategyCheckpoint.
void saveStrategyCheckpoint(const StrategyHandle& h, const std::string& dir, const std::string& tag,
                            const nlohmann::json& engineState, const nlohmann::json& clientState,
                            const FileWrittenHook& afterFile = nullptr, bool updateLatest = true);

/// What a load returns besides the restored model states.
struct LoadedStates {
  std::string tag;
  nlohmann::json engineState;
  nlohmann::json clientState;
  int savedWorldSize = 1;
};

/// What a load restores below the engine's counters. The defaults restore everything.
struct StrategyLoadOptions {
  /// true: the exact fp32 masters and the optimizer state (re-partitioned), as saved; the module file's
  /// names and shapes must match the model's (module_weights.h, strict). false (DeepSpeed's
  /// load_optimizer_states=False or load_module_only=True): only the module file's full weights are loaded,
  /// at any world size and from any ZeRO stage; the optimizer state is left as it is and any fp32 master
  /// is refreshed from the loaded weights.
  bool optimizerStates = true;
  /// DeepSpeed's load_module_strict (module_weights.h). Not strict with optimizerStates needs the same
  /// parameters as the checkpoint (the optimizer state is laid out by them).
  bool strict = true;
  /// Weights-only loads: the dtype the weights pass through before they set the parameters and masters.
  /// The engine passes its 16-bit model dtype, because DeepSpeed refreshes the fp32 masters from the
  /// 16-bit module weights (refresh_fp32_params / _restore_from_bit16_weights). kFloat: unchanged.
  c10::ScalarType weightsDtype = c10::ScalarType::Float;
};

/// Loads DIR/TAG (DIR/latest's tag when none given) into the parameters and, per `options`, the optimizer.
LoadedStates loadStrategyCheckpoint(const StrategyHandle& h, const std::string& dir,
                                    const std::optional<std::string>& tag = std::nullopt,
                                    const StrategyLoadOptions& options = {});

}  // namespace dsrt::checkpoint
