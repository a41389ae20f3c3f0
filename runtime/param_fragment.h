#pragma once
// DeepSpeed's tensor fragment (deepspeed/utils/tensor_fragment.py): what this rank's optimizer holds of one
// parameter. deepspeed.utils.safe_get_full_fp32_param and its siblings (python/dsrt/utils/tensor_fragment.py)
// read and write parameters, gradients and optimizer state through it; a full value is the sum over ranks
// of each rank's fragment placed at its paramOffset (every element lies in exactly one rank's fragment,
// or, without partitioning, in every rank's whole-parameter fragment).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace dsrt {

struct ParamFragment {
  std::vector<int64_t> shape;   ///< the parameter's full shape (ZeRO-3 releases the data, not the shape)
  int64_t paramOffset = 0;      ///< first element of the fragment in the flattened parameter
  int64_t numel = 0;            ///< elements this rank holds (0: none)
  int64_t optimizerOffset = 0;  ///< where the fragment starts in the optimizer's flat tensors (its state())
  bool partitioned = false;     ///< ZeRO: ranks hold disjoint fragments; stage 0: every rank holds it whole
  at::Tensor master;            ///< fp32 values the optimizer updates: 1-D view of live memory, numel elements
  at::Tensor model;             ///< the model-dtype values gathers and forwards read (master itself when aliased)
  at::Tensor grad;              ///< the gradient the next step uses (see GradStrategy::fragment), 1-D view
};

}  // namespace dsrt
