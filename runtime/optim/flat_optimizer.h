#pragma once
// An optimizer over ONE flat, contiguous fp32 tensor: the unit the engine and the ZeRO optimizers hand
// over (a whole flattened model for stage 0, one rank's partition for stages 1-3 and offload). CPU
// tensors step with the vectorised CPU Adam, other devices with ATen kernels (device_adam_flat_optimizer.h).

#include <c10/core/Device.h>

#include <ATen/core/Tensor.h>

#include "runtime/optim/param_groups.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dsrt::optim {

/// Which update rule a FlatOptimizer applies. Lion follows DeepSpeed's DeepSpeedCPULion/FusedLion, Adagrad
/// torch.optim.Adagrad (or DeepSpeedCPUAdagrad with adagradRawGradStep): docs/config.md says where they differ.
enum class OptimizerKind { kAdam, kAdamW, kSgd, kLion, kAdagrad };

/// Hyper-parameters of the update rule; the engine maps ds_config's `optimizer` block onto this
/// (this header does not depend on runtime/config). Fields not used by `kind` are ignored.
struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kAdam;
  /// Adam/AdamW/Lion: betas (Lion: beta1 mixes the update's sign, beta2 the momentum). Adam/Adagrad: eps.
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// L2 penalty (Adam, SGD, Adagrad: added to the gradient) or decoupled decay (AdamW, Lion: p *= 1 - lr*wd).
  double weightDecay = 0.0;
  /// DeepSpeed's `adam_w_mode` for kind kAdam: true makes kAdam decay like AdamW. DeepSpeed's config
  /// default is true ("Adam" means AdamW there unless adam_w_mode is false); the struct default is
  /// false so that kAdam alone means torch.optim.Adam. kAdamW is decoupled whatever this says.
  bool adamWMode = false;
  /// Adam/AdamW: divide by 1 - beta^step (torch always does; DeepSpeed's `bias_correction` may turn it off).
  bool biasCorrection = true;
  /// SGD, as torch.optim.SGD.
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  /// Adagrad, as torch.optim.Adagrad: the step's lr is lr / (1 + (step - 1) * lrDecay), and the sum of
  /// squared gradients starts at initialAccumulatorValue.
  double lrDecay = 0.0;
  double initialAccumulatorValue = 0.0;
  /// Adagrad as DeepSpeedCPUAdagrad (what DeepSpeed runs under offload_optimizer): the weight-decayed
  /// gradient feeds the sum of squares but the step divides the RAW gradient, where torch divides the
  /// decayed one. Same result when weight_decay is 0.
  bool adagradRawGradStep = false;
  /// Threads a step may use; 0 means at::get_num_threads().
  int numThreads = 0;
  /// Step CPU tensors with the device optimizer (ATen kernels over the flat runs) instead of the
  /// vectorised CPU Adam, so CI runs the GPU path's code; non-CPU tensors always use it.
  bool deviceKernels = false;
};

/// True when `spec` decays weights decoupled (AdamW rule) rather than as an L2 term in the gradient.
inline bool decoupledWeightDecay(const OptimizerSpec& spec) {
  return spec.kind == OptimizerKind::kAdamW || spec.kind == OptimizerKind::kLion ||
         (spec.kind == OptimizerKind::kAdam && spec.adamWMode);
}

/// "Adam", "AdamW", "SGD", "Lion" or "Adagrad": the kind's name in ds_config, for messages.
const char* kindName(OptimizerKind kind);

/// Named optimizer state tensors, e.g. {"exp_avg", t}, {"exp_avg_sq", t} (torch's state names).
using OptimizerState = std::vector<std::pair<std::string, at::Tensor>>;

/// Updates one flat fp32 partition on device() in place and owns its state (fp32, sized to numel, on device()).
/// Not thread-safe: one caller at a time; a step may use spec.numThreads worker threads internally.
/// Errors (wrong dtype/device/numel, non-contiguous input, bad state on load) throw c10::Error.
class FlatOptimizer {
 public:
  virtual ~FlatOptimizer();

  /// One optimizer step with learning rate `lr`. params, grads: same numel as the optimizer, kFloat,
  /// contiguous, on device(). params is updated in place; grads is only read.
  virtual void step(at::Tensor params, const at::Tensor& grads, double lr) = 0;

  /// step() plus a copy of the updated params into `lowPrecisionOut` (kHalf or kBFloat16, contiguous,
  /// CPU, same numel), fused into the update pass where the implementation can (CPU Adam does).
  virtual void stepAndCopy(at::Tensor params, const at::Tensor& grads, double lr, at::Tensor lowPrecisionOut);

  /// Called by stepInPieces once params (and the low-precision copy) are final in [0, end).
  using PieceDone = std::function<void(int64_t end)>;
  /// Piece boundaries that keep stepInPieces bit-identical to one step(): every piece but the last
  /// starts and ends on a multiple of this many elements, so vector loops line up with the whole run's.
  static constexpr int64_t kPieceAlign = 64;

  /// The update of step() (lowPrecisionOut undefined) or stepAndCopy(), computed piece by piece over
  /// [0, pieceEnds[0]), [pieceEnds[0], pieceEnds[1]), ... and calling pieceDone(end) after each, so a
  /// caller can ship the finished front of a partition while the rest is computed (ZeRO's all-gather
  /// overlapping the optimizer). The step count advances once. pieceEnds: increasing, the last numel();
  /// other ends should be multiples of kPieceAlign. The base implementation updates everything first,
  /// then reports every piece.
  virtual void stepInPieces(at::Tensor params, const at::Tensor& grads, double lr, const at::Tensor& lowPrecisionOut,
                            const std::vector<int64_t>& pieceEnds, const PieceDone& pieceDone);
  /// Whether stepInPieces reads and writes piece i only before it reports piece i and never touches
  /// a later piece before that (true for an override that computes piece by piece; false for the base
  /// implementation). ZeRO-Offload's pipeline relies on it to hand CPU Adam a piece's gradient just in
  /// time: for an optimizer that answers false it waits for every piece before the step.
  virtual bool stepsPieceByPiece() const { return false; }

  /// The state tensors (views of the live state, not copies), for memory accounting and checkpoints.
  /// Adam/AdamW: exp_avg, exp_avg_sq. SGD: momentum_buffer when momentum != 0, else nothing. Lion: exp_avg
  /// (DeepSpeed's name). Adagrad: sum (torch.optim.Adagrad's name).
  virtual OptimizerState state() const = 0;

  /// Number of step() calls so far (torch's state["step"]); drives Adam's bias correction.
  virtual int64_t stepCount() const = 0;

  /// Replaces the state with copies of `state` (same names as state(), each numel() fp32 elements,
  /// any order) and the step counter; used by checkpoint load and ZeRO re-partitioning.
  virtual void loadState(const OptimizerState& state, int64_t stepCount) = 0;

  /// Elements this optimizer was built for.
  int64_t numel() const { return numel_; }
  /// Where its operands and state live.
  c10::Device device() const { return device_; }
  /// The update rule in force. Schedulers that cycle momentum (OneCycle) change it via setBetas/setMomentum.
  const OptimizerSpec& spec() const { return spec_; }
  void setBetas(double beta1, double beta2) { spec_.beta1 = beta1; spec_.beta2 = beta2; }
  void setMomentum(double momentum) { spec_.momentum = momentum; }
  /// Total bytes of state(), for model_state_bytes accounting.
  int64_t stateBytes() const;

  /// Parameter groups: which group owns each run of the flat tensor (groupRunsOf; the last run ends at
  /// numel()). Without runs every element steps with spec() and the step's lr.
  void setGroupRuns(std::vector<GroupRun> runs);
  /// Each group's settings for the following steps, indexed by group (one per group the runs name, or
  /// more). Throws c10::Error naming the group for a value the spec check would refuse.
  void setGroupSettings(std::vector<GroupSettings> settings);
  const std::vector<GroupRun>& groupRuns() const { return groupRuns_; }

 protected:
  FlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device = c10::Device(c10::kCPU))
      : spec_(spec), numel_(numel), device_(device) {}

  /// Checks that t is a contiguous tensor on device_ of `dtype` with numel() elements; `what` names it in the error.
  void checkOperand(const at::Tensor& t, c10::ScalarType dtype, const char* what) const;
  /// Checks stepInPieces' operands: params and grads as step(), lowPrecisionOut as stepAndCopy() when
  /// defined, pieceEnds increasing and ending at numel().
  void checkPieces(const at::Tensor& params, const at::Tensor& grads, const at::Tensor& lowPrecisionOut,
                   const std::vector<int64_t>& pieceEnds) const;

  /// Range [begin, end) as the group runs cut it: fn(subBegin, subEnd, spec, lr) with each run's
  /// settings applied to spec_ and `lr`; one call with spec_ and `lr` when no groups are set.
  using GroupRangeFn = std::function<void(int64_t begin, int64_t end, const OptimizerSpec& spec, double lr)>;
  void forEachGroupRange(int64_t begin, int64_t end, double lr, const GroupRangeFn& fn) const;

  OptimizerSpec spec_;
  int64_t numel_;
  c10::Device device_;
  std::vector<GroupRun> groupRuns_;
  std::vector<GroupSettings> groupSettings_;
};

/// Builds the optimizer `spec.kind` over `numel` elements with zero-initialised state.
/// Throws c10::Error on a negative numel or invalid hyper-parameters (betas outside [0,1), eps < 0, ...).
std::unique_ptr<FlatOptimizer> makeFlatOptimizer(const OptimizerSpec& spec, int64_t numel);

/// The optimizer for a flat tensor on `device`: the CPU optimizers above for the CPU unless
/// spec.deviceKernels, else DeviceAdamFlatOptimizer (fused kernel where compat::hasFusedAdam) or the
/// tensor-op SGD, Lion or Adagrad, with state on `device`. Throws as makeFlatOptimizer.
std::unique_ptr<FlatOptimizer> makeFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device);

}  // namespace dsrt::optim
