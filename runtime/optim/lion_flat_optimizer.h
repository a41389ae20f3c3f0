#pragma once
// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms") over one flat fp32 partition,
// with DeepSpeed's rule (csrc/lion/cpu_lion_impl.cpp, DeepSpeedCPULion):
//   c = beta1 * m + (1 - beta1) * g
//   p = p * (1 - lr * wd) - copysign(lr, c)      (the decay factor only when wd > 0)
//   m = beta2 * m + (1 - beta2) * g
// The sign step never is 0: c == +0 steps by -lr and c == -0 by +lr, as DeepSpeed's CPU kernel
// (its CUDA FusedLion steps +lr for both zeros; the two differ only where c is exactly zero).

#include "runtime/optim/flat_optimizer.h"

namespace dsrt::optim {

/// See FlatOptimizer. State: exp_avg (fp32, numel; DeepSpeed's name), zero at the start. Written with ATen
/// element-wise operations (vectorised, on ATen's intra-op threads), so the same class steps a flat tensor
/// on any device; stepInPieces is bit-identical to step() where pieces end on multiples of kPieceAlign.
class LionFlatOptimizer : public FlatOptimizer {
 public:
  LionFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device = c10::Device(c10::kCPU));

  void step(at::Tensor params, const at::Tensor& grads, double lr) override;
  void stepInPieces(at::Tensor params, const at::Tensor& grads, double lr, const at::Tensor& lowPrecisionOut,
                    const std::vector<int64_t>& pieceEnds, const PieceDone& pieceDone) override;
  bool stepsPieceByPiece() const override { return true; }
  OptimizerState state() const override { return {{"exp_avg", expAvg_}}; }
  int64_t stepCount() const override { return step_; }
  void loadState(const OptimizerState& state, int64_t stepCount) override;

 private:
  at::Tensor expAvg_;
  int64_t step_ = 0;
};

}  // namespace dsrt::optim
