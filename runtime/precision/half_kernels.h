#pragma once
// Whether the torch in this process can run a float16 model on a device. Some CPU builds have no Half
// matrix multiply (Debian's torch 1.13: "addmm_impl_cpu_" not implemented for 'Half'), so an fp16 config
// that works on a GPU fails deep inside the first forward on such a CPU. The answer is probed from torch
// itself, never inferred from its version.

#include <c10/core/Device.h>

#include <optional>
#include <string>

namespace dsrt::precision {

/// torch's own error for a float16 matrix multiply on `device` (first line), or nullopt when the kernel
/// exists. Runs one 1x1 addmm per device type on first use and remembers the answer; thread-safe.
std::optional<std::string> missingHalfMatmul(c10::Device device);

/// What `"fp16": {"enabled": true}` meets on `device`: torch's error and the remedy (bf16). `source` is
/// where the config came from. The engine warns with it at construction and throws it from the forward
/// that needs a missing kernel.
std::string fp16Refusal(const std::string& source, c10::Device device, const std::string& torchError);

/// The line of an exception's text that says a Half kernel is missing ("... not implemented for 'Half'"),
/// or nullopt when the text says something else. Works on c10::Error and on Python's RuntimeError text.
std::optional<std::string> missingHalfKernelLine(const std::string& what);

}  // namespace dsrt::precision
