// The engine's mixed-precision decisions at an accumulation boundary: whether any rank's fp16 gradients
// overflowed, and the one multiplier that unscales and clips the gradients of a step that is taken
// (DeepSpeed's unscale_and_clip_grads / torch's clip_grad_norm_). Kept apart from engine.cc, which
// sequences the micro-steps.

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "runtime/engine.h"
#include "runtime/comms/pending_comm.h"

namespace dsrt {

bool Engine::anyRankOverflowed() {
  // On the parameters' device: NCCL reduces only device tensors.
  at::Tensor flag = at::full({1}, live().hasOverflow() ? 1.0f : 0.0f,
                             at::TensorOptions().dtype(at::kFloat).device(params_.front().device()));
  if (world_size() > 1) {
    std::vector<at::Tensor> t{flag};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::MAX;
    comms::PendingComm timing = comms::PendingComm::start(dist_->commsLog, comms::kAllReduce, flag);
    dist_->pg->allreduce(t, opts)->wait();
    timing.waited();
  }
  return flag.item<float>() > 0.0f;
}

double Engine::gradMultiplier(double scaleBefore) {
  const double scale = scaler_->scale();
  const double clip = config_.gradientClipping;
  if (clip <= 0.0) {
    return scale == 1.0 ? 1.0 : 1.0 / scale;
  }
  const double scaledNorm = live().gradNorm();
  if (scale == 1.0 && scaleBefore == 1.0) {
    // torch's clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
    lastGradNorm_ = scaledNorm;
    const double coef = clip / (scaledNorm + 1e-6);
    return coef < 1.0 ? coef : 1.0;
  }
  // unscale_and_clip_grads: combined = scale * max(1, (norm/scale + 1e-6) / clip); grads *= 1/combined.
  // The reported norm divides by the scale the gradients were made with (ZeRO; FP16_Optimizer divides
  // by the updated one).
  lastGradNorm_ = scaledNorm / (config_.zero.stage == 0 ? scale : scaleBefore);
  const double c = (scaledNorm / scale + 1e-6) / clip;
  const double combined = c > 1.0 ? c * scale : scale;
  return 1.0 / combined;
}

}  // namespace dsrt
