#pragma once
// What SGD, Lion and Adagrad share: an update written as ATen element-wise operations on slices of the flat
// tensors, applied run by run (each run one param group's part of a piece), piece by piece. The subclass gives
// only the update of one run.

#include "runtime/optim/flat_optimizer.h"

namespace dsrt::optim {

/// See FlatOptimizer. ATen element-wise operations, so a subclass steps a flat tensor on any device (its state
/// allocated there) on ATen's intra-op threads (at::set_num_threads), not spec.numThreads. stepInPieces is
/// bit-identical to step() where pieces end on multiples of kPieceAlign (ATen's vector loops line up), and
/// computes each piece before it reports it.
class ElementwiseFlatOptimizer : public FlatOptimizer {
 public:
  void step(at::Tensor params, const at::Tensor& grads, double lr) override;
  void stepInPieces(at::Tensor params, const at::Tensor& grads, double lr, const at::Tensor& lowPrecisionOut,
                    const std::vector<int64_t>& pieceEnds, const PieceDone& pieceDone) override;
  bool stepsPieceByPiece() const override { return true; }
  int64_t stepCount() const override { return step_; }

 protected:
  using FlatOptimizer::FlatOptimizer;

  /// One run's slices: params (updated in place), grads (read only), and where the run sits in the flat
  /// tensor ([from, to), for the subclass's own state).
  struct Run {
    at::Tensor params;
    at::Tensor grads;
    int64_t from;
    int64_t to;
  };
  /// Updates run.params in place with `spec` (the run's group's settings) and `lr` (its group's lr) for
  /// step number `step` (1 for the first).
  virtual void updateRun(const Run& run, const OptimizerSpec& spec, double lr, int64_t step) = 0;
  /// Called once after every run of a step was updated.
  virtual void stepFinished() {}

  int64_t step_ = 0;
};

}  // namespace dsrt::optim
