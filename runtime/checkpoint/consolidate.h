#pragma once
// A checkpoint directory -> the full fp32 parameters by name (DeepSpeed's zero_to_fp32.py): for ZeRO
// checkpoints the fp32 master partitions of all ranks are concatenated and cut into parameters (the
// module file may hold only low-precision weights); for stage 0 the module file's tensors are used.

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dsrt::checkpoint {

/// Name -> fp32 tensor (parameter shapes), registration order.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// Reads DIR/TAG (TAG = DIR/latest's when not given) and consolidates it. Throws CheckpointError naming
/// the missing or inconsistent file (no `latest`, missing partition files, plans that disagree).
NamedTensors consolidateFp32(const std::string& dir, const std::optional<std::string>& tag = std::nullopt);

/// The tag `tag` or DIR/latest names; throws CheckpointError when neither exists, or DIR/TAG is missing
/// (listing a staging leftover DIR/TAG.tmp if there is one, which means that save never finished).
std::string resolveTag(const std::string& dir, const std::optional<std::string>& tag);

/// Writes `tensors` as one checkpoint_file (meta kind "dsrt_fp32_state_dict"), fsynced.
void writeFp32StateFile(const std::string& path, const NamedTensors& tensors);
/// Reads what writeFp32StateFile wrote.
NamedTensors readFp32StateFile(const std::string& path);

/// Writes `tensors` in their own dtypes (meta kind "dsrt_state_dict"), fsynced: engine.save_16bit_model's
/// file (DeepSpeed's pytorch_model.bin).
void writeStateDictFile(const std::string& path, const NamedTensors& tensors);
/// Reads a file written by writeStateDictFile or writeFp32StateFile; throws CheckpointError otherwise.
NamedTensors readStateDictFile(const std::string& path);

}  // namespace dsrt::checkpoint
