#pragma once
// The seam between the engine and the data-parallel strategies: stage 0 (bucketed DDP, runtime/ddp/)
// and ZeRO stages 1 and 2 (runtime/zero/). A strategy owns gradient reduction and the optimizer
// update; the engine owns micro-step counting, loss scaling by 1/gradient_accumulation_steps, the
// LR schedule, gradient clipping policy, timings and logging.
//
// Call sequence, per micro-step (engine.backward(loss) then engine.step()):
//   beginBackward(isBoundary)   before loss.backward(); the strategy may arm autograd hooks
//   <loss.backward()>           hooks may launch asynchronous reductions
//   endBackward(isBoundary)     after loss.backward(); waits for whatever this micro-step launched
//   at a boundary only, in engine.step():
//     gradNorm()                only if gradient_clipping > 0: L2 norm of the averaged global gradient
//     step(lr, clipScale)       optimizer update of what this rank owns; params whole again afterwards
//     zeroGrad()
//
// Gradient contract: after endBackward(true), the gradient the strategy holds (whole or partitioned)
// equals the average over ranks of the sum, over the micro-steps since the last zeroGrad(), of each
// rank's p.grad contributions. Stage 0 reduces only at boundaries (non-boundary micro-steps just
// accumulate into p.grad); ZeRO-2 may reduce every micro-step to release full gradients.
// Parameters whose gradient is undefined at a boundary (unused in the forward) count as zeros.
//
// Threading: every method is called from the thread that runs the training loop; autograd hooks may
// run on autograd's thread, which for CPU tensors is the calling thread.
// Errors: TORCH_CHECK (c10::Error) only.

#include "runtime/comms/comms_log.h"
#include "runtime/engine_timers.h"
#include "runtime/param_fragment.h"

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace dsrt {
namespace optim {
class FlatOptimizer;  // runtime/optim/flat_optimizer.h
}  // namespace optim
namespace zero {
struct PipelineStreams;  // runtime/zero/offload_pipeline.h
}  // namespace zero

/// Builds the optimizer (type and hyper-parameters come from the ds_config) over one flat fp32
/// tensor. The optimizer updates `flatParams` in place; the caller keeps `flatParams` alive.
using OptimizerFactory = std::function<std::unique_ptr<optim::FlatOptimizer>(at::Tensor flatParams)>;

/// Everything a strategy needs; built by the engine from the model and the ds_config.
struct StrategyContext {
  /// The model's trainable parameters (requires_grad) in registration order. The strategy updates
  /// them in place (data only); it never replaces the tensors the module holds.
  std::vector<at::Tensor> params;
  /// Data-parallel group over all ranks (Gloo on CPU, NCCL on CUDA); never null, also for 1 rank.
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  int rank = 0;       ///< this rank in pg
  int worldSize = 1;  ///< ranks in pg
  /// zero_optimization.reduce_bucket_size: elements (not bytes, as in DeepSpeed) per reduction bucket.
  int64_t reduceBucketNumel = 500000000;
  /// zero_optimization.allgather_bucket_size: elements per all-gather bucket (ZeRO 1/2).
  int64_t allgatherBucketNumel = 500000000;
  bool overlapComm = true;          ///< launch reductions from autograd hooks during backward
  bool reduceScatter = true;        ///< ZeRO-2: reduce-scatter instead of allreduce
  bool contiguousGradients = true;  ///< ZeRO-2: copy gradients into one contiguous buffer
  OptimizerFactory makeOptimizer;   ///< never empty
  /// torch param groups: the group of each parameter (params' order), or empty for one group. The
  /// strategy tells its optimizer which runs of its flat tensor each group owns (FlatOptimizer::setGroupRuns).
  std::vector<int> paramGroups;
  /// communication_data_type: gradients are reduced in this dtype (converted from and back to the
  /// params' dtype around each collective); nullopt: the params' own dtype, as DeepSpeed.
  std::optional<at::ScalarType> commDtype;
  /// zero_optimization.ignore_unused_parameters false with offload_optimizer at stages 1 and 2, where DeepSpeed
  /// asserts every parameter of a rank's partition got a gradient since the last step: the strategy records
  /// which did (GradStrategy::unusedParameters).
  bool trackUnusedParameters = false;
  /// zero_optimization.offload_optimizer.device == cpu: the fp32 master partition, the optimizer state
  /// and an fp32 gradient partition live in host memory and the optimizer steps there (ZeRO 1/2).
  bool offloadOptimizer = false;
  /// offload_optimizer.pin_memory: host buffers are page-locked (only where CUDA is available).
  bool pinMemory = false;
  /// offload_param.pin_memory: ZeRO-3's host parameter partition is page-locked (DeepSpeed pins it by this
  /// flag, not offload_optimizer's); only where CUDA is available.
  bool paramPinMemory = false;
  /// ZeRO-3 (runtime/zero/stage3_strategy.h), all in elements as DeepSpeed:
  /// stage3_prefetch_bucket_size: most elements prefetched at one fetch (0: no prefetch).
  int64_t stage3PrefetchBucketNumel = 50000000;
  /// stage3_param_persistence_threshold: parameters with at most this many elements stay gathered.
  int64_t stage3ParamPersistenceThreshold = 100000;
  /// stage3_model_persistence_threshold: cap on the total elements of persistent parameters.
  int64_t stage3ModelPersistenceThreshold = INT64_MAX;
  /// stage3_max_live_parameters: cap on gathered (non-persistent) elements kept alive at once.
  int64_t stage3MaxLiveParameters = 1000000000;
  /// stage3_max_reuse_distance: keep a module gathered after use if it is used again within this many
  /// elements of other fetches.
  int64_t stage3MaxReuseDistance = 1000000000;
  /// ZeRO-3 offload_param.device == cpu: this rank's parameter partition lives in host memory (gathers
  /// copy from it); libdsrt pairs it with offloadOptimizer.
  bool offloadParam = false;
  /// wall_clock_breakdown: where strategies add their sub-phases (reduce-scatter waits, gradient copies,
  /// optimizer step, all-gather); null when built without an engine. Owned by the engine, outlives the strategy.
  EngineTimers* timers = nullptr;
  /// comms_logger: where the strategy records its collectives (comms/pending_comm.h); null records nothing.
  std::shared_ptr<comms::CommsLog> commsLog;
  /// Tests only: with offload, a CPU model's host copies take the accelerator's path on these streams
  /// (compute, download, upload; fakes that run work when waited for), so the ordering of offload's
  /// gradient downloads and offload_param's parameter uploads is checked without a device. Null in use.
  const zero::PipelineStreams* testStreams = nullptr;
};

/// Stage 0 (DDP) or ZeRO-n. Owns gradient reduction and the optimizer update. Not copyable.
class GradStrategy {
 public:
  virtual ~GradStrategy() = default;

  /// Before loss.backward() of a micro-step; `isBoundary` is true on the last micro-step of an
  /// accumulation window (always true when gradient_accumulation_steps == 1).
  virtual void beginBackward(bool isBoundary) = 0;

  /// After loss.backward(): completes the reductions this micro-step started (at a boundary: all of
  /// them, so the averaged gradient is final).
  virtual void endBackward(bool isBoundary) = 0;

  /// At a boundary, after endBackward(true): the global L2 norm of the averaged gradient (identical
  /// on every rank; collective for partitioned strategies, so every rank must call it).
  virtual double gradNorm() = 0;

  /// At a boundary: gradients *= clipScale (1.0 = no clipping), one optimizer update with learning
  /// rate `lr` on what this rank owns, then every rank's params hold the full updated values.
  virtual void step(double lr, double clipScale) = 0;

  /// Clears the accumulated gradients (p.grad and any partition buffers).
  virtual void zeroGrad() = 0;

  /// The optimizer over what this rank owns (built with StrategyContext::makeOptimizer). The engine
  /// uses it for schedulers that cycle momentum (setBetas/setMomentum), stateBytes() and checkpoints.
  virtual optim::FlatOptimizer& optimizer() = 0;

  /// Bytes of parameters + gradients + optimizer state this rank holds (ZeRO paper accounting:
  /// counts the model's own params and grads, plus the strategy's fp32 copies and optimizer state).
  virtual int64_t modelStateBytes() const = 0;

  /// Checkpoints and ds_to_fp32: fp32 copies of every parameter's full value (the fp32 master values
  /// where the strategy keeps masters), registration order, shaped like the parameter. Collective
  /// where parameters are partitioned (ZeRO-3 gathers them): every rank calls it.
  virtual std::vector<at::Tensor> fullParams() = 0;

  /// Sets every parameter, the model's tensors and any fp32 master copy, from full values in
  /// registration order (any floating dtype, shapes as the parameters'). Collective for ZeRO-3.
  virtual void loadFullParams(const std::vector<at::Tensor>& full) = 0;

  /// fp16: after endBackward(true), whether the gradient this rank holds for the step (whole, or its
  /// partition) contains inf or NaN. Local; the engine agrees on it across ranks. Strategies that keep
  /// 16-bit gradients override it; the default refuses, naming the strategy's missing support.
  virtual bool hasOverflow() {
    TORCH_CHECK(false, "fp16: this data-parallel strategy has no gradient overflow check, got 'fp16.enabled'");
  }

  /// Bytes this rank keeps in host memory for ZeRO-Offload (fp32 master partition, fp32 gradient
  /// partition and optimizer state); 0 without offload.
  virtual int64_t offloadedStateBytes() const { return 0; }

  /// What this rank holds of parameter `param` (registration order): its fp32 master run, model-dtype
  /// run and gradient run as views of the live flat tensors, and the run's offset in optimizer().state().
  /// The gradient is this rank's accumulation before a window's reduction and the averaged one after it
  /// (ZeRO 2/3 reduce every micro-step). Local, no collective. The default refuses, naming the strategy.
  virtual ParamFragment fragment(int64_t param) const;

  /// With ctx.trackUnusedParameters: the parameters (registration order) of this rank's partition that got no
  /// gradient since the last step(). Empty otherwise, and for strategies that do not track.
  virtual std::vector<int64_t> unusedParameters() const { return {}; }
};

/// Stage 0 is runtime/ddp/ddp_strategy.cc; stages 1 and 2 come from runtime/zero/zero_strategy.h,
/// which declares `std::unique_ptr<GradStrategy> dsrt::zero::makeZeroStrategy(int stage,
/// StrategyContext ctx)`. Throws c10::Error for an unsupported stage or a missing factory.
std::unique_ptr<GradStrategy> makeGradStrategy(int stage, StrategyContext ctx);

}  // namespace dsrt
