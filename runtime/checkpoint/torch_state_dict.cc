#include "runtime/checkpoint/torch_state_dict.h"

#include <ATen/core/Dict.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

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
  // torch::jit::pickle_save's steps, with tag_aggregates off: a tagged dict names the global
  // torch.jit._pickle.restore_type_tag, which torch.load(weights_only=True) (torch >= 2.6's default)
  // refuses. Untagged, the file holds only what torch.save writes for a dict of tensors.
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* buf, size_t n) { pickle.insert(pickle.end(), buf, buf + n); },
                              nullptr, nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(c10::IValue(dict));
  pickler.stop();
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) ioFail(tmp, "open");
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) -> size_t {
      out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
      return out ? n : 0;
    });
    torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
    writer.writeEndOfFile();
  }
  out.flush();
  if (!out) ioFail(tmp, "write");
  out.close();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) ioFail(path, "rename");
}

NamedTensors readTorchStateDict(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ioFail(path, "open");
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(bytes);
  } catch (const c10::Error& e) {
    throw CheckpointError(path + ": not a torch state_dict file, got '" +
                          std::string(e.what_without_backtrace()).substr(0, 200) + "'");
  }
  if (!value.isGenericDict()) {
    throw CheckpointError(path + ": expected a {name: tensor} dict, got '" + value.tagKind() + "'");
  }
  NamedTensors out;
  for (const auto& item : value.toGenericDict()) {
    if (!item.key().isString() || !item.value().isTensor()) {
      throw CheckpointError(path + ": expected a {name: tensor} dict, got an entry of '" + item.value().tagKind() +
                            "'");
    }
    out.emplace_back(item.key().toStringRef(), item.value().toTensor());
  }
  return out;
}

}  // namespace dsrt::checkpoint
