#include "runtime/optim/flat_state_load.h"

#include <c10/util/Exception.h>

#include <sstream>

namespace dsrt::optim {
namespace {

std::string namesOf(const std::vector<std::pair<std::string, at::Tensor*>>& targets) {
  std::ostringstream out;
  for (size_t i = 0; i < targets.size(); ++i) {
    out << (i == 0 ? "" : ", ") << targets[i].first;
  }
  return out.str();
}

}  // namespace

void loadFlatState(const OptimizerState& state, int64_t stepCount, const char* kind,
                   const std::vector<std::pair<std::string, at::Tensor*>>& targets) {
  TORCH_CHECK(stepCount >= 0, "optimizer: step count must be >= 0, got '", stepCount, "'");
  TORCH_CHECK(state.size() == targets.size(), "optimizer: ", kind, " state needs ", namesOf(targets), ", got ",
              state.size(), " tensors");
  std::vector<bool> seen(targets.size(), false);
  for (const auto& [name, tensor] : state) {
    size_t i = 0;
    while (i < targets.size() && targets[i].first != name) {
      ++i;
    }
    TORCH_CHECK(i < targets.size(), "optimizer: unknown ", kind, " state '", name, "' (expected ", namesOf(targets),
                ")");
    TORCH_CHECK(!seen[i], "optimizer: ", kind, " state '", name, "' given twice");
    seen[i] = true;
    at::Tensor& target = *targets[i].second;
    TORCH_CHECK(tensor.numel() == target.numel(), "optimizer: ", kind, " ", name, " must have ", target.numel(),
                " elements, got '", tensor.numel(), "'");
  }
  // Copy only once every entry checked out, so a refused load leaves the state as it was.
  for (const auto& [name, tensor] : state) {
    for (const auto& [targetName, target] : targets) {
      if (targetName == name) {
        target->copy_(tensor.reshape({target->numel()}));
      }
    }
  }
}

}  // namespace dsrt::optim
