#include <c10/util/Exception.h>

#include "runtime/runtime.h"

namespace dsrt {

std::shared_ptr<DistContext> resolveDist(const InitOptions& options) {
  return options.dist ? options.dist : init_distributed(options.distOptions);
}

config::DeepSpeedConfig loadConfig(const std::string& path, int worldSize) {
  try {
    return config::loadConfigFile(path, worldSize);
  } catch (const config::ConfigError& e) {
    TORCH_CHECK(false, e.what());
  }
}

config::DeepSpeedConfig loadConfig(const nlohmann::json& doc, int worldSize, const std::string& source) {
  try {
    return config::parseConfig(doc, worldSize, source);
  } catch (const config::ConfigError& e) {
    TORCH_CHECK(false, e.what());
  }
}

}  // namespace dsrt
