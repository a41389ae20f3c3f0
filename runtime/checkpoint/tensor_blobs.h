#pragma once
// Between at::Tensor and the checkpoint file's raw blobs (checkpoint_file.h).

#include <ATen/core/Tensor.h>

#include <string>

#include "runtime/checkpoint/checkpoint_file.h"

namespace dsrt::checkpoint {

/// torch's dtype name ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8",
/// "bool"); throws CheckpointError for another dtype.
std::string dtypeName(c10::ScalarType type);

/// A view of `t`'s bytes named `name`. `t` must be a contiguous CPU tensor that outlives the view
/// (call .contiguous().cpu() first and keep the result). Throws CheckpointError otherwise.
BlobView blobView(const std::string& name, const at::Tensor& t);

/// A new CPU tensor holding a copy of `blob`. Throws CheckpointError naming `source` on an unknown
/// dtype or a byte count that does not match the shape.
at::Tensor toTensor(const Blob& blob, const std::string& source);

}  // namespace dsrt::checkpoint
