#pragma once
// SGD with momentum, dampening, nesterov and L2 weight decay (torch.optim.SGD's rule) over one flat fp32
// partition, written with the same ATen operations torch uses so results match it bit for bit.

#include "runtime/optim/flat_optimizer.h"

namespace dsrt::optim {

/// See FlatOptimizer. State: momentum_buffer (fp32, numel) when momentum != 0; like torch, the first step
/// initialises it to the gradient. Threads: ATen's intra-op pool (at::set_num_threads), not spec.numThreads.
class SgdFlatOptimizer : public FlatOptimizer {
 public:
  /// Plain ATen ops, so the same class steps a flat tensor on any `device` (state allocated there).
  SgdFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device = c10::Device(c10::kCPU));

  void step(at::Tensor params, const at::Tensor& grads, double lr) override;
  /// The same ATen operations on each piece's slices (bit-identical to step() where pieces end on
  /// multiples of kPieceAlign, so ATen's vector loops line up; ATen's threads split each piece on their own).
  void stepInPieces(at::Tensor params, const at::Tensor& grads, double lr, const at::Tensor& lowPrecisionOut,
                    const std::vector<int64_t>& pieceEnds, const PieceDone& pieceDone) override;
  bool stepsPieceByPiece() const override { return true; }
  OptimizerState state() const override;
  int64_t stepCount() const override { return step_; }
  void loadState(const OptimizerState& state, int64_t stepCount) override;

 private:
  at::Tensor momentumBuffer_;
  /// Whether momentumBuffer_ holds a value (torch creates it on the first step with momentum).
  bool bufferReady_ = false;
  int64_t step_ = 0;
};

}  // namespace dsrt::optim
