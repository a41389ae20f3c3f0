#pragma once
// JsonReader: typed, path-aware access to one JSON object of a ds_config. Internal to dsrt_config.
// Every getter marks its key as known; finish() then warns about the keys nobody asked for. null counts as
// absent. "auto" counts as absent inside the blocks DeepSpeed parses with DeepSpeedConfigModel, which drops
// "auto" for the default (zero_optimization, fp16, bf16, the monitors, ...: kAutoDefaultBlocks); anywhere
// else DeepSpeed would use the string itself and fail, so the getters refuse it, naming the key.

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/config/config_error.h"

namespace dsrt::config {

class JsonReader {
 public:
  /// `object` must outlive the reader; `path` is its dotted key path ("" for the root);
  /// warnings are appended to `warnings` and also sent through warnOnce().
  JsonReader(const nlohmann::json& object, std::string path, std::string source,
             std::vector<std::string>& warnings);

  /// True if `key` holds a value other than null / "auto" (marks the key as known).
  bool has(const std::string& key);

  /// Integers, or floats with an integral value (5e8), within [min, max].
  std::optional<int64_t> optInt(const std::string& key, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
  int64_t getInt(const std::string& key, int64_t fallback, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
  std::optional<double> optDouble(const std::string& key);
  double getDouble(const std::string& key, double fallback, double min = -HUGE_VAL, double max = HUGE_VAL);
  bool getBool(const std::string& key, bool fallback);
  std::optional<bool> optBool(const std::string& key);
  /// A string that must be one of `choices` (compared case-insensitively when `ignoreCase`);
  /// returns the matching entry of `choices`, so callers compare against canonical spellings.
  std::optional<std::string> optChoice(const std::string& key, const std::vector<std::string>& choices,
                                       bool ignoreCase = false);
  /// The object under `key` (nullopt if absent); a non-object is an error.
  std::optional<JsonReader> child(const std::string& key);
  const nlohmann::json& raw(const std::string& key) const { return object_.at(key); }

  /// Marks keys DeepSpeed knows but libdsrt does not implement: one warning each if present.
  void ignore(std::initializer_list<const char*> keys);
  /// Warns about a present `key` that was replaced by `replacement` (DeepSpeed's deprecated fields).
  void deprecated(const std::string& key, const std::string& replacement);
  /// Warns once about every key of the object that no getter, ignore() or deprecated() touched.
  void finish();

  /// "<source>: <path.key>: <what>, got '<value of key>'".
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  [[noreturn]] void failValue(const std::string& key, const std::string& what, const std::string& got) const;
  std::string keyPath(const std::string& key) const;
  void warn(const std::string& message);
  const std::string& source() const { return source_; }
  std::vector<std::string>& warnings() const { return *warnings_; }

 private:
  const nlohmann::json* lookup(const std::string& key);

  bool autoMeansDefault_ = false;  ///< inside a kAutoDefaultBlocks block

  const nlohmann::json& object_;
  std::string path_;
  std::string source_;
  std::vector<std::string>* warnings_;
  std::set<std::string> known_;
};

/// A JSON value as a message shows it: strings bare, everything else as compact JSON.
std::string describe(const nlohmann::json& value);

}  // namespace dsrt::config
