#pragma once
// DeepSpeed's loss scaling (deepspeed/runtime/fp16/loss_scaler.py) as a pure state machine: the engine
// feeds it each step's overflow flag (already agreed across ranks) and applies what it returns. Static
// scaling (fp16 with a fixed loss_scale, and bf16/fp32 with scale 1) is the same class with dynamic off.

#include <cstdint>
#include <string>

namespace dsrt::precision {

/// Which of DeepSpeed's two dynamic schedules runs. ZeRO stages 1-3 use DynamicLossScaler
/// (fp16/loss_scaler.py: hysteresis, growth when (iter - last_overflow) % window == 0, an error at the
/// minimum scale); stage 0 uses FP16_Optimizer's own _update_scale (fp16/fused_optimizer.py: no
/// hysteresis, growth one step later, when iter - last_overflow - 1 is a positive multiple of the window,
/// and no error at the minimum).
enum class LossScaleRule { kDynamicLossScaler, kFp16Optimizer };

/// DynamicLossScaler's constructor arguments (DeepSpeed's names in comments) or a static scale.
struct LossScalerSpec {
  LossScaleRule rule = LossScaleRule::kDynamicLossScaler;
  /// false: LossScaler(scale=staticScale), which never changes.
  bool dynamic = true;
  double staticScale = 1.0;
  /// init_scale; DeepSpeed's class default is 2^32 (what ZeRO uses when the fp16 block names no scale key).
  double initScale = 4294967296.0;
  /// scale_factor: the scale is divided by it on overflow and multiplied after scaleWindow clean steps.
  double scaleFactor = 2.0;
  /// scale_window: clean steps since the last overflow before the scale grows.
  int64_t scaleWindow = 1000;
  /// min_scale: the scale never drops below it.
  double minScale = 1.0;
  /// delayed_shift (ds_config `hysteresis`): overflows tolerated before the scale drops.
  int64_t delayedShift = 1;
  /// consecutive_hysteresis: a clean step refills the hysteresis at once (not only when the scale grows).
  bool consecutiveHysteresis = false;
  /// raise_error_at_min_scale: an overflow at minScale is an error (DeepSpeed always sets this).
  bool raiseErrorAtMinScale = true;
};

/// What one update() decided.
struct LossScaleUpdate {
  /// The optimizer step must be skipped (the gradients overflowed).
  bool skipStep = false;
  double previousScale = 0.0;
  double scale = 0.0;
  /// DeepSpeed's rank-0 log line for this update ("[deepspeed] OVERFLOW! Rank 0 ..." for ZeRO, "Overflow
  /// detected. ..." for stage 0, as log_dist prints it); empty when nothing happened.
  std::string message;
};

/// The state a checkpoint must carry to resume the schedule exactly (DeepSpeed pickles the same fields).
struct LossScalerState {
  double curScale = 1.0;
  int64_t curIter = 0;
  int64_t lastOverflowIter = -1;
  int64_t curHysteresis = 1;
};

/// Loss scale schedule; not thread-safe (one engine thread owns it). Throws c10::Error on an invalid
/// spec, and from update() when an overflow happens at the minimum scale with raiseErrorAtMinScale.
class LossScaler {
 public:
  explicit LossScaler(const LossScalerSpec& spec);

  /// The scale to multiply the next loss by.
  double scale() const { return state_.curScale; }
  bool dynamic() const { return spec_.dynamic; }
  const LossScalerSpec& spec() const { return spec_; }

  /// Records one step's overflow flag and moves the schedule (DynamicLossScaler.update_scale); a static
  /// scaler only reports the skip. The optimizer step must be skipped when the result says so.
  LossScaleUpdate update(bool overflow);

  LossScalerState state() const { return state_; }
  /// Restores a state saved by state(); throws c10::Error on a non-positive scale or hysteresis.
  void loadState(const LossScalerState& state);

 private:
  LossScaleUpdate updateFp16Optimizer(bool overflow);

  LossScalerSpec spec_;
  LossScalerState state_;
  /// Python's cur_scale becomes a float after the first division (only changes how logs print it).
  bool pyFloat_ = false;
};

}  // namespace dsrt::precision
