#include "runtime/optim/adagrad_flat_optimizer.h"

#include <ATen/ops/full.h>
#include <c10/util/Exception.h>

#include <utility>

#include "runtime/optim/flat_state_load.h"

namespace dsrt::optim {

AdagradFlatOptimizer::AdagradFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device)
    : FlatOptimizer(spec, numel, device),
      sum_(at::full({numel}, spec.initialAccumulatorValue, at::TensorOptions().dtype(at::kFloat).device(device))) {
  TORCH_CHECK(spec.kind == OptimizerKind::kAdagrad, "optimizer: AdagradFlatOptimizer built with a ",
              kindName(spec.kind), " spec");
}

void AdagradFlatOptimizer::step(at::Tensor params, const at::Tensor& grads, double lr) {
  stepInPieces(std::move(params), grads, lr, at::Tensor(), {numel_}, nullptr);
}

void AdagradFlatOptimizer::stepInPieces(at::Tensor params, const at::Tensor& grads, double lr,
                                        const at::Tensor& lowPrecisionOut, const std::vector<int64_t>& pieceEnds,
                                        const PieceDone& pieceDone) {
  checkPieces(params, grads, lowPrecisionOut, pieceEnds);
  const int64_t step = step_ + 1;
  int64_t begin = 0;
  for (int64_t end : pieceEnds) {
    forEachGroupRange(begin, end, lr, [&](int64_t from, int64_t to, const OptimizerSpec& spec, double groupLr) {
      at::Tensor p = params.narrow(0, from, to - from);
      const at::Tensor g = grads.narrow(0, from, to - from);
      at::Tensor sum = sum_.narrow(0, from, to - from);
      const at::Tensor decayed = spec.weightDecay != 0.0 ? g.add(p, spec.weightDecay) : g;
      const double stepLr = groupLr / (1.0 + static_cast<double>(step - 1) * spec.lrDecay);
      sum.addcmul_(decayed, decayed, 1.0);
      const at::Tensor std = sum.sqrt().add_(spec.eps);
      p.addcdiv_(spec.adagradRawGradStep ? g : decayed, std, -stepLr);
      if (lowPrecisionOut.defined()) {
        lowPrecisionOut.narrow(0, from, to - from).copy_(p);
      }
    });
    if (pieceDone) {
      pieceDone(end);
    }
    begin = end;
  }
  step_ = step;
}

void AdagradFlatOptimizer::loadState(const OptimizerState& state, int64_t stepCount) {
  loadFlatState(state, stepCount, "Adagrad", {{"sum", &sum_}});
  step_ = stepCount;
}

}  // namespace dsrt::optim
