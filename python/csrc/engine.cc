// dsrt::Engine for Python. The engine works on the script's own parameter tensors (same TensorImpls, so
// the model, its optimizer state and autograd see one set of parameters). The GIL is released around
// everything that runs collectives or autograd: Python autograd nodes and hooks take it back themselves,
// and CUDA autograd worker threads would otherwise deadlock on it.
#include "python/csrc/bindings.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "python/csrc/client_optimizer.h"
#include "runtime/optim/client_flat_optimizer.h"
#include "runtime/runtime.h"

namespace py = pybind11;

namespace dsrt::python {
namespace {

std::string dtypeName(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Half:
      return "float16";
    case c10::ScalarType::BFloat16:
      return "bfloat16";
    default:
      return "float32";
  }
}

std::shared_ptr<Engine> makeEngine(std::vector<at::Tensor> params, std::vector<std::string> names,
                                   config::DeepSpeedConfig cfg, std::shared_ptr<DistContext> dist,
                                   std::vector<int> groups, const py::object& clientOptimizer) {
  OptimizerFactory client = clientOptimizerFactory(clientOptimizer);  // under the GIL: it holds the object
  py::gil_scoped_release noGil;
  auto engine = std::make_shared<Engine>(std::move(params), std::move(cfg), std::move(dist), std::move(groups),
                                         /*modelAvoidsHalfKernels=*/false, std::move(client));
  engine->set_param_names(std::move(names));
  return engine;
}

/// The optimizer block as torch's param_groups keys (what scripts read from optimizer.param_groups).
py::dict optimizerSettings(const Engine& e) {
  const config::OptimizerConfig& o = *e.config().optimizer;
  py::dict d;
  d["type"] = config::toString(o.type);
  d["weight_decay"] = o.weightDecay;
  if (o.type == config::OptimizerType::SGD) {
    d["momentum"] = o.momentum;
    d["dampening"] = o.dampening;
    d["nesterov"] = o.nesterov;
  } else if (o.type == config::OptimizerType::Lion) {
    d["betas"] = py::make_tuple(o.betas[0], o.betas[1]);
  } else if (o.type == config::OptimizerType::Adagrad) {
    d["eps"] = o.eps;
    d["lr_decay"] = o.lrDecay;
    d["initial_accumulator_value"] = o.initialAccumulatorValue;
  } else {
    d["betas"] = py::make_tuple(o.betas[0], o.betas[1]);
    d["eps"] = o.eps;
    d["bias_correction"] = o.biasCorrection;
    d["adam_w_mode"] = o.adamWMode;
  }
  return d;
}

/// (lr, weight_decay, beta1, beta2, eps) per group, None where the config's value applies.
using GroupTuple = std::tuple<std::optional<double>, std::optional<double>, std::optional<double>,
                              std::optional<double>, std::optional<double>>;

std::vector<optim::GroupSettings> groupSettings(const std::vector<GroupTuple>& tuples) {
  std::vector<optim::GroupSettings> out;
  for (const auto& t : tuples) {
    optim::GroupSettings g;
    std::tie(g.lr, g.weightDecay, g.beta1, g.beta2, g.eps) = t;
    out.push_back(g);
  }
  return out;
}

nlohmann::json parseClientState(const std::string& text) {
  return text.empty() ? nlohmann::json::object() : nlohmann::json::parse(text);
}

}  // namespace

void bindEngine(py::module_& m) {
  py::class_<Engine, std::shared_ptr<Engine>>(m, "Engine")
      .def_static(
          "from_file",
          [](std::vector<at::Tensor> params, std::vector<std::string> names, const std::string& path,
             std::shared_ptr<DistContext> dist, std::vector<int> groups, const py::object& clientOptimizer) {
            auto cfg = loadConfig(path, dist->env.worldSize, dist->env.rank, Frontend::Python);
            return makeEngine(std::move(params), std::move(names), std::move(cfg), std::move(dist), std::move(groups),
                              clientOptimizer);
          },
          py::arg("params"), py::arg("names"), py::arg("path"), py::arg("dist"), py::arg("groups") = std::vector<int>{},
          py::arg("client_optimizer") = py::none())
      .def_static(
          "from_json",
          [](std::vector<at::Tensor> params, std::vector<std::string> names, const std::string& text,
             const std::string& source, std::shared_ptr<DistContext> dist, std::vector<int> groups,
             const py::object& clientOptimizer) {
            auto cfg = loadConfig(nlohmann::json::parse(text), dist->env.worldSize, source, dist->env.rank,
                                  Frontend::Python);
            return makeEngine(std::move(params), std::move(names), std::move(cfg), std::move(dist), std::move(groups),
                              clientOptimizer);
          },
          py::arg("params"), py::arg("names"), py::arg("json"), py::arg("source"), py::arg("dist"),
          py::arg("groups") = std::vector<int>{}, py::arg("client_optimizer") = py::none())
      // A client optimizer (client_optimizer= above) receives its flat tensor and runs now, not at the first step.
      .def("bind_client_optimizer",
           [](Engine& e) {
             if (auto* client = dynamic_cast<optim::ClientFlatOptimizer*>(&e.strategy().optimizer())) {
               client->bind();
             }
           })
      // Calls fn() (the module's forward) under the engine's forward timer.
      .def("forward", [](Engine& e, const py::function& fn) { return e.forward([&] { return fn(); }); })
      .def("backward", &Engine::backward, py::arg("loss"), py::arg("scale_wrt_gas") = true,
           py::call_guard<py::gil_scoped_release>())
      .def("set_gradient_accumulation_boundary", &Engine::set_gradient_accumulation_boundary, py::arg("is_boundary"))
      .def("step", &Engine::step, py::call_guard<py::gil_scoped_release>())
      .def("zero_grad", &Engine::zero_grad, py::call_guard<py::gil_scoped_release>())
      // With the GIL held: a client optimizer's Python callbacks are freed with the strategy.
      .def("release", &Engine::release, "lets go of the process group (interpreter exit); later steps raise")
      .def("is_gradient_accumulation_boundary", &Engine::is_gradient_accumulation_boundary)
      .def("get_lr", &Engine::get_lr)
      .def(
          "set_group_settings",
          [](Engine& e, const std::vector<GroupTuple>& groups) { e.set_group_settings(groupSettings(groups)); },
          py::arg("groups"))
      .def_property_readonly("global_steps", &Engine::global_steps)
      .def_property_readonly("global_samples", &Engine::global_samples)
      .def_property_readonly("micro_steps", &Engine::micro_steps)
      .def_property_readonly("skipped_steps", &Engine::skipped_steps)
      .def_property_readonly("cur_scale", &Engine::cur_scale)
      .def_property_readonly("last_grad_norm", &Engine::last_grad_norm)
      .def_property_readonly("rank", &Engine::rank)
      .def_property_readonly("world_size", &Engine::world_size)
      .def_property_readonly("zero_stage", &Engine::zero_stage)
      .def_property_readonly("gradient_accumulation_steps", &Engine::gradient_accumulation_steps)
      .def_property_readonly("train_batch_size", &Engine::train_batch_size)
      .def_property_readonly("train_micro_batch_size_per_gpu", &Engine::train_micro_batch_size_per_gpu)
      .def_property_readonly("model_state_bytes", &Engine::model_state_bytes)
      .def_property_readonly("offloaded_state_bytes", &Engine::offloaded_state_bytes)
      .def_property_readonly("model_dtype", [](const Engine& e) { return dtypeName(e.model_dtype()); })
      .def_property_readonly("gradient_clipping", [](const Engine& e) { return e.config().gradientClipping; })
      .def_property_readonly("fp16_enabled", [](const Engine& e) { return e.config().fp16.enabled; })
      .def_property_readonly("bf16_enabled", [](const Engine& e) { return e.config().bf16.enabled; })
      .def_property_readonly("wall_clock_breakdown", [](const Engine& e) { return e.config().wallClockBreakdown; })
      .def_property_readonly("steps_per_print",
                             [](const Engine& e) -> std::optional<int64_t> { return e.config().stepsPerPrint; })
      .def_property_readonly("gather_16bit_weights_on_model_save",
                             [](const Engine& e) { return e.config().zero.gather16bitWeightsOnModelSave; })
      .def_property_readonly("optimizer_settings", &optimizerSettings)
      .def_property_readonly("has_scheduler", [](const Engine& e) { return e.config().scheduler.has_value(); })
      .def_property_readonly("scheduler_type",
                             [](const Engine& e) -> std::optional<std::string> {
                               if (!e.config().scheduler) return std::nullopt;
                               return config::toString(e.config().scheduler->type);
                             })
      .def_property_readonly("last_batch_iteration", &Engine::last_batch_iteration)
      .def(
          "save_checkpoint",
          [](Engine& e, const std::string& dir, std::optional<std::string> tag, const std::string& client,
             bool saveLatest) {
            auto state = parseClientState(client);
            py::gil_scoped_release noGil;
            e.save_checkpoint(dir, tag, state, saveLatest);
          },
          py::arg("save_dir"), py::arg("tag"), py::arg("client_state_json"), py::arg("save_latest") = true)
      // Returns (path, client_state_json, saved_engine_state_json); path is "" when nothing was loaded.
      .def(
          "load_checkpoint",
          [](Engine& e, const std::string& dir, std::optional<std::string> tag, bool moduleOnly,
             bool optimizerStates, bool lrSchedulerStates, bool strict) {
            LoadCheckpointOptions options;
            options.moduleOnly = moduleOnly;
            options.optimizerStates = optimizerStates;
            options.lrSchedulerStates = lrSchedulerStates;
            options.strict = strict;
            Engine::LoadedCheckpoint loaded;
            {
              py::gil_scoped_release noGil;
              loaded = e.load_checkpoint(dir, tag, options);
            }
            return py::make_tuple(loaded.path, loaded.clientState.dump(), loaded.engineState.dump());
          },
          py::arg("load_dir"), py::arg("tag"), py::arg("module_only") = false, py::arg("optimizer_states") = true,
          py::arg("lr_scheduler_states") = true, py::arg("strict") = true)
      // Collective: fp32 copies of every parameter's full value (ZeRO-3 gathers them), and the way back.
      .def("full_params", [](Engine& e) { return e.strategy().fullParams(); },
           py::call_guard<py::gil_scoped_release>())
      .def("load_full_params", [](Engine& e, const std::vector<at::Tensor>& full) { e.strategy().loadFullParams(full); },
           py::arg("full"), py::call_guard<py::gil_scoped_release>())
      .def("save_16bit_model", &Engine::save_16bit_model, py::arg("save_dir"), py::arg("save_filename"),
           py::call_guard<py::gil_scoped_release>());
}

}  // namespace dsrt::python
