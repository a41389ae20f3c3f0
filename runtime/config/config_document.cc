// Reading a ds_config's text (JSON or YAML) into a document: the file-facing half of deepspeed_config.h.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "runtime/config/deepspeed_config.h"
#include "runtime/config/yaml_document.h"

namespace dsrt::config {
namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isYamlPath(const std::string& path) { return endsWith(path, ".yaml") || endsWith(path, ".yml"); }

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError(path + ": cannot open ds_config: " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Tracks the keys of every open object so a repeated key fails like DeepSpeed's
// dict_raise_error_on_duplicate_keys instead of silently keeping the last value.
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(std::string source) : source_(std::move(source)) {}

  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start || event == Event::array_start) {
      frames_.push_back(Frame{});
    } else if (event == Event::object_end || event == Event::array_end) {
      frames_.pop_back();
    } else if (event == Event::key && !frames_.empty()) {
      std::string key = parsed.get<std::string>();
      if (!frames_.back().keys.insert(key).second) {
        throw ConfigError(source_ + ": duplicate key in ds_config, got '" + path(key) + "'");
      }
      frames_.back().currentKey = key;
    }
    return true;
  }

 private:
  struct Frame {
    std::set<std::string> keys;
    std::string currentKey;
  };

  std::string path(const std::string& key) const {
    std::string out;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      if (!frames_[i].currentKey.empty()) {
        out += frames_[i].currentKey + ".";
      }
    }
    return out + key;
  }

  std::string source_;
  std::vector<Frame> frames_;
};

nlohmann::json parseJsonText(const std::string& text, const std::string& source) {
  try {
    // DeepSpeed reads configs with hjson, so // and /* */ comments are accepted here too.
    return nlohmann::json::parse(text, DuplicateKeyCheck(source), /*allow_exceptions=*/true,
                                 /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's text reads "[json.exception.parse_error.101] parse error at line 3, column 5: <what>".
    static const std::regex kWhere("at line ([0-9]+), column ([0-9]+): (.*)");
    std::smatch m;
    std::string what = e.what();
    if (std::regex_search(what, m, kWhere)) {
      throw ConfigError(source + ":" + m[1].str() + ":" + m[2].str() + ": invalid JSON: " + m[3].str());
    }
    throw ConfigError(source + ": invalid JSON: " + what);
  }
}

}  // namespace

DeepSpeedConfig parseConfigText(const std::string& text, int worldSize, const std::string& source) {
  return parseConfig(parseJsonText(text, source), worldSize, source);
}

nlohmann::json readConfigDocument(const std::string& path) {
  std::string text = readFile(path);
  return isYamlPath(path) ? yamlToJson(text, path) : parseJsonText(text, path);
}

DeepSpeedConfig loadConfigFile(const std::string& path, int worldSize) {
  return parseConfig(readConfigDocument(path), worldSize, path);
}

}  // namespace dsrt::config
