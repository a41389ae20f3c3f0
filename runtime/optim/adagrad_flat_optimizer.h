#pragma once
// Adagrad over one flat fp32 partition, with torch.optim.Adagrad's rule (what DeepSpeed builds for
// "Adagrad" without offload), written with the ATen operations torch's single-tensor loop uses:
//   g' = g + wd * p;  sum += g' * g';  p -= lr / (1 + (step - 1) * lr_decay) * g' / (sqrt(sum) + eps)
// With spec.adagradRawGradStep the numerator is the raw g, as DeepSpeedCPUAdagrad (csrc/adagrad/
// cpu_adagrad.cpp: what DeepSpeed builds under offload_optimizer) computes it.

#include "runtime/optim/flat_optimizer.h"

namespace dsrt::optim {

/// See FlatOptimizer. State: sum (fp32, numel; torch's name), initialAccumulatorValue at the start. ATen
/// element-wise operations, so the same class steps a flat tensor on any device; stepInPieces is
/// bit-identical to step() where pieces end on multiples of kPieceAlign.
class AdagradFlatOptimizer : public FlatOptimizer {
 public:
  AdagradFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device = c10::Device(c10::kCPU));

  void step(at::Tensor params, const at::Tensor& grads, double lr) override;
  void stepInPieces(at::Tensor params, const at::Tensor& grads, double lr, const at::Tensor& lowPrecisionOut,
                    const std::vector<int64_t>& pieceEnds, const PieceDone& pieceDone) override;
  bool stepsPieceByPiece() const override { return true; }
  OptimizerState state() const override { return {{"sum", sum_}}; }
  int64_t stepCount() const override { return step_; }
  void loadState(const OptimizerState& state, int64_t stepCount) override;

 private:
  at::Tensor sum_;
  int64_t step_ = 0;
};

}  // namespace dsrt::optim
