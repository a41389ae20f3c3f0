#pragma once
// Adam and AdamW (torch.optim rules, DeepSpeed's adam_w_mode) over one flat fp32 partition, stepping with
// the vectorised CPU kernel of cpu_adam.h.

#include "runtime/optim/cpu_adam.h"
#include "runtime/optim/flat_optimizer.h"

namespace dsrt::optim {

/// See FlatOptimizer. State: exp_avg and exp_avg_sq (fp32, numel each, zero at construction).
class AdamFlatOptimizer : public FlatOptimizer {
 public:
  /// `spec.kind` must be kAdam or kAdamW; `isa` picks the kernel variant (tests pin it).
  AdamFlatOptimizer(const OptimizerSpec& spec, int64_t numel, CpuIsa isa = bestCpuIsa());

  void step(at::Tensor params, const at::Tensor& grads, double lr) override;
  void stepAndCopy(at::Tensor params, const at::Tensor& grads, double lr, at::Tensor lowPrecisionOut) override;
  /// One kernel call per piece (bit-identical to step() at any piece boundary: the kernel is elementwise
  /// and its tail runs the vector code on masked lanes).
  void stepInPieces(at::Tensor params, const at::Tensor& grads, double lr, const at::Tensor& lowPrecisionOut,
                    const std::vector<int64_t>& pieceEnds, const PieceDone& pieceDone) override;
  bool stepsPieceByPiece() const override { return true; }
  OptimizerState state() const override;
  int64_t stepCount() const override { return step_; }
  void loadState(const OptimizerState& state, int64_t stepCount) override;

 private:
  void run(at::Tensor& params, const at::Tensor& grads, double lr, uint16_t* lowOut, LowPrecisionKind lowKind);
  /// Elements [begin, end) of this step's update (step count step_ + 1); does not advance the count.
  void runRange(at::Tensor& params, const at::Tensor& grads, double lr, uint16_t* lowOut, LowPrecisionKind lowKind,
                int64_t begin, int64_t end);

  /// Kernel variant used by step().
  CpuIsa isa_;
  at::Tensor expAvg_;
  at::Tensor expAvgSq_;
  int64_t step_ = 0;
};

}  // namespace dsrt::optim
