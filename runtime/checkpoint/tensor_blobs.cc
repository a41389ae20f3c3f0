#include "runtime/checkpoint/tensor_blobs.h"

#include <ATen/ATen.h>

#include <cstring>
#include <utility>

#include "runtime/checkpoint/checkpoint_error.h"

namespace dsrt::checkpoint {
namespace {

const std::pair<c10::ScalarType, const char*> kDtypes[] = {
    {at::kFloat, "float32"}, {at::kHalf, "float16"}, {at::kBFloat16, "bfloat16"}, {at::kDouble, "float64"},
    {at::kLong, "int64"},    {at::kInt, "int32"},    {at::kChar, "int8"},         {at::kByte, "uint8"},
    {at::kBool, "bool"}};

}  // namespace

std::string dtypeName(c10::ScalarType type) {
  for (const auto& [t, name] : kDtypes) {
    if (t == type) return name;
  }
  throw CheckpointError(std::string("checkpoint: unsupported tensor dtype, got '") + c10::toString(type) + "'");
}

BlobView blobView(const std::string& name, const at::Tensor& t) {
  if (!t.defined() || !t.is_contiguous() || !t.device().is_cpu()) {
    throw CheckpointError("checkpoint: tensor '" + name + "' must be a defined contiguous CPU tensor");
  }
  return BlobView{name, dtypeName(t.scalar_type()), t.sizes().vec(), t.data_ptr(), t.nbytes()};
}

at::Tensor toTensor(const Blob& blob, const std::string& source) {
  for (const auto& [type, name] : kDtypes) {
    if (blob.dtype != name) continue;
    at::Tensor t = at::empty(blob.shape, at::TensorOptions().dtype(type));
    if (t.nbytes() != blob.bytes.size()) {
      throw CheckpointError(source + ": tensor '" + blob.name + "' has " + std::to_string(blob.bytes.size()) +
                            " bytes for its shape, expected " + std::to_string(t.nbytes()) + ", got '" +
                            std::to_string(blob.bytes.size()) + "'");
    }
    if (!blob.bytes.empty()) std::memcpy(t.data_ptr(), blob.bytes.data(), blob.bytes.size());
    return t;
  }
  throw CheckpointError(source + ": tensor '" + blob.name + "' has an unsupported dtype, got '" + blob.dtype + "'");
}

}  // namespace dsrt::checkpoint
