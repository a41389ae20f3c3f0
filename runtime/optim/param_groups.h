#pragma once
// torch-style parameter groups over one flat optimizer tensor. Scripts pass groups with their own
// hyper-parameters (most often weight_decay 0 for biases and norms, sometimes their own lr), and an LR
// scheduler may move each group's lr on its own; the flat optimizer steps each run of the tensor with the
// settings of the group that owns it. Torch-free: the layout arithmetic is tested in milliseconds.

#include <cstdint>
#include <optional>
#include <vector>

namespace dsrt::optim {

/// One group's hyper-parameters for the next step. An unset field takes the optimizer's own
/// (OptimizerSpec for betas/eps/weight decay, the step's scheduled lr for lr).
struct GroupSettings {
  std::optional<double> lr;
  std::optional<double> weightDecay;
  std::optional<double> beta1;
  std::optional<double> beta2;
  std::optional<double> eps;
};

/// A run of the flat tensor owned by one group: elements [previous run's end, end).
struct GroupRun {
  int64_t end = 0;
  int group = 0;
};

/// Where one parameter (or the piece of it a partition holds) lies in a flat tensor.
struct ParamSpan {
  int64_t offset = 0;  ///< first element in the flat tensor
  int64_t numel = 0;
  int group = 0;
};

/// The runs covering [0, numel) for `spans` (any order, non-overlapping, inside [0, numel)): adjacent
/// spans of one group merge; elements no span covers (alignment padding) join the run before them, or
/// the first run when they lead. No spans: one run of group 0. Throws std::invalid_argument for a span
/// outside [0, numel), overlapping spans or a negative group.
std::vector<GroupRun> groupRunsOf(std::vector<ParamSpan> spans, int64_t numel);

}  // namespace dsrt::optim
