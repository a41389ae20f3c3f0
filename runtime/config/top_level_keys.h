#pragma once
// The ds_config top-level keys DeepSpeed understands that libdsrt's parser does not read itself, with what
// happens to each. One table, so the parser, the warnings and the documentation cannot disagree: the
// Python package exposes it as dsrt._C.unparsed_config_keys() for docs generated from the code.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dsrt::config {

enum class KeySupport {
  NotSupported,   ///< nothing implements it: warned about (when enabled), then ignored
  PythonPackage,  ///< the dsrt Python package implements it (python/dsrt/monitor, ...); a C++ program ignores it
};

struct TopLevelKey {
  const char* key;      ///< the top-level ds_config key, DeepSpeed's spelling
  KeySupport support;   ///< who implements it
  const char* note;     ///< one line for the docs: what dsrt does with it
};

/// Every key in the table, in DeepSpeed's config order.
const std::vector<TopLevelKey>& unparsedTopLevelKeys();

/// "not supported" / "python package": the spelling the docs and the Python binding use.
std::string toString(KeySupport support);

/// Whether the value switches the feature on: `true`/`false`, an object's "enabled", or `enabledByDefault`
/// for an object without one (DeepSpeed's monitor and profiler blocks default to off). A disabled block is
/// silent: DeepSpeed reads it as absent.
bool blockEnabled(const nlohmann::json& value, bool enabledByDefault);

}  // namespace dsrt::config
