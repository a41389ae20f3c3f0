#include "runtime/optim/sgd_flat_optimizer.h"

#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <utility>

namespace dsrt::optim {

SgdFlatOptimizer::SgdFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device)
    : FlatOptimizer(spec, numel, device),
      momentumBuffer_(at::zeros({numel}, at::TensorOptions().dtype(at::kFloat).device(device))) {
  TORCH_CHECK(spec.kind == OptimizerKind::kSgd, "optimizer: SgdFlatOptimizer built with an Adam spec");
}

void SgdFlatOptimizer::step(at::Tensor params, const at::Tensor& grads, double lr) {
  stepInPieces(std::move(params), grads, lr, at::Tensor(), {numel_}, nullptr);
}

void SgdFlatOptimizer::stepInPieces(at::Tensor params, const at::Tensor& grads, double lr,
                                    const at::Tensor& lowPrecisionOut, const std::vector<int64_t>& pieceEnds,
                                    const PieceDone& pieceDone) {
  checkPieces(params, grads, lowPrecisionOut, pieceEnds);
  int64_t begin = 0;
  for (int64_t end : pieceEnds) {
    forEachGroupRange(begin, end, lr, [&](int64_t from, int64_t to, const OptimizerSpec& spec, double groupLr) {
      at::Tensor p = params.narrow(0, from, to - from);
      at::Tensor d = grads.narrow(0, from, to - from);
      if (spec.weightDecay != 0.0) {
        d = d.add(p, spec.weightDecay);
      }
      if (spec_.momentum != 0.0) {
        at::Tensor buffer = momentumBuffer_.narrow(0, from, to - from);
        if (!bufferReady_) {
          buffer.copy_(d);
        } else {
          buffer.mul_(spec_.momentum).add_(d, 1.0 - spec_.dampening);
        }
        d = spec_.nesterov ? d.add(buffer, spec_.momentum) : buffer;
      }
      p.add_(d, -groupLr);
      if (lowPrecisionOut.defined()) {
        lowPrecisionOut.narrow(0, from, to - from).copy_(p);
      }
    });
    if (pieceDone) {
      pieceDone(end);
    }
    begin = end;
  }
  bufferReady_ = bufferReady_ || spec_.momentum != 0.0;
  ++step_;
}

OptimizerState SgdFlatOptimizer::state() const {
  if (spec_.momentum == 0.0) {
    return {};
  }
  return {{"momentum_buffer", momentumBuffer_}};
}

void SgdFlatOptimizer::loadState(const OptimizerState& state, int64_t stepCount) {
  TORCH_CHECK(stepCount >= 0, "optimizer: step count must be >= 0, got '", stepCount, "'");
  bufferReady_ = false;
  for (const auto& entry : state) {
    TORCH_CHECK(entry.first == "momentum_buffer", "optimizer: unknown SGD state '", entry.first,
                "' (expected momentum_buffer)");
    TORCH_CHECK(entry.second.numel() == numel_, "optimizer: SGD momentum_buffer must have ", numel_,
                " elements, got '", entry.second.numel(), "'");
    momentumBuffer_.copy_(entry.second.reshape({numel_}));
    bufferReady_ = stepCount > 0;
  }
  TORCH_CHECK(spec_.momentum == 0.0 || stepCount == 0 || bufferReady_,
              "optimizer: SGD with momentum at step ", stepCount, " needs a momentum_buffer");
  step_ = stepCount;
}

}  // namespace dsrt::optim
