#pragma once
// The loss scaler's checkpoint form, under DeepSpeed's attribute names (cur_scale, cur_iter,
// last_overflow_iter, cur_hysteresis), so engine checkpoints carry the schedule like DeepSpeed's pickled
// loss_scaler does.

#include <nlohmann/json.hpp>

#include "runtime/precision/loss_scaler.h"

namespace dsrt::precision {

nlohmann::json toJson(const LossScalerState& state);
/// Throws nlohmann::json::exception when a field is missing or has the wrong type.
LossScalerState lossScalerStateFromJson(const nlohmann::json& j);

}  // namespace dsrt::precision
