#include "runtime/config/section_parsers.h"

namespace dsrt::config {

Fp16Config parseFp16Config(JsonReader& block) {
  Fp16Config out;
  out.enabled = block.getBool("enabled", false);
  out.autoCast = block.getBool("auto_cast", false);
  out.lossScale = block.getDouble("loss_scale", 0.0, 0.0);
  // config.get_dynamic_loss_scale_args: naming any one of these passes all five to the loss scaler.
  for (const char* key : {"initial_scale_power", "loss_scale_window", "hysteresis", "consecutive_hysteresis",
                          "min_loss_scale"}) {
    out.dynamicLossArgsExplicit = out.dynamicLossArgsExplicit || block.has(key);
  }
  // 2^power must stay a finite float32 scale.
  out.initialScalePower = static_cast<int>(block.getInt("initial_scale_power", out.initialScalePower, 0, 127));
  out.lossScaleWindow = static_cast<int>(block.getInt("loss_scale_window", out.lossScaleWindow, 1, INT32_MAX));
  out.hysteresis = static_cast<int>(block.getInt("hysteresis", out.hysteresis, 1, INT32_MAX));
  out.consecutiveHysteresis = block.getBool("consecutive_hysteresis", out.consecutiveHysteresis);
  out.minLossScale = block.getDouble("min_loss_scale", out.minLossScale);
  if (!(out.minLossScale > 0.0)) {
    block.fail("min_loss_scale", "expected a number > 0");
  }
  out.masterWeightsAndGrads = block.getBool("fp16_master_weights_and_grads", false);
  block.finish();
  return out;
}

Bf16Config parseBf16Config(JsonReader& block) {
  Bf16Config out;
  out.enabled = block.getBool("enabled", false);
  out.immediateGradUpdate = block.getBool("immediate_grad_update", false);
  block.ignore({"check_grad_overflow"});
  block.finish();
  return out;
}

}  // namespace dsrt::config
