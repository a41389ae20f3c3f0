#include "runtime/optim/lion_flat_optimizer.h"

#include <ATen/ops/copysign.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <utility>

#include "runtime/optim/flat_state_load.h"

namespace dsrt::optim {

LionFlatOptimizer::LionFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device)
    : FlatOptimizer(spec, numel, device),
      expAvg_(at::zeros({numel}, at::TensorOptions().dtype(at::kFloat).device(device))) {
  TORCH_CHECK(spec.kind == OptimizerKind::kLion, "optimizer: LionFlatOptimizer built with a ", kindName(spec.kind),
              " spec");
}

void LionFlatOptimizer::step(at::Tensor params, const at::Tensor& grads, double lr) {
  stepInPieces(std::move(params), grads, lr, at::Tensor(), {numel_}, nullptr);
}

void LionFlatOptimizer::stepInPieces(at::Tensor params, const at::Tensor& grads, double lr,
                                     const at::Tensor& lowPrecisionOut, const std::vector<int64_t>& pieceEnds,
                                     const PieceDone& pieceDone) {
  checkPieces(params, grads, lowPrecisionOut, pieceEnds);
  int64_t begin = 0;
  for (int64_t end : pieceEnds) {
    forEachGroupRange(begin, end, lr, [&](int64_t from, int64_t to, const OptimizerSpec& spec, double groupLr) {
      at::Tensor p = params.narrow(0, from, to - from);
      const at::Tensor g = grads.narrow(0, from, to - from);
      at::Tensor m = expAvg_.narrow(0, from, to - from);
      // p -= copysign(lr, c): a set sign bit (negative c, or -0) steps up, a clear one down. Written over c
      // in place (one temporary, as a torch-ops Lion), with lr as a 0-dim fp32 operand so the step is float
      // on every device, as the kernels' float alpha.
      at::Tensor c = m.mul(spec.beta1).add_(g, 1.0 - spec.beta1);
      at::copysign_out(c, at::scalar_tensor(groupLr, c.options()), c);
      if (spec.weightDecay > 0.0) {
        p.mul_(1.0 - groupLr * spec.weightDecay);
      }
      p.sub_(c);
      m.mul_(spec.beta2).add_(g, 1.0 - spec.beta2);
      if (lowPrecisionOut.defined()) {
        lowPrecisionOut.narrow(0, from, to - from).copy_(p);
      }
    });
    if (pieceDone) {
      pieceDone(end);
    }
    begin = end;
  }
  ++step_;
}

void LionFlatOptimizer::loadState(const OptimizerState& state, int64_t stepCount) {
  loadFlatState(state, stepCount, "Lion", {{"exp_avg", &expAvg_}});
  step_ = stepCount;
}

}  // namespace dsrt::optim
