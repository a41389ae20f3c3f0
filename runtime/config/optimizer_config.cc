#include "runtime/config/section_parsers.h"

namespace dsrt::config {
namespace {

std::array<double, 2> parseBetas(JsonReader& params) {
  std::array<double, 2> betas{0.9, 0.999};
  if (!params.has("betas")) {
    return betas;
  }
  const nlohmann::json& v = params.raw("betas");
  if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) {
    params.fail("betas", "expected a list of two numbers in [0, 1)");
  }
  for (int i = 0; i < 2; ++i) {
    betas[i] = v[i].get<double>();
    if (!(betas[i] >= 0.0 && betas[i] < 1.0)) {  // torch.optim.Adam's "Invalid beta parameter"
      params.fail("betas", "expected a list of two numbers in [0, 1)");
    }
  }
  return betas;
}

void parseAdamParams(JsonReader& params, OptimizerConfig& out) {
  out.betas = parseBetas(params);
  out.eps = params.getDouble("eps", out.eps, 0.0);
  out.torchAdam = params.getBool("torch_adam", false);
  // engine._configure_basic_optimizer: "Adam" also means decoupled weight decay unless adam_w_mode is false.
  bool adamWMode = params.getBool("adam_w_mode", true);
  out.adamWMode = out.type == OptimizerType::AdamW || adamWMode;
  // With torch_adam DeepSpeed hands the params to torch.optim.AdamW, whose weight_decay default is 0.01.
  double decayDefault = (out.torchAdam && out.adamWMode) ? 0.01 : 0.0;
  out.weightDecay = params.getDouble("weight_decay", decayDefault, 0.0);
  out.biasCorrection = params.getBool("bias_correction", true);
  if (params.getBool("amsgrad", false)) {
    params.fail("amsgrad", "amsgrad is not supported (DeepSpeed's FusedAdam refuses it too), expected false");
  }
}

void parseSgdParams(JsonReader& params, OptimizerConfig& out) {
  out.momentum = params.getDouble("momentum", 0.0, 0.0);
  out.dampening = params.getDouble("dampening", 0.0);
  out.weightDecay = params.getDouble("weight_decay", 0.0, 0.0);
  out.nesterov = params.getBool("nesterov", false);
  if (out.nesterov && (out.momentum <= 0.0 || out.dampening != 0.0)) {
    params.fail("nesterov", "nesterov momentum requires momentum > 0 and dampening == 0");
  }
  params.ignore({"maximize", "foreach", "differentiable"});
}

}  // namespace

OptimizerConfig parseOptimizerConfig(JsonReader& block) {
  OptimizerConfig out;
  // DeepSpeed lower-cases the names it implements itself (adam, adamw); dsrt accepts any case for all three.
  std::optional<std::string> type = block.optChoice("type", {"Adam", "AdamW", "SGD"}, /*ignoreCase=*/true);
  if (!type) {
    block.fail("type", "expected one of Adam, AdamW, SGD");
  }
  out.type = *type == "Adam" ? OptimizerType::Adam : *type == "AdamW" ? OptimizerType::AdamW : OptimizerType::SGD;
  block.ignore({"legacy_fusion"});
  std::optional<JsonReader> params = block.child("params");
  if (params) {
    out.lr = params->getDouble("lr", out.lr, 0.0);
    if (params->has("max_grad_norm")) {
      params->fail("max_grad_norm", "not supported as an optimizer parameter, use gradient_clipping instead");
    }
    if (out.type == OptimizerType::SGD) {
      parseSgdParams(*params, out);
    } else {
      parseAdamParams(*params, out);
    }
    params->finish();
  } else if (out.type == OptimizerType::Adam) {
    out.adamWMode = true;
  }
  if (out.type == OptimizerType::SGD) {
    out.adamWMode = false;
  }
  block.finish();
  return out;
}

}  // namespace dsrt::config
