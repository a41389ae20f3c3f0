#pragma once
// libdsrt's public entry point: DeepSpeed's deepspeed.initialize() for LibTorch programs.
//
//   auto engine = dsrt::initialize(model, "ds_config.json");   // also inits the process group
//   for (...) {
//     auto loss = engine->forward(x, y_or_nothing...);            // model->forward(...), timed
//     engine->backward(loss);
//     engine->step();
//   }
//
// The model may be a torch::nn::ModuleHolder (TORCH_MODULE types) or a std::shared_ptr to a module.
// Build the engine after the model is on its final device, in fp32: with fp16/bf16 enabled the engine
// converts it (DeepSpeed's module.half() / module.bfloat16(): parameters, and buffers of torch::nn
// modules), and every strategy re-points the parameters' storage into one flat buffer (same tensors,
// new storage). Errors: c10::Error (config errors included).

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>

#include "runtime/config/deepspeed_config.h"
#include "runtime/dist_env.h"
#include "runtime/engine.h"

namespace dsrt {

/// How initialize() gets its process group.
struct InitOptions {
  /// An existing group (e.g. shared by two engines or built by a test); null: init_distributed(distOptions).
  std::shared_ptr<DistContext> dist;
  DistOptions distOptions;
  /// The model computes its float16 layers in fp32 where this torch has no float16 kernels (as
  /// dsrt::zero::linear does on the CPU), so fp16 is not refused there (Engine's constructor).
  bool modelAvoidsHalfKernels = false;
};

/// torch::nn modules name their parameters (checkpoints store the names); a plain struct with only
/// parameters() gets "param.<i>".
template <typename ModelPtr, typename = void>
struct HasNamedParameters : std::false_type {};
template <typename ModelPtr>
struct HasNamedParameters<ModelPtr, std::void_t<decltype(std::declval<ModelPtr&>()->named_parameters())>>
    : std::true_type {};

/// torch::nn modules have buffers (running statistics) that fp16/bf16 convert with the parameters.
template <typename ModelPtr, typename = void>
struct HasBuffers : std::false_type {};
template <typename ModelPtr>
struct HasBuffers<ModelPtr, std::void_t<decltype(std::declval<ModelPtr&>()->buffers())>> : std::true_type {};

/// Engine bound to a concrete model type, so forward() can call the model's own forward.
template <typename ModelPtr>
class ModelEngine : public Engine {
 public:
  ModelEngine(ModelPtr model, config::DeepSpeedConfig config, std::shared_ptr<DistContext> dist,
              bool modelAvoidsHalfKernels = false)
      : Engine(model->parameters(), std::move(config), std::move(dist), {}, modelAvoidsHalfKernels),
        model_(std::move(model)) {
    if constexpr (HasBuffers<ModelPtr>::value) {
      // module.half() / module.bfloat16() convert floating buffers too; the Engine did the parameters.
      at::NoGradGuard noGrad;
      for (auto& buffer : model_->buffers()) {
        if (buffer.is_floating_point() && buffer.scalar_type() != model_dtype()) {
          buffer.set_data(buffer.detach().to(model_dtype()));
        }
      }
    }
    if constexpr (HasNamedParameters<ModelPtr>::value) {
      std::vector<std::string> names;
      for (const auto& item : model_->named_parameters()) {
        if (item.value().requires_grad()) {
          names.push_back(item.key());
        }
      }
      set_param_names(std::move(names));
    }
  }

  /// model->forward(args...), timed as the forward phase.
  template <typename... Args>
  auto forward(Args&&... args) {
    return Engine::forward([&] { return model_->forward(std::forward<Args>(args)...); });
  }
  using Engine::forward;

  /// The wrapped model (DeepSpeed's engine.module).
  ModelPtr& module() { return model_; }

 private:
  ModelPtr model_;
};

/// Who drives the engine. The Python package implements some config blocks itself (the monitors, the comms
/// logger, the FLOP profiler: runtime/config/top_level_keys.h); a C++ program is told that it ignores them.
enum class Frontend { Cpp, Python };

/// Resolves the process group (options.dist or init_distributed()), then the config for its world size.
/// Config errors (dsrt::config::ConfigError) are rethrown as c10::Error with the same one-line message.
/// Config warnings go to stderr from `rank` 0 only (every rank still records them in cfg.warnings).
std::shared_ptr<DistContext> resolveDist(const InitOptions& options);
config::DeepSpeedConfig loadConfig(const std::string& path, int worldSize, int rank = 0,
                                   Frontend frontend = Frontend::Cpp);
config::DeepSpeedConfig loadConfig(const nlohmann::json& doc, int worldSize, const std::string& source = "<json>",
                                   int rank = 0, Frontend frontend = Frontend::Cpp);

/// deepspeed.initialize(model=model, config=path): reads the ds_config file (JSON or YAML).
template <typename ModelPtr>
std::shared_ptr<ModelEngine<ModelPtr>> initialize(ModelPtr model, const std::string& configPath,
                                                  const InitOptions& options = {}) {
  auto dist = resolveDist(options);
  auto cfg = loadConfig(configPath, dist->env.worldSize, dist->env.rank);
  return std::make_shared<ModelEngine<ModelPtr>>(std::move(model), std::move(cfg), std::move(dist),
                                                 options.modelAvoidsHalfKernels);
}

/// deepspeed.initialize(model=model, config=dict): the ds_config as a JSON document.
template <typename ModelPtr>
std::shared_ptr<ModelEngine<ModelPtr>> initialize(ModelPtr model, const nlohmann::json& config,
                                                  const InitOptions& options = {}) {
  auto dist = resolveDist(options);
  auto cfg = loadConfig(config, dist->env.worldSize, "<json>", dist->env.rank);
  return std::make_shared<ModelEngine<ModelPtr>>(std::move(model), std::move(cfg), std::move(dist),
                                                 options.modelAvoidsHalfKernels);
}

}  // namespace dsrt
