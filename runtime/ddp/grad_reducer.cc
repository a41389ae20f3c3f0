#include "runtime/ddp/grad_reducer.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <utility>

namespace dsrt::ddp {

GradReducer::GradReducer(std::vector<at::Tensor> params, c10::intrusive_ptr<c10d::ProcessGroup> pg,
                         std::vector<Bucket> plan, bool overlap)
    : params_(std::move(params)), pg_(std::move(pg)), buckets_(std::move(plan)), overlap_(overlap) {
  TORCH_CHECK(pg_, "GradReducer: no process group");
  TORCH_CHECK(!params_.empty(), "GradReducer: the model has no trainable parameters");
  const auto options = params_[0].options();
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    TORCH_CHECK(p.requires_grad() && p.is_leaf(), "GradReducer: parameter ", i, " is not a trainable leaf");
    TORCH_CHECK(p.scalar_type() == options.dtype().toScalarType() && p.device() == options.device(),
                "GradReducer: stage 0 needs every parameter in one dtype and device, parameter ", i, " is ",
                p.scalar_type(), " on ", p.device(), ", parameter 0 is ", params_[0].scalar_type(), " on ",
                params_[0].device());
  }
  offsets_.assign(params_.size(), -1);
  bucketOf_.assign(params_.size(), 0);
  int64_t total = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    bucketStart_.push_back(total);
    for (size_t k = 0; k < buckets_[b].params.size(); ++k) {
      auto i = static_cast<size_t>(buckets_[b].params[k]);
      TORCH_CHECK(i < params_.size() && offsets_[i] < 0, "GradReducer: plan names parameter ", i, " twice or out of range");
      TORCH_CHECK(buckets_[b].offsets[k] + params_[i].numel() <= buckets_[b].numel, "GradReducer: bucket ", b,
                  " is too small for parameter ", i);
      offsets_[i] = total + buckets_[b].offsets[k];
      bucketOf_[i] = b;
    }
    total += buckets_[b].numel;
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    TORCH_CHECK(offsets_[i] >= 0 || params_[i].numel() == 0, "GradReducer: plan misses parameter ", i);
  }
  flat_ = at::zeros({total}, options.requires_grad(false));
  for (size_t b = 0; b < buckets_.size(); ++b) {
    bucketViews_.push_back(flat_.narrow(0, bucketStart_[b], buckets_[b].numel));
  }
  ready_.assign(params_.size(), 0);
  pending_.assign(buckets_.size(), 0);
  works_.resize(buckets_.size());
  wires_.resize(buckets_.size());
  timings_.resize(buckets_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].numel() == 0) {
      continue;
    }
    params_[i].mutable_grad() = viewOf(i);
    auto acc = torch::autograd::impl::grad_accumulator(params_[i]);
    TORCH_CHECK(acc, "GradReducer: parameter ", i, " has no gradient accumulator");
    hookKeys_.push_back(acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          onGradReady(i);
          return outputs;
        })));
    accumulators_.push_back(std::move(acc));
  }
}

GradReducer::~GradReducer() {
  for (size_t k = 0; k < accumulators_.size(); ++k) {
    accumulators_[k]->del_post_hook(hookKeys_[k]);
  }
  for (auto& w : works_) {
    if (w) {
      try {
        w->wait();
      } catch (...) {
        // Destructors do not throw; the failure was (or will be) reported by finish() or the peer.
      }
    }
  }
}

at::Tensor GradReducer::viewOf(size_t i) const {
  return flat_.narrow(0, offsets_[i], params_[i].numel()).view(params_[i].sizes());
}

void GradReducer::prepare(bool isBoundary) {
  for (auto& w : works_) {
    TORCH_CHECK(!w, "GradReducer: prepare() called while a previous boundary's allreduce was not finished");
  }
  boundary_ = isBoundary;
  std::fill(ready_.begin(), ready_.end(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    pending_[b] = static_cast<int64_t>(buckets_[b].params.size());
  }
  nextLaunch_ = 0;
  launchedEarly_ = 0;
}

void GradReducer::onGradReady(size_t i) {
  if (!boundary_) {
    return;
  }
  TORCH_CHECK(!ready_[i], "GradReducer: parameter ", i,
              " received its gradient twice in one backward (call engine.backward once per micro-step)");
  ready_[i] = 1;
  // autograd steals or clones the incoming gradient when .grad is undefined (after a user's
  // zero_grad(set_to_none)); fold it back into the bucket before the bucket is reduced.
  adoptGrad(i);
  if (--pending_[bucketOf_[i]] == 0 && overlap_) {
    launchReadyInOrder();
  }
}

void GradReducer::launchReadyInOrder() {
  while (nextLaunch_ < buckets_.size() && pending_[nextLaunch_] == 0) {
    launch(nextLaunch_++);
    ++launchedEarly_;
  }
}

void GradReducer::launch(size_t b) {
  if (pg_->getSize() == 1) {
    return;
  }
  at::Tensor wire = bucketViews_[b];
  if (commDtype_ && *commDtype_ != wire.scalar_type()) {
    at::NoGradGuard noGrad;
    wire = wire.to(*commDtype_);
    wires_[b] = wire;
  }
  std::vector<at::Tensor> tensors{wire};
  timings_[b] = comms::PendingComm::start(commsLog_, comms::kAllReduce, wire);
  works_[b] = pg_->allreduce(tensors);
  timings_[b].watch(works_[b]);
}

double GradReducer::finish() {
  TORCH_CHECK(boundary_, "GradReducer: finish() after a non-boundary backward");
  auto start = std::chrono::steady_clock::now();
  // Parameters that took no part in this backward never fired their hook: reduce their (zero or
  // accumulated) gradients anyway so every rank reduces every bucket in the same order.
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!ready_[i] && params_[i].numel() > 0) {
      adoptGrad(i);
    }
  }
  while (nextLaunch_ < buckets_.size()) {
    launch(nextLaunch_++);
  }
  for (size_t b = 0; b < works_.size(); ++b) {
    if (works_[b]) {
      auto work = std::move(works_[b]);
      works_[b].reset();
      work->wait();
      std::exchange(timings_[b], comms::PendingComm()).waited();
    }
  }
  if (pg_->getSize() > 1) {
    at::NoGradGuard noGrad;
    for (size_t b = 0; b < buckets_.size(); ++b) {
      if (wires_[b].defined()) {
        bucketViews_[b].copy_(wires_[b].div_(pg_->getSize()));
        wires_[b] = at::Tensor();
      } else {
        bucketViews_[b].div_(pg_->getSize());
      }
    }
  }
  boundary_ = false;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void GradReducer::zeroGrad() {
  flat_.zero_();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].numel() > 0) {
      params_[i].mutable_grad() = viewOf(i);  // undoes a user's replacement of .grad
    }
  }
}

void GradReducer::adoptGrad(size_t i) {
  at::Tensor& grad = params_[i].mutable_grad();
  at::Tensor view = viewOf(i);
  if (!grad.defined()) {
    view.zero_();
    grad = view;
  } else if (grad.data_ptr() != view.data_ptr()) {
    view.copy_(grad);
    grad = view;
  }
}

}  // namespace dsrt::ddp
