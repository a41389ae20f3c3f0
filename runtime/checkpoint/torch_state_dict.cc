#include "runtime/checkpoint/torch_state_dict.h"

#include <ATen/core/Dict.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "runtime/checkpoint/checkpoint_error.h"

namespace dsrt::checkpoint {
namespace {

[[noreturn]] void ioFail(const std::string& path, const char* what) {
  throw CheckpointError(path + ": " + what + ": " + std::strerror(errno) + " (writing the state_dict)");
}

}  // namespace

void writeTorchStateDict(const std::string& path, const NamedTensors& tensors) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, t] : tensors) {
    // A view would drag its whole storage into the file; torch.save writes the same for a clone.
    dict.insert(name, t.detach().to(at::kCPU).contiguous().clone());
  }
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(dict));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) ioFail(tmp, "open");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) ioFail(tmp, "write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) ioFail(path, "rename");
}

}  // namespace dsrt::checkpoint
