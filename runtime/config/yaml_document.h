#pragma once
// YAML ds_configs through yaml-cpp, converted to the same JSON document a .json file gives, so YAML and
// JSON configs share one validator. Optional: without yaml-cpp at build time the functions throw.

#include <string>

#include <nlohmann/json.hpp>

namespace dsrt::config {

/// True if this build of libdsrt can read YAML (it found yaml-cpp; DSRT_HAVE_YAML).
bool yamlSupported();

/// Parses YAML text into JSON: plain scalars follow YAML 1.2's core schema (null, true/false, integers,
/// floats such as 2e8), quoted scalars stay strings. Duplicate keys, anchors-to-nowhere and syntax errors
/// are ConfigErrors "<source>:<line>:<column>: ...".
nlohmann::json yamlToJson(const std::string& text, const std::string& source);

}  // namespace dsrt::config
