#include "runtime/config/section_parsers.h"

#include <cctype>
#include <string>

namespace dsrt::config {
namespace {

constexpr const char* kBuiltTypes = "Adam, AdamW, SGD, Lion, Adagrad";

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

// DeepSpeed's FusedLion and DeepSpeedCPULion: lr, betas, weight_decay (decoupled), all else theirs alone.
void parseLionParams(JsonReader& params, OptimizerConfig& out) {
  out.betas = parseBetas(params);
  out.weightDecay = params.getDouble("weight_decay", 0.0, 0.0);
  params.ignore({"set_grad_none", "fp32_optimizer_states"});
}

// torch.optim.Adagrad (DeepSpeed without offload) and DeepSpeedCPUAdagrad (with offload; it takes no
// lr_decay or initial_accumulator_value, which the engine checks once it knows about offload).
void parseAdagradParams(JsonReader& params, OptimizerConfig& out) {
  out.eps = params.getDouble("eps", out.eps, 0.0);
  out.weightDecay = params.getDouble("weight_decay", 0.0, 0.0);
  out.lrDecay = params.getDouble("lr_decay", 0.0, 0.0);
  out.initialAccumulatorValue = params.getDouble("initial_accumulator_value", 0.0, 0.0);
  if (params.getBool("maximize", false)) {
    params.fail("maximize", "maximize is not supported, expected false");
  }
  params.ignore({"foreach", "differentiable", "fused", "amsgrad", "fp32_optimizer_states"});
}

// The types DeepSpeed builds that dsrt does not, and why: named in the error instead of a bare "expected".
const char* notBuiltReason(const std::string& lowerType) {
  if (lowerType == "lamb") {
    return "FusedLamb's trust ratio is computed per parameter tensor, which the engine's flat fp32 partitions "
           "do not keep apart";
  }
  if (lowerType == "onebitadam" || lowerType == "zerooneadam" || lowerType == "onebitlamb") {
    return "its compressed communication is not built";
  }
  if (lowerType == "muadam" || lowerType == "muadamw" || lowerType == "musgd") {
    return "it needs the mup package's Python optimizer";
  }
  if (lowerType == "muon") {
    return "its Newton-Schulz update works on whole matrices, not flat partitions";
  }
  return nullptr;
}

std::string lowered(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

}  // namespace

OptimizerConfig parseOptimizerConfig(JsonReader& block) {
  OptimizerConfig out;
  // DeepSpeed lower-cases the names it implements itself (adam, adamw, lion, adagrad, ...); dsrt accepts
  // any case for all of its own.
  if (block.has("type") && block.raw("type").is_string()) {
    if (const char* reason = notBuiltReason(lowered(block.raw("type").get<std::string>()))) {
      block.fail("type", std::string("DeepSpeed's ") + block.raw("type").get<std::string>() +
                             " is not built in libdsrt (" + reason + "), expected one of " + kBuiltTypes);
    }
  }
  std::optional<std::string> type =
      block.optChoice("type", {"Adam", "AdamW", "SGD", "Lion", "Adagrad"}, /*ignoreCase=*/true);
  if (!type) {
    block.fail("type", std::string("expected one of ") + kBuiltTypes);
  }
  out.type = *type == "Adam"    ? OptimizerType::Adam
             : *type == "AdamW" ? OptimizerType::AdamW
             : *type == "Lion"  ? OptimizerType::Lion
             : *type == "Adagrad" ? OptimizerType::Adagrad
                                  : OptimizerType::SGD;
  if (out.type == OptimizerType::Adagrad) {  // torch.optim.Adagrad's and DeepSpeedCPUAdagrad's defaults
    out.lr = 1e-2;
    out.eps = 1e-10;
  }
  block.ignore({"legacy_fusion"});
  std::optional<JsonReader> params = block.child("params");
  if (params) {
    out.lr = params->getDouble("lr", out.lr, 0.0);
    if (params->has("max_grad_norm")) {
      params->fail("max_grad_norm", "not supported as an optimizer parameter, use gradient_clipping instead");
    }
    if (out.type == OptimizerType::SGD) {
      parseSgdParams(*params, out);
    } else if (out.type == OptimizerType::Lion) {
      parseLionParams(*params, out);
    } else if (out.type == OptimizerType::Adagrad) {
      parseAdagradParams(*params, out);
    } else {
      parseAdamParams(*params, out);
    }
    params->finish();
  } else if (out.type == OptimizerType::Adam) {
    out.adamWMode = true;
  }
  if (out.type != OptimizerType::Adam && out.type != OptimizerType::AdamW) {
    out.adamWMode = false;  // the Adam switch; Lion's decay is decoupled by its kind
  }
  block.finish();
  return out;
}

}  // namespace dsrt::config
