#include "runtime/precision/loss_scaler_json.h"

namespace dsrt::precision {

nlohmann::json toJson(const LossScalerState& state) {
  return nlohmann::json{{"cur_scale", state.curScale},
                        {"cur_iter", state.curIter},
                        {"last_overflow_iter", state.lastOverflowIter},
                        {"cur_hysteresis", state.curHysteresis}};
}

LossScalerState lossScalerStateFromJson(const nlohmann::json& j) {
  LossScalerState s;
  s.curScale = j.at("cur_scale").get<double>();
  s.curIter = j.at("cur_iter").get<int64_t>();
  s.lastOverflowIter = j.at("last_overflow_iter").get<int64_t>();
  s.curHysteresis = j.at("cur_hysteresis").get<int64_t>();
  return s;
}

}  // namespace dsrt::precision
