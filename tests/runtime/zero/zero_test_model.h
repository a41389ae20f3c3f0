#pragma once
// A tiny functional MLP and a deterministic data set shared by the ZeRO tests: plain ATen leaf tensors
// (no torch::nn, which costs ~20 s per translation unit to compile), sizes chosen so that the flat
// buffer needs padding and partition boundaries cut through parameters.

#include <ATen/ATen.h>

#include <vector>

namespace dsrt::zero::testing {

/// Layer widths 7 -> 13 -> 5 -> 1: 91 + 13 + 65 + 5 + 5 + 1 = 180 parameters.
inline std::vector<at::Tensor> initialParams() {
  at::manual_seed(1234);
  std::vector<int64_t> widths{7, 13, 5, 1};
  std::vector<at::Tensor> params;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    params.push_back(at::randn({widths[l + 1], widths[l]}) * (1.0 / std::sqrt(double(widths[l]))));
    params.push_back(at::randn({widths[l + 1]}) * 0.1);
  }
  return params;
}

/// Leaf copies of `init` that require grad (one model replica).
inline std::vector<at::Tensor> replicate(const std::vector<at::Tensor>& init) {
  std::vector<at::Tensor> out;
  for (const auto& t : init) {
    out.push_back(t.clone().set_requires_grad(true));
  }
  return out;
}

/// Mean squared error of the MLP on (x, y); `skip` >= 0 leaves out that layer's bias (an unused param).
inline at::Tensor mlpLoss(const std::vector<at::Tensor>& p, const at::Tensor& x, const at::Tensor& y,
                          int skip = -1) {
  at::Tensor h = x;
  const size_t layers = p.size() / 2;
  for (size_t l = 0; l < layers; ++l) {
    h = static_cast<int>(l) == skip ? at::matmul(h, p[2 * l].t()) : at::linear(h, p[2 * l], p[2 * l + 1]);
    if (l + 1 < layers) {
      h = at::relu(h);
    }
  }
  return at::mse_loss(h, y);
}

/// `samples` inputs and targets, a pure function of the seed.
struct Data {
  at::Tensor x;
  at::Tensor y;
};
inline Data makeData(int64_t samples) {
  at::manual_seed(99);
  Data d;
  d.x = at::randn({samples, 7});
  d.y = at::sin(d.x.sum(1, true)) + 0.1 * at::randn({samples, 1});
  return d;
}

}  // namespace dsrt::zero::testing
