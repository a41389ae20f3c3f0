#include "runtime/zero/partition_fragment.h"

#include <c10/util/Exception.h>

#include <utility>

namespace dsrt::zero {

ParamFragment partitionFragment(const PartitionPlan& plan, int rank, int64_t param, std::vector<int64_t> shape,
                                const PartitionTensors& tensors) {
  TORCH_CHECK(param >= 0 && param < static_cast<int64_t>(plan.paramNumels.size()), "zero: parameter index ",
              param, " is outside the ", plan.paramNumels.size(), " parameters the engine trains");
  ParamFragment f;
  f.shape = std::move(shape);
  f.partitioned = true;
  const int64_t begin = plan.partitionBegin(rank);
  for (const ParamPiece& piece : plan.piecesOf(rank)) {
    if (piece.param == param) {
      f.paramOffset = piece.paramOffset;
      f.numel = piece.numel;
      f.optimizerOffset = piece.flatOffset - begin;
      break;
    }
  }
  const auto run = [&f](const at::Tensor& t) { return t.defined() ? t.narrow(0, f.optimizerOffset, f.numel) : t; };
  f.master = run(tensors.master);
  f.model = run(tensors.model);
  f.grad = run(tensors.grad);
  return f;
}

}  // namespace dsrt::zero
