// The autograd side of dsrt::zero::forward (stage3_forward.h): identity nodes on a managed module's
// inputs and outputs whose backward tells the module's coordinator that the module's backward is about
// to start (output gradient arrived: gather) or has finished (input gradients computed: release).
#include "runtime/zero/stage3_forward.h"

#include "runtime/zero/stage3_param_coordinator.h"
#include "runtime/zero/stage3_registry.h"

#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/module.h>

namespace dsrt::zero::detail {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

Stage3ParamCoordinator* coordinatorOf(AutogradContext* ctx) {
  return Stage3Registry::find(ctx->saved_data["coordinator"].toInt());
}

/// On a module's output: its backward runs before the module's own backward.
struct PreBackward : torch::autograd::Function<PreBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& y, int64_t coordinator, int64_t gate) {
    ctx->saved_data["coordinator"] = coordinator;
    ctx->saved_data["gate"] = gate;
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (Stage3ParamCoordinator* c = coordinatorOf(ctx)) {
      c->preBackward(ctx->saved_data["gate"].toInt());
    }
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

/// On a module's input: its backward runs once the module's backward produced that input's gradient.
struct PostBackward : torch::autograd::Function<PostBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t coordinator, int64_t gate) {
    ctx->saved_data["coordinator"] = coordinator;
    ctx->saved_data["gate"] = gate;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (Stage3ParamCoordinator* c = coordinatorOf(ctx)) {
      c->postBackward(ctx->saved_data["gate"].toInt());
    }
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

bool tracksGrad(const at::Tensor& t) {
  return t.defined() && t.requires_grad() && c10::GradMode::is_enabled();
}

}  // namespace

ForwardGate openGate(torch::nn::Module& module) {
  const Stage3Registry::Unit unit = Stage3Registry::unitOf(module);
  if (!unit.coordinator) {
    return {};
  }
  // Forwards without grad (evaluation) have no backward: they stay out of the recorded trace.
  return {unit.coordinatorId, unit.coordinator->beginForward(unit.unit, c10::GradMode::is_enabled())};
}

void closeForward(const ForwardGate& gate) {
  if (Stage3ParamCoordinator* c = Stage3Registry::find(gate.coordinator)) {
    c->endForward(gate.gate);
  }
}

at::Tensor wrapInput(const ForwardGate& gate, const at::Tensor& x) {
  if (!tracksGrad(x)) {
    return x;
  }
  if (Stage3ParamCoordinator* c = Stage3Registry::find(gate.coordinator)) {
    c->addInput(gate.gate);
  }
  return PostBackward::apply(x, gate.coordinator, gate.gate);
}

at::Tensor wrapOutput(const ForwardGate& gate, const at::Tensor& y) {
  if (!tracksGrad(y)) {
    return y;
  }
  return PreBackward::apply(y, gate.coordinator, gate.gate);
}

}  // namespace dsrt::zero::detail
