#include "runtime/ddp/ddp_strategy.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>

#include "runtime/comms/pending_comm.h"
#include "runtime/ddp/bucket_plan.h"
#include "runtime/ddp/grad_reducer.h"
#include "runtime/optim/flat_optimizer.h"

namespace dsrt::ddp {
namespace {

std::vector<Bucket> planFor(const StrategyContext& ctx) {
  std::vector<ParamSize> sizes;
  for (const auto& p : ctx.params) {
    sizes.push_back(ParamSize{p.numel(), static_cast<int64_t>(p.element_size()), 0});
  }
  const int64_t elementSize = ctx.params.empty() ? 4 : static_cast<int64_t>(ctx.params[0].element_size());
  const int64_t bucketBytes = std::max<int64_t>(1, ctx.reduceBucketNumel) * elementSize;
  // PyTorch DDP's small first bucket starts communication early in backward; never above the cap itself.
  return planBuckets(sizes, std::min(kDefaultFirstBucketBytes, bucketBytes), bucketBytes);
}

class DdpStrategy final : public GradStrategy {
 public:
  explicit DdpStrategy(StrategyContext ctx)
      : ctx_(std::move(ctx)), reducer_(ctx_.params, ctx_.pg, planFor(ctx_), ctx_.overlapComm) {
    const at::Tensor& grad = reducer_.flatGrad();
    const auto dtype = grad.scalar_type();
    // Flat buffers, fp32 master and optimizer state all live on the parameters' device (makeOptimizer).
    TORCH_CHECK(dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16,
                "zero_optimization.stage 0: libdsrt's optimizer runs on fp32/fp16/bf16 parameters, got ",
                grad.scalar_type(), " on ", grad.device());
    TORCH_CHECK(!ctx_.offloadOptimizer, "zero_optimization.offload_optimizer: ZeRO-Offload needs ZeRO stage 1, 2 ",
                "or 3, got stage '0'");
    if (ctx_.commDtype) {
      reducer_.setCommDtype(*ctx_.commDtype);
    }
    reducer_.setCommsLog(ctx_.commsLog);
    // Same layout as the gradients: parameter i lives at reducer_.offsetOf(i) in both buffers.
    flatParams_ = at::empty_like(grad);
    for (size_t i = 0; i < ctx_.params.size(); ++i) {
      at::Tensor& p = ctx_.params[i];
      if (p.numel() == 0) {
        continue;
      }
      at::Tensor slot = flatParams_.narrow(0, reducer_.offsetOf(i), p.numel()).view(p.sizes());
      slot.copy_(p.detach());
      p.set_data(slot);
    }
    if (dtype != at::kFloat) {
      // FP16_Optimizer / BF16_Optimizer: one fp32 master flat, the optimizer steps on it and the model's
      // 16-bit flat receives the result.
      master_ = flatParams_.to(at::kFloat);
    }
    if (dtype == at::kBFloat16) {
      // BF16_Optimizer accumulates every micro-step's bf16 gradients into fp32 "hp" gradients and the
      // engine allreduces those after backward (buffered_allreduce_fallback): no bf16 accumulation.
      accum_ = at::zeros_like(master_);
    }
    optimizer_ = ctx_.makeOptimizer(masterFlat());
    TORCH_CHECK(optimizer_ && optimizer_->numel() == flatParams_.numel(),
                "zero_optimization.stage 0: the optimizer factory returned an optimizer for ",
                optimizer_ ? optimizer_->numel() : -1, " elements, expected ", flatParams_.numel());
    if (!ctx_.paramGroups.empty()) {
      std::vector<optim::ParamSpan> spans;
      for (size_t i = 0; i < ctx_.params.size(); ++i) {
        spans.push_back({reducer_.offsetOf(i), ctx_.params[i].numel(), ctx_.paramGroups[i]});
      }
      optimizer_->setGroupRuns(optim::groupRunsOf(std::move(spans), flatParams_.numel()));
    }
  }

  void beginBackward(bool isBoundary) override { reducer_.prepare(isBoundary && !accum_.defined()); }

  void endBackward(bool isBoundary) override {
    if (!accum_.defined()) {
      if (isBoundary) {
        reducer_.finish();
      }
      return;
    }
    at::NoGradGuard noGrad;
    accum_.add_(reducer_.flatGrad());
    reducer_.zeroGrad();
    if (isBoundary) {
      allreduceAccumulated();
    }
  }

  double gradNorm() override { return fp32Grad().norm().item<double>(); }

  bool hasOverflow() override { return !at::isfinite(fp32Grad()).all().item<bool>(); }

  // clipScale is the engine's combined factor (1/loss_scale times the clipping coefficient).
  void step(double lr, double clipScale) override {
    at::NoGradGuard noGrad;
    at::Tensor grad = reducer_.flatGrad();
    if (!master_.defined()) {
      if (clipScale != 1.0) {
        grad.mul_(clipScale);
      }
      optimizer_->step(flatParams_, grad, lr);
      return;
    }
    at::Tensor grad32 = accum_.defined() ? accum_ : grad.to(at::kFloat);
    if (clipScale != 1.0) {
      grad32.mul_(clipScale);
    }
    optimizer_->stepAndCopy(master_, grad32, lr, flatParams_);
  }

  void zeroGrad() override {
    reducer_.zeroGrad();
    if (accum_.defined()) {
      accum_.zero_();
    }
  }

  optim::FlatOptimizer& optimizer() override { return *optimizer_; }

  std::vector<at::Tensor> fullParams() override {
    std::vector<at::Tensor> out;
    for (size_t i = 0; i < ctx_.params.size(); ++i) {
      out.push_back(masterOf(i).to(at::kFloat).clone());
    }
    return out;
  }

  void loadFullParams(const std::vector<at::Tensor>& full) override {
    at::NoGradGuard noGrad;
    TORCH_CHECK(full.size() == ctx_.params.size(), "zero_optimization.stage 0: loadFullParams got ", full.size(),
                " tensors for ", ctx_.params.size(), " parameters");
    for (size_t i = 0; i < ctx_.params.size(); ++i) {
      ctx_.params[i].detach().copy_(full[i].view(ctx_.params[i].sizes()));
      if (master_.defined()) {
        masterOf(i).copy_(full[i].view(ctx_.params[i].sizes()));
      }
    }
  }

  // Every rank holds every parameter whole: the fragment is the parameter's slot in the flat buffers.
  // bf16 (BF16_Optimizer): the fp32 accumulation is the gradient the step uses; else the model-dtype one.
  ParamFragment fragment(int64_t param) const override {
    TORCH_CHECK(param >= 0 && param < static_cast<int64_t>(ctx_.params.size()), "zero_optimization.stage 0: "
                "parameter index ", param, " is outside the ", ctx_.params.size(), " parameters the engine trains");
    const at::Tensor& p = ctx_.params[static_cast<size_t>(param)];
    ParamFragment f;
    f.shape = p.sizes().vec();
    f.numel = p.numel();
    f.optimizerOffset = p.numel() == 0 ? 0 : reducer_.offsetOf(static_cast<size_t>(param));
    const auto run = [&f](const at::Tensor& t) { return t.narrow(0, f.optimizerOffset, f.numel); };
    f.master = run(masterFlat());
    f.model = run(flatParams_);
    f.grad = run(accum_.defined() ? accum_ : reducer_.flatGrad());
    return f;
  }

  int64_t modelStateBytes() const override {
    const int64_t bytes = flatParams_.numel() * static_cast<int64_t>(flatParams_.element_size());
    const int64_t masterBytes = master_.defined() ? static_cast<int64_t>(master_.nbytes()) : 0;
    const int64_t accumBytes = accum_.defined() ? static_cast<int64_t>(accum_.nbytes()) : 0;
    return bytes /* params */ + bytes /* grads */ + masterBytes + accumBytes + optimizer_->stateBytes();
  }

 private:
  StrategyContext ctx_;
  GradReducer reducer_;
  /// The averaged gradient the step uses, in fp32 (a temporary copy for fp16).
  at::Tensor fp32Grad() const {
    if (accum_.defined()) {
      return accum_;
    }
    const at::Tensor& g = reducer_.flatGrad();
    return g.scalar_type() == at::kFloat ? g : g.to(at::kFloat);
  }

  /// bf16: allreduce the fp32 accumulated gradients in communication_data_type (DeepSpeed's
  /// allreduce_bucket: converted copy, averaged in that dtype, copied back).
  void allreduceAccumulated() {
    const int world = ctx_.pg->getSize();
    if (world == 1) {
      return;
    }
    at::Tensor wire = ctx_.commDtype && *ctx_.commDtype != at::kFloat ? accum_.to(*ctx_.commDtype) : accum_;
    std::vector<at::Tensor> tensors{wire};
    comms::PendingComm timing = comms::PendingComm::start(ctx_.commsLog, comms::kAllReduce, wire);
    ctx_.pg->allreduce(tensors)->wait();
    timing.waited();
    wire.div_(world);
    if (!wire.is_same(accum_)) {
      accum_.copy_(wire);
    }
  }

  const at::Tensor& masterFlat() const { return master_.defined() ? master_ : flatParams_; }
  /// Parameter i's fp32 value (its master slot, or the parameter itself for an fp32 model).
  at::Tensor masterOf(size_t i) const {
    const at::Tensor& p = ctx_.params[i];
    return p.numel() == 0 ? p.detach() : masterFlat().narrow(0, reducer_.offsetOf(i), p.numel()).view(p.sizes());
  }

  at::Tensor flatParams_;  ///< every parameter's storage (model dtype)
  at::Tensor master_;      ///< fp16/bf16 models: the fp32 master flat the optimizer updates (same layout)
  at::Tensor accum_;       ///< bf16 models: fp32 gradients accumulated over micro-steps, then allreduced
  std::unique_ptr<optim::FlatOptimizer> optimizer_;
};

}  // namespace

std::unique_ptr<GradStrategy> makeDdpStrategy(StrategyContext ctx) {
  return std::make_unique<DdpStrategy>(std::move(ctx));
}

}  // namespace dsrt::ddp
