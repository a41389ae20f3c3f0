#include "runtime/optim/adam_flat_optimizer.h"

#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include "runtime/optim/adam_state.h"

namespace dsrt::optim {

AdamFlatOptimizer::AdamFlatOptimizer(const OptimizerSpec& spec, int64_t numel, CpuIsa isa)
    : FlatOptimizer(spec, numel),
      isa_(isa),
      expAvg_(at::zeros({numel}, at::kFloat)),
      expAvgSq_(at::zeros({numel}, at::kFloat)) {
  TORCH_CHECK(spec.kind != OptimizerKind::kSgd, "optimizer: AdamFlatOptimizer built with an SGD spec");
  TORCH_CHECK(cpuIsaSupported(isa), "optimizer: this CPU cannot run the '", cpuIsaName(isa), "' cpu adam variant");
}

void AdamFlatOptimizer::step(at::Tensor params, const at::Tensor& grads, double lr) {
  run(params, grads, lr, nullptr, LowPrecisionKind::kNone);
}

void AdamFlatOptimizer::stepAndCopy(at::Tensor params, const at::Tensor& grads, double lr,
                                    at::Tensor lowPrecisionOut) {
  const bool half = lowPrecisionOut.scalar_type() == at::kHalf;
  TORCH_CHECK(half || lowPrecisionOut.scalar_type() == at::kBFloat16,
              "optimizer: the low-precision copy must be Half or BFloat16, got '", lowPrecisionOut.scalar_type(),
              "'");
  checkOperand(lowPrecisionOut, lowPrecisionOut.scalar_type(), "low-precision copy");
  // Half and BFloat16 are both 16-bit payloads; the kernel writes their bits directly.
  run(params, grads, lr, reinterpret_cast<uint16_t*>(lowPrecisionOut.data_ptr()),
      half ? LowPrecisionKind::kFp16 : LowPrecisionKind::kBf16);
}

void AdamFlatOptimizer::stepInPieces(at::Tensor params, const at::Tensor& grads, double lr,
                                     const at::Tensor& lowPrecisionOut, const std::vector<int64_t>& pieceEnds,
                                     const PieceDone& pieceDone) {
  checkPieces(params, grads, lowPrecisionOut, pieceEnds);
  uint16_t* lowOut = nullptr;
  LowPrecisionKind lowKind = LowPrecisionKind::kNone;
  if (lowPrecisionOut.defined()) {
    lowOut = reinterpret_cast<uint16_t*>(lowPrecisionOut.data_ptr());
    lowKind = lowPrecisionOut.scalar_type() == at::kHalf ? LowPrecisionKind::kFp16 : LowPrecisionKind::kBf16;
  }
  int64_t begin = 0;
  for (int64_t end : pieceEnds) {
    runRange(params, grads, lr, lowOut, lowKind, begin, end);
    if (pieceDone) {
      pieceDone(end);
    }
    begin = end;
  }
  ++step_;
}

void AdamFlatOptimizer::run(at::Tensor& params, const at::Tensor& grads, double lr, uint16_t* lowOut,
                            LowPrecisionKind lowKind) {
  checkOperand(params, at::kFloat, "params");
  checkOperand(grads, at::kFloat, "grads");
  runRange(params, grads, lr, lowOut, lowKind, 0, numel_);
  ++step_;
}

void AdamFlatOptimizer::runRange(at::Tensor& params, const at::Tensor& grads, double lr, uint16_t* lowOut,
                                 LowPrecisionKind lowKind, int64_t begin, int64_t end) {
  forEachGroupRange(begin, end, lr, [&](int64_t from, int64_t to, const OptimizerSpec& spec, double groupLr) {
    AdamHyper hyper;
    hyper.lr = groupLr;
    hyper.beta1 = spec.beta1;
    hyper.beta2 = spec.beta2;
    hyper.eps = spec.eps;
    hyper.weightDecay = spec.weightDecay;
    hyper.decoupled = decoupledWeightDecay(spec);
    hyper.biasCorrection = spec.biasCorrection;
    hyper.step = step_ + 1;
    AdamBuffers buffers;
    buffers.params = params.data_ptr<float>() + from;
    buffers.grads = grads.data_ptr<float>() + from;
    buffers.expAvg = expAvg_.data_ptr<float>() + from;
    buffers.expAvgSq = expAvgSq_.data_ptr<float>() + from;
    buffers.lowOut = lowOut != nullptr ? lowOut + from : nullptr;
    buffers.lowKind = lowKind;
    buffers.numel = to - from;
    cpuAdamStep(buffers, hyper, spec.numThreads, isa_);
  });
}

OptimizerState AdamFlatOptimizer::state() const { return {{"exp_avg", expAvg_}, {"exp_avg_sq", expAvgSq_}}; }

void AdamFlatOptimizer::loadState(const OptimizerState& state, int64_t stepCount) {
  const AdamStateTensors loaded = adamStateOf(state, stepCount, numel_);
  expAvg_.copy_(loaded.expAvg);
  expAvgSq_.copy_(loaded.expAvgSq);
  step_ = stepCount;
}

}  // namespace dsrt::optim
