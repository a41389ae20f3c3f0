#pragma once
// The engine's optimizer factory for a client torch optimizer: the C++ ClientFlatOptimizer
// (runtime/optim/client_flat_optimizer.h) calling back into the Python object dsrt.client_optimizer
// builds (its bind, step, state, step_count and load_state methods), with the GIL taken around each call.

#include <torch/csrc/utils/pybind.h>

#include "runtime/grad_strategy.h"

namespace dsrt::python {

/// The factory for Engine's clientOptimizer; empty when `stepper` is None. Safe to copy and to call
/// without the GIL (the engine builds its optimizer with the GIL released).
OptimizerFactory clientOptimizerFactory(const pybind11::object& stepper);

}  // namespace dsrt::python
