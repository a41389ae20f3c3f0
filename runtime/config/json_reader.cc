#include "runtime/config/json_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "runtime/config/config_warnings.h"

namespace dsrt::config {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string joinChoices(const std::vector<std::string>& choices) {
  std::string out;
  for (const std::string& c : choices) {
    out += (out.empty() ? "" : ", ") + c;
  }
  return out;
}

std::string formatNumber(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

std::string describe(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

namespace {

// Top-level blocks DeepSpeed reads with a DeepSpeedConfigModel (pydantic), whose constructor drops every
// "auto" value (runtime/config_utils.py): there "auto" means the default, in nested models too.
const std::set<std::string> kAutoDefaultBlocks = {
    "zero_optimization", "fp16", "bf16", "bfloat16", "comms_logger", "compile", "tensorboard", "wandb",
    "csv_monitor", "comet", "hybrid_engine", "timers", "tensor_parallel"};

}  // namespace

JsonReader::JsonReader(const nlohmann::json& object, std::string path, std::string source,
                       std::vector<std::string>& warnings)
    : object_(object), path_(std::move(path)), source_(std::move(source)), warnings_(&warnings) {}

std::string JsonReader::keyPath(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonReader::fail(const std::string& key, const std::string& what) const {
  auto it = object_.find(key);
  failValue(key, what, it == object_.end() ? std::string("nothing") : describe(*it));
}

void JsonReader::failValue(const std::string& key, const std::string& what, const std::string& got) const {
  throw ConfigError(source_ + ": " + keyPath(key) + ": " + what + ", got '" + got + "'");
}

void JsonReader::warn(const std::string& message) {
  std::string full = source_ + ": " + message;
  warnings_->push_back(full);
  warnOnce(full);
}

const nlohmann::json* JsonReader::lookup(const std::string& key) {
  known_.insert(key);
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) {
    return nullptr;
  }
  if (it->is_string() && it->get<std::string>() == "auto") {
    if (autoMeansDefault_) {
      return nullptr;
    }
    failValue(key,
              "\"auto\" is a placeholder that Hugging Face's Trainer or Accelerate fills in from its arguments; "
              "give a value (DeepSpeed reads \"auto\" as the default only inside zero_optimization, fp16, bf16 "
              "and the monitor blocks)",
              "auto");
  }
  return &*it;
}

bool JsonReader::has(const std::string& key) { return lookup(key) != nullptr; }

std::optional<int64_t> JsonReader::optInt(const std::string& key, int64_t min, int64_t max) {
  const nlohmann::json* v = lookup(key);
  if (!v) {
    return std::nullopt;
  }
  std::string expected = "expected an integer";
  if (max != INT64_MAX) {
    expected += " in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  } else if (min != INT64_MIN) {
    expected += " >= " + std::to_string(min);
  }
  int64_t value = 0;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      fail(key, expected);
    }
    value = static_cast<int64_t>(v->get<uint64_t>());
  } else if (v->is_number_integer()) {
    value = v->get<int64_t>();
  } else if (v->is_number_float()) {
    // DeepSpeed configs write sizes as 5e8; accept any float that is a whole number in range.
    double d = v->get<double>();
    if (!std::isfinite(d) || std::floor(d) != d || d < -9.2e18 || d > 9.2e18) {
      fail(key, expected);
    }
    value = static_cast<int64_t>(d);
  } else {
    fail(key, expected);
  }
  if (value < min || value > max) {
    fail(key, expected);
  }
  return value;
}

int64_t JsonReader::getInt(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  return optInt(key, min, max).value_or(fallback);
}

std::optional<double> JsonReader::optDouble(const std::string& key) {
  const nlohmann::json* v = lookup(key);
  if (!v) {
    return std::nullopt;
  }
  if (!v->is_number()) {
    fail(key, "expected a number");
  }
  return v->get<double>();
}

double JsonReader::getDouble(const std::string& key, double fallback, double min, double max) {
  std::optional<double> v = optDouble(key);
  if (!v) {
    return fallback;
  }
  if (!(*v >= min && *v <= max)) {
    if (max == HUGE_VAL) {
      fail(key, "expected a number >= " + formatNumber(min));
    }
    if (min == -HUGE_VAL) {
      fail(key, "expected a number <= " + formatNumber(max));
    }
    fail(key, "expected a number in [" + formatNumber(min) + ", " + formatNumber(max) + "]");
  }
  return *v;
}

std::optional<bool> JsonReader::optBool(const std::string& key) {
  const nlohmann::json* v = lookup(key);
  if (!v) {
    return std::nullopt;
  }
  if (!v->is_boolean()) {
    fail(key, "expected true or false");
  }
  return v->get<bool>();
}

bool JsonReader::getBool(const std::string& key, bool fallback) { return optBool(key).value_or(fallback); }

std::optional<std::string> JsonReader::optChoice(const std::string& key, const std::vector<std::string>& choices,
                                                 bool ignoreCase) {
  const nlohmann::json* v = lookup(key);
  if (!v) {
    return std::nullopt;
  }
  if (v->is_string()) {
    std::string s = v->get<std::string>();
    for (const std::string& c : choices) {
      if (c == s || (ignoreCase && lower(c) == lower(s))) {
        return c;
      }
    }
  }
  fail(key, "expected one of " + joinChoices(choices));
}

std::optional<JsonReader> JsonReader::child(const std::string& key) {
  const nlohmann::json* v = lookup(key);
  if (!v) {
    return std::nullopt;
  }
  if (!v->is_object()) {
    fail(key, "expected an object");
  }
  JsonReader block(*v, keyPath(key), source_, *warnings_);
  block.autoMeansDefault_ = autoMeansDefault_ || (path_.empty() && kAutoDefaultBlocks.count(key) > 0);
  return block;
}

void JsonReader::ignore(std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    known_.insert(key);
    if (object_.contains(key)) {
      warn(keyPath(key) + ": not supported by libdsrt, ignored");
    }
  }
}

void JsonReader::deprecated(const std::string& key, const std::string& replacement) {
  known_.insert(key);
  if (object_.contains(key)) {
    warn(keyPath(key) + ": deprecated, use " + replacement + " instead");
  }
}

void JsonReader::finish() {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!known_.count(it.key())) {
      warn(keyPath(it.key()) + ": unknown key, ignored");
    }
  }
}

}  // namespace dsrt::config
