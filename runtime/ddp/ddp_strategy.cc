#include "runtime/ddp/ddp_strategy.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>

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
    TORCH_CHECK(grad.device().is_cpu() && grad.scalar_type() == at::kFloat,
                "zero_optimization.stage 0: libdsrt's optimizer runs on fp32 CPU parameters, got ",
                grad.scalar_type(), " on ", grad.device());
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
    optimizer_ = ctx_.makeOptimizer(flatParams_);
    TORCH_CHECK(optimizer_ && optimizer_->numel() == flatParams_.numel(),
                "zero_optimization.stage 0: the optimizer factory returned an optimizer for ",
                optimizer_ ? optimizer_->numel() : -1, " elements, expected ", flatParams_.numel());
  }

  void beginBackward(bool isBoundary) override { reducer_.prepare(isBoundary); }

  void endBackward(bool isBoundary) override {
    if (isBoundary) {
      reducer_.finish();
    }
  }

  double gradNorm() override { return reducer_.flatGrad().norm().item<double>(); }

  void step(double lr, double clipScale) override {
    at::Tensor grad = reducer_.flatGrad();
    if (clipScale != 1.0) {
      grad.mul_(clipScale);
    }
    optimizer_->step(flatParams_, grad, lr);
  }

  void zeroGrad() override { reducer_.zeroGrad(); }

  optim::FlatOptimizer& optimizer() override { return *optimizer_; }

  std::vector<at::Tensor> fullParams() override {
    std::vector<at::Tensor> out;
    for (const auto& p : ctx_.params) {
      out.push_back(p.detach().to(at::kFloat).clone());
    }
    return out;
  }

  void loadFullParams(const std::vector<at::Tensor>& full) override {
    at::NoGradGuard noGrad;
    TORCH_CHECK(full.size() == ctx_.params.size(), "zero_optimization.stage 0: loadFullParams got ", full.size(),
                " tensors for ", ctx_.params.size(), " parameters");
    for (size_t i = 0; i < ctx_.params.size(); ++i) {
      ctx_.params[i].detach().copy_(full[i].view(ctx_.params[i].sizes()));
    }
  }

  int64_t modelStateBytes() const override {
    const int64_t bytes = flatParams_.numel() * static_cast<int64_t>(flatParams_.element_size());
    return bytes /* params */ + bytes /* grads */ + optimizer_->stateBytes();
  }

 private:
  StrategyContext ctx_;
  GradReducer reducer_;
  at::Tensor flatParams_;  ///< every parameter's storage; the optimizer updates it in place
  std::unique_ptr<optim::FlatOptimizer> optimizer_;
};

}  // namespace

std::unique_ptr<GradStrategy> makeDdpStrategy(StrategyContext ctx) {
  return std::make_unique<DdpStrategy>(std::move(ctx));
}

}  // namespace dsrt::ddp
