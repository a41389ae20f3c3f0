#include "runtime/config/yaml_document.h"

#include <regex>

#include "runtime/config/config_error.h"

#ifdef DSRT_HAVE_YAML
#include <yaml-cpp/yaml.h>
#endif

namespace dsrt::config {

#ifdef DSRT_HAVE_YAML
namespace {

std::string where(const std::string& source, const YAML::Mark& mark) {
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// YAML 1.2 core schema (what users of 1.2-era tools expect). PyYAML's 1.1 rules would read 2e8 as a string.
nlohmann::json plainScalar(const std::string& s) {
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
    return nullptr;
  }
  if (s == "true" || s == "True" || s == "TRUE") {
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    return false;
  }
  if (std::regex_match(s, kInt)) {
    try {
      return std::stoll(s);
    } catch (const std::out_of_range&) {
      return std::stod(s);
    }
  }
  if (std::regex_match(s, kFloat)) {
    return std::stod(s);
  }
  return s;
}

nlohmann::json convert(const YAML::Node& node, const std::string& source) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // yaml-cpp tags plain scalars "?" and quoted ones "!".
      return node.Tag() == "!" ? nlohmann::json(node.Scalar()) : plainScalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const YAML::Node& item : node) {
        out.push_back(convert(item, source));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar()) {
          throw ConfigError(where(source, it->first.Mark()) + ": expected a scalar mapping key");
        }
        std::string key = it->first.Scalar();
        if (out.contains(key)) {
          throw ConfigError(where(source, it->first.Mark()) + ": duplicate key, got '" + key + "'");
        }
        out[key] = convert(it->second, source);
      }
      return out;
    }
  }
  return nullptr;
}

}  // namespace

bool yamlSupported() { return true; }

nlohmann::json yamlToJson(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(where(source, e.mark) + ": invalid YAML: " + e.msg);
  }
  return convert(root, source);
}

#else

bool yamlSupported() { return false; }

nlohmann::json yamlToJson(const std::string& /*text*/, const std::string& source) {
  throw ConfigError(source + ": YAML configs need libdsrt built with yaml-cpp (install libyaml-cpp-dev and"
                    " reconfigure), or write the config as JSON");
}

#endif

}  // namespace dsrt::config
