#include "runtime/zero/flat_param_buffer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

namespace dsrt::zero {

FlatParamBuffer::FlatParamBuffer(std::vector<at::Tensor> params, const PartitionPlan& plan)
    : plan_(plan), params_(std::move(params)) {
  TORCH_CHECK(params_.size() == plan_.paramNumels.size(), "zero: plan has ", plan_.paramNumels.size(),
              " parameters, got '", params_.size(), "'");
  TORCH_CHECK(!params_.empty(), "zero: the model has no trainable parameters");
  const auto device = params_.front().device();
  const auto dtype = params_.front().scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16,
              "zero: parameter 0 must be fp32, fp16 or bf16, got '", dtype, "'");
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    TORCH_CHECK(p.scalar_type() == dtype, "zero: parameter ", i, " is ", p.scalar_type(),
                ", parameter 0 is '", dtype, "' (the engine converts the whole model for fp16/bf16)");
    TORCH_CHECK(p.device() == device, "zero: parameter ", i, " is on ", p.device(), ", parameter 0 on '", device, "'");
    TORCH_CHECK(p.numel() == plan_.paramNumels[i], "zero: parameter ", i, " has ", p.numel(),
                " elements, the plan says '", plan_.paramNumels[i], "'");
  }
  flat_ = at::zeros({plan_.paddedNumel}, params_.front().options().requires_grad(false));
  c10::AutoGradMode noGrad(false);
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor view = viewOf(flat_, static_cast<int64_t>(i));
    view.copy_(params_[i].detach().reshape({-1}));
    // set_data keeps the tensor object (and its grad accumulator) the module holds.
    params_[i].set_data(view.view(params_[i].sizes()));
  }
}

at::Tensor FlatParamBuffer::partition(int rank) const {
  return flat_.narrow(0, plan_.partitionBegin(rank), plan_.partitionNumel);
}

at::Tensor FlatParamBuffer::viewOf(const at::Tensor& flat, int64_t i) const {
  return flat.narrow(0, plan_.paramOffsets[static_cast<size_t>(i)], plan_.paramNumels[static_cast<size_t>(i)]);
}

at::Tensor FlatParamBuffer::bindFlatGrads() const {
  at::Tensor flatGrad = at::zeros_like(flat_);
  for (size_t i = 0; i < params_.size(); ++i) {
    rebindGrad(flatGrad, static_cast<int64_t>(i));
  }
  return flatGrad;
}

at::Tensor FlatParamBuffer::rebindGrad(const at::Tensor& flatGrad, int64_t i) const {
  at::Tensor view = viewOf(flatGrad, i).view(params_[static_cast<size_t>(i)].sizes());
  at::Tensor& grad = params_[static_cast<size_t>(i)].mutable_grad();
  if (grad.defined() && grad.data_ptr() == view.data_ptr()) {
    return view;
  }
  if (grad.defined()) {
    c10::AutoGradMode noGrad(false);
    view.copy_(grad);
  }
  grad = view;
  return view;
}

}  // namespace dsrt::zero
