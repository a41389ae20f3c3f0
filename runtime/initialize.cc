#include <c10/util/Exception.h>

#include <functional>
#include <optional>

#include "runtime/config/config_warnings.h"
#include "runtime/runtime.h"

namespace dsrt {
namespace {

// One parse for both overloads: rank 0 alone prints the warnings, and a C++ program hears which enabled
// blocks only the Python package carries out (the parse records them without a warning).
config::DeepSpeedConfig parseWith(const std::function<config::DeepSpeedConfig()>& parse, int rank,
                                  Frontend frontend) {
  std::optional<config::SilencedWarnings> silenced;
  if (rank != 0) silenced.emplace();
  try {
    config::DeepSpeedConfig cfg = parse();
    if (frontend == Frontend::Cpp) {
      for (const std::string& key : cfg.pythonPackageBlocks) {
        cfg.warnings.push_back(cfg.source + ": " + key +
                               ": carried out by the dsrt Python package only, ignored by C++ programs");
        config::warnOnce(cfg.warnings.back());
      }
    }
    return cfg;
  } catch (const config::ElasticityConfigError& e) {
    // The Python package raises DeepSpeed's elasticity exception class for it (python/csrc/errors.cc).
    if (frontend == Frontend::Python) throw;
    TORCH_CHECK(false, e.what());
  } catch (const config::ConfigError& e) {
    TORCH_CHECK(false, e.what());
  }
}

}  // namespace

std::shared_ptr<DistContext> resolveDist(const InitOptions& options) {
  return options.dist ? options.dist : init_distributed(options.distOptions);
}

config::DeepSpeedConfig loadConfig(const std::string& path, int worldSize, int rank, Frontend frontend) {
  return parseWith([&] { return config::loadConfigFile(path, worldSize); }, rank, frontend);
}

config::DeepSpeedConfig loadConfig(const nlohmann::json& doc, int worldSize, const std::string& source, int rank,
                                   Frontend frontend) {
  return parseWith([&] { return config::parseConfig(doc, worldSize, source); }, rank, frontend);
}

}  // namespace dsrt
