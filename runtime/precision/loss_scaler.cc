#include "runtime/precision/loss_scaler.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace dsrt::precision {
namespace {

// DeepSpeed prints scales with int(); the scales here are powers of the factor, far below 2^63.
std::string asInt(double v) {
  std::ostringstream os;
  os << static_cast<long long>(v);
  return os.str();
}

// Python's str() of a float that holds an integer value: "32768.0".
std::string asPyFloat(double v) { return asInt(v) + ".0"; }

}  // namespace

LossScaler::LossScaler(const LossScalerSpec& spec) : spec_(spec) {
  if (!spec.dynamic) {
    TORCH_CHECK(spec.staticScale > 0 && std::isfinite(spec.staticScale),
                "loss scaler: static loss scale must be a positive number, got '", spec.staticScale, "'");
    state_.curScale = spec.staticScale;
    return;
  }
  TORCH_CHECK(spec.initScale > 0 && std::isfinite(spec.initScale),
              "loss scaler: initial scale must be a positive number, got '", spec.initScale, "'");
  TORCH_CHECK(spec.scaleFactor > 1, "loss scaler: scale factor must be > 1, got '", spec.scaleFactor, "'");
  TORCH_CHECK(spec.scaleWindow > 0, "loss scaler: loss_scale_window must be > 0, got '", spec.scaleWindow, "'");
  TORCH_CHECK(spec.minScale > 0, "loss scaler: min_loss_scale must be > 0, got '", spec.minScale, "'");
  TORCH_CHECK(spec.delayedShift >= 1, "loss scaler: hysteresis must be >= 1, got '", spec.delayedShift, "'");
  state_.curScale = spec.initScale;
  state_.curHysteresis = spec.delayedShift;
}

LossScaleUpdate LossScaler::update(bool overflow) {
  if (spec_.rule == LossScaleRule::kFp16Optimizer) {
    return updateFp16Optimizer(overflow);
  }
  LossScaleUpdate out;
  out.skipStep = overflow;
  out.previousScale = state_.curScale;
  if (!spec_.dynamic) {
    if (overflow) {
      out.message = "[deepspeed] OVERFLOW! Skipping step. Using static loss scale of: " + asInt(state_.curScale);
    }
    out.scale = state_.curScale;
    return out;
  }
  if (overflow) {
    if (spec_.delayedShift == 1 || state_.curHysteresis == 1) {
      TORCH_CHECK(!(state_.curScale == spec_.minScale && spec_.raiseErrorAtMinScale),
                  "loss scaler: gradients overflowed at the minimum loss scale ", spec_.minScale,
                  " (min_loss_scale); cannot decrease the scale any further");
      const double next = std::max(state_.curScale / spec_.scaleFactor, spec_.minScale);
      out.message = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: " + asInt(state_.curScale) +
                    ", reducing to " + asInt(next);
      state_.curScale = next;
    } else {
      out.message = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: " + asInt(state_.curScale) +
                    ", but hysteresis is " + std::to_string(state_.curHysteresis) + ". Reducing hysteresis to " +
                    std::to_string(state_.curHysteresis - 1);
      --state_.curHysteresis;
    }
    state_.lastOverflowIter = state_.curIter;
  } else {
    if (spec_.consecutiveHysteresis) {
      state_.curHysteresis = spec_.delayedShift;
    }
    // curIter > lastOverflowIter always, so the remainder is Python's.
    if ((state_.curIter - state_.lastOverflowIter) % spec_.scaleWindow == 0) {
      if (!spec_.consecutiveHysteresis) {
        state_.curHysteresis = spec_.delayedShift;
      }
      state_.curScale *= spec_.scaleFactor;
    }
  }
  ++state_.curIter;
  out.scale = state_.curScale;
  return out;
}

LossScaleUpdate LossScaler::updateFp16Optimizer(bool overflow) {
  LossScaleUpdate out;
  out.skipStep = overflow;
  out.previousScale = state_.curScale;
  const std::string before = pyFloat_ ? asPyFloat(state_.curScale) : asInt(state_.curScale);
  if (spec_.dynamic) {
    if (overflow) {
      state_.curScale = std::max(state_.curScale / spec_.scaleFactor, spec_.minScale);
      pyFloat_ = true;
      state_.lastOverflowIter = state_.curIter;
    } else {
      // FP16_Optimizer._update_scale: stable_interval = cur_iter - last_overflow_iter - 1.
      const int64_t stable = state_.curIter - state_.lastOverflowIter - 1;
      if (stable > 0 && stable % spec_.scaleWindow == 0) {
        state_.curScale *= spec_.scaleFactor;
      }
    }
  }
  if (overflow) {
    // log_dist(..., ranks=[0]) prefixes the rank.
    out.message = "[Rank 0] Overflow detected. Skipping step. Attempted loss scale: " + before + ", reducing to " +
                  (pyFloat_ ? asPyFloat(state_.curScale) : asInt(state_.curScale));
  }
  ++state_.curIter;
  out.scale = state_.curScale;
  return out;
}

void LossScaler::loadState(const LossScalerState& state) {
  TORCH_CHECK(state.curScale > 0 && std::isfinite(state.curScale),
              "loss scaler: saved scale must be a positive number, got '", state.curScale, "'");
  TORCH_CHECK(state.curHysteresis >= 1, "loss scaler: saved hysteresis must be >= 1, got '", state.curHysteresis,
              "'");
  TORCH_CHECK(state.lastOverflowIter < state.curIter, "loss scaler: saved last overflow iteration ",
              state.lastOverflowIter, " is not before the current iteration ", state.curIter);
  state_ = state;
}

}  // namespace dsrt::precision
