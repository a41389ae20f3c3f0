#include "runtime/optim/elementwise_flat_optimizer.h"

#include <utility>

namespace dsrt::optim {

void ElementwiseFlatOptimizer::step(at::Tensor params, const at::Tensor& grads, double lr) {
  stepInPieces(std::move(params), grads, lr, at::Tensor(), {numel_}, nullptr);
}

void ElementwiseFlatOptimizer::stepInPieces(at::Tensor params, const at::Tensor& grads, double lr,
                                            const at::Tensor& lowPrecisionOut, const std::vector<int64_t>& pieceEnds,
                                            const PieceDone& pieceDone) {
  checkPieces(params, grads, lowPrecisionOut, pieceEnds);
  const int64_t step = step_ + 1;
  int64_t begin = 0;
  for (int64_t end : pieceEnds) {
    forEachGroupRange(begin, end, lr, [&](int64_t from, int64_t to, const OptimizerSpec& spec, double groupLr) {
      const Run run{params.narrow(0, from, to - from), grads.narrow(0, from, to - from), from, to};
      updateRun(run, spec, groupLr, step);
      if (lowPrecisionOut.defined()) {
        lowPrecisionOut.narrow(0, from, to - from).copy_(run.params);
      }
    });
    if (pieceDone) {
      pieceDone(end);
    }
    begin = end;
  }
  stepFinished();
  step_ = step;
}

}  // namespace dsrt::optim
