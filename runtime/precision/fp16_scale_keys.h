#pragma once
// How DeepSpeed turns ds_config's fp16 block into a loss scaler (runtime/config.py get_loss_scale and
// get_dynamic_loss_scale_args, engine.dynamic_loss_scale, fp16/loss_scaler.py CreateLossScaler).

#include <cstdint>
#include <optional>

#include "runtime/precision/loss_scaler.h"

namespace dsrt::precision {

/// The fp16 keys as written in the config: absent keys stay nullopt, because DeepSpeed's defaults
/// depend on whether any scale key is present at all.
struct Fp16ScaleKeys {
  /// fp16.enabled; false (bf16 or fp32 training) gives a static scale of 1.
  bool fp16Enabled = false;
  /// fp16.loss_scale: 0 means dynamic, anything else a static scale.
  double lossScale = 0.0;
  std::optional<int64_t> initialScalePower;
  std::optional<int64_t> lossScaleWindow;
  std::optional<int64_t> hysteresis;
  std::optional<bool> consecutiveHysteresis;
  std::optional<double> minLossScale;
};

/// DeepSpeed's mapping. With dynamic scaling and none of initial_scale_power, loss_scale_window,
/// hysteresis, consecutive_hysteresis, min_loss_scale given, DeepSpeed builds DynamicLossScaler() with its
/// class defaults (2^32, window 1000, hysteresis 1); once any is given, the config defaults apply to the
/// rest (2^16, window 1000, hysteresis 2, min 1). Pure; validation happens in LossScaler's constructor.
LossScalerSpec lossScalerSpecFromFp16(const Fp16ScaleKeys& keys);

/// The same block as stage 0's FP16_Optimizer reads it (engine._configure_fp16_optimizer): dynamic scaling
/// starts at 2^initial_scale_power (config default 16) whether or not any key is written, with the window
/// and minimum from the config and no hysteresis; rule kFp16Optimizer. Static and disabled as above.
LossScalerSpec fp16OptimizerSpecFromFp16(const Fp16ScaleKeys& keys);

}  // namespace dsrt::precision
