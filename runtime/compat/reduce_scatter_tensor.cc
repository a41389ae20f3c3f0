#include "runtime/compat/reduce_scatter_tensor.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace dsrt::compat {

c10::intrusive_ptr<c10d::Work> reduceScatterTensor(c10d::ProcessGroup& pg, at::Tensor& output, at::Tensor& input) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return pg._reduce_scatter_base(output, input);
#pragma GCC diagnostic pop
}

}  // namespace dsrt::compat
