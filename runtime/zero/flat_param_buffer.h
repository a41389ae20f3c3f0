#pragma once
// The flat buffer (in the model's dtype: fp32, fp16 or bf16) that holds a model's parameters in a
// PartitionPlan's layout. Construction copies every parameter into it and rebinds the parameter's data to its view (as DeepSpeed's
// _update_model_bit16_weights does), so an optimizer step on one partition and an all-gather into
// the others update the model in place with no extra copy.

#include "runtime/zero/partition_plan.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace dsrt::zero {

/// Owns the flat buffer; the parameters keep their tensor objects but alias it afterwards.
/// Not thread-safe. Throws c10::Error when the parameters do not share one floating dtype and device,
/// or do not match the plan.
class FlatParamBuffer {
 public:
  FlatParamBuffer(std::vector<at::Tensor> params, const PartitionPlan& plan);

  /// The whole padded buffer (plan.paddedNumel elements); padding is zero.
  const at::Tensor& flat() const { return flat_; }
  /// `rank`'s partition of flat(), a contiguous view.
  at::Tensor partition(int rank) const;
  /// The model's parameters, in plan order (their data now views of flat()).
  const std::vector<at::Tensor>& params() const { return params_; }
  /// A zero-filled buffer shaped like flat() whose views become each parameter's .grad, so autograd
  /// accumulates gradients straight into it (ZeRO-1 keeps full gradients there).
  at::Tensor bindFlatGrads() const;
  /// Re-points params()[i].grad at its view of `flatGrad` if something replaced it (set_to_none, a
  /// create_graph backward); a replacing gradient is copied in first. Returns the view.
  at::Tensor rebindGrad(const at::Tensor& flatGrad, int64_t i) const;

 private:
  at::Tensor viewOf(const at::Tensor& flat, int64_t i) const;

  PartitionPlan plan_;
  std::vector<at::Tensor> params_;  ///< the model's parameters, data aliasing flat_
  at::Tensor flat_;                 ///< plan_.paddedNumel elements in the parameters' dtype
};

}  // namespace dsrt::zero
