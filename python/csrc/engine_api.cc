// The parts of DeepSpeed's engine API that scripts call besides the training loop: no_sync(), the batch
// size setters and the per-parameter fragments behind deepspeed.utils.safe_get_full_fp32_param and its
// siblings (python/dsrt/utils/tensor_fragment.py gathers and writes through them). Added to the Engine
// class engine.cc registers.
#include "python/csrc/bindings.h"

#include <cstdint>
#include <string>

#include "runtime/optim/flat_optimizer.h"
#include "runtime/runtime.h"

namespace py = pybind11;

namespace dsrt::python {
namespace {

const char* gradientStateName(Engine::GradientState state) {
  switch (state) {
    case Engine::GradientState::kLocal:
      return "local";
    case Engine::GradientState::kReduced:
      return "reduced";
    default:
      return "none";
  }
}

/// Parameter `param`'s fragment as a dict of views of live memory (writing into them writes the engine's
/// state): shape, param_offset, numel, partitioned, fp32, model, grad (None when the strategy has none)
/// and state, the optimizer's named state tensors (FlatOptimizer::state(): exp_avg, ...) cut to the run.
py::dict paramFragment(Engine& e, int64_t param) {
  const ParamFragment f = e.param_fragment(param);
  py::dict d;
  d["shape"] = f.shape;
  d["param_offset"] = f.paramOffset;
  d["numel"] = f.numel;
  d["partitioned"] = f.partitioned;
  d["fp32"] = f.master;
  d["model"] = f.model;
  d["grad"] = f.grad.defined() ? py::cast(f.grad) : py::none();
  py::dict state;
  for (const auto& [name, tensor] : e.strategy().optimizer().state()) {
    if (tensor.dim() == 1 && tensor.numel() == e.strategy().optimizer().numel()) {
      state[py::str(name)] = tensor.narrow(0, f.optimizerOffset, f.numel);
    }
  }
  d["state"] = state;
  return d;
}

}  // namespace

void bindEngineApi(py::module_& m) {
  auto engine = py::reinterpret_borrow<py::class_<Engine, std::shared_ptr<Engine>>>(m.attr("Engine"));
  engine.def("set_no_sync", &Engine::set_no_sync, py::arg("inside"))
      .def_property_readonly("no_sync", py::overload_cast<>(&Engine::no_sync, py::const_))
      .def("set_train_batch_size", &Engine::set_train_batch_size, py::arg("train_batch_size"))
      .def("set_train_micro_batch_size", &Engine::set_train_micro_batch_size, py::arg("micro_batch_size"))
      .def_property_readonly("gradient_state",
                             [](const Engine& e) { return std::string(gradientStateName(e.gradient_state())); })
      .def("param_fragment", &paramFragment, py::arg("param"));
}

}  // namespace dsrt::python
