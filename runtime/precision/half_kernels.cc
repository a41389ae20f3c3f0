#include "runtime/precision/half_kernels.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <map>
#include <mutex>

namespace dsrt::precision {
namespace {

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

std::optional<std::string> probe(c10::Device device) {
  try {
    const at::Tensor one = at::ones({1, 1}, at::TensorOptions().dtype(at::kHalf).device(device));
    at::addmm(one, one, one);
    return std::nullopt;
  } catch (const c10::Error& e) {
    return firstLine(e.what_without_backtrace());
  }
}

}  // namespace

std::optional<std::string> missingHalfMatmul(c10::Device device) {
  static std::mutex mutex;
  static std::map<c10::DeviceType, std::optional<std::string>> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(device.type());
  if (it == known.end()) {
    it = known.emplace(device.type(), probe(device)).first;
  }
  return it->second;
}

std::string fp16Refusal(const std::string& source, c10::Device device, const std::string& torchError) {
  return source + ": fp16.enabled: this torch has no float16 kernels for the model on " + device.str() + " (" +
         torchError + "), got 'true'\n  hint: use \"bf16\": {\"enabled\": true} instead of fp16 on this " +
         "machine, or train on a GPU";
}

std::optional<std::string> missingHalfKernelLine(const std::string& what) {
  const size_t at = what.find("not implemented for 'Half'");
  if (at == std::string::npos) return std::nullopt;
  const size_t begin = what.rfind('\n', at);
  std::string line = what.substr(begin == std::string::npos ? 0 : begin + 1);
  line = line.substr(0, line.find('\n'));
  const std::string python = "RuntimeError: ";
  return line.rfind(python, 0) == 0 ? line.substr(python.size()) : line;
}

}  // namespace dsrt::precision
