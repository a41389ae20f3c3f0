#pragma once
// The one exception the torch-free config library throws. libdsrt's engine rethrows it as c10::Error
// (docs/style.md §5: the runtime speaks TORCH_CHECK), so users still catch a single type.

#include <stdexcept>
#include <string>
#include <utility>

namespace dsrt::config {

/// A ds_config that cannot be used: what() is one line
/// "<source>: <key.path>: <what was wrong>, got '<value>'" (or the batch-arithmetic message).
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A ConfigError of the "elasticity" block that keeps which DeepSpeed exception the same config raises
/// (elastic/elastic_error.h kindName: "config", "elasticity", "incompatible_world_size", "other"), so the
/// Python package can raise DeepSpeed's class for it.
class ElasticityConfigError : public ConfigError {
 public:
  ElasticityConfigError(std::string kind, const std::string& message) : ConfigError(message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

}  // namespace dsrt::config
