#pragma once
// A state_dict file that plain torch opens: `torch.load(path)` returns {name: tensor} in the order given
// (DeepSpeed's zero_to_fp32 output, pytorch_model.bin), also with weights_only=True. Written with LibTorch's
// own pickler and zip writer (the format torch.save writes), so no format of ours is involved.

#include <string>

#include "runtime/checkpoint/consolidate.h"

namespace dsrt::checkpoint {

/// Writes `tensors` (contiguous CPU copies) to `path` through `path`.tmp and a rename, so a crash never
/// leaves a half-written file under the final name. Throws CheckpointError "<path>: <what>: <strerror>".
void writeTorchStateDict(const std::string& path, const NamedTensors& tensors);

/// Reads a {name: tensor} file torch.save or writeTorchStateDict wrote, in its order. Throws
/// CheckpointError naming the path when it is unreadable or not such a dict.
NamedTensors readTorchStateDict(const std::string& path);

}  // namespace dsrt::checkpoint
