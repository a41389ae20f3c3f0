// The table of top-level keys libdsrt leaves alone (runtime/config/top_level_keys.h) and what the parser
// does with each: enabled unsupported blocks warn, disabled ones are silent, Python-package blocks are
// recorded without a warning, and SilencedWarnings keeps a rank's copy off stderr.
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "runtime/config/config_warnings.h"
#include "runtime/config/deepspeed_config.h"
#include "runtime/config/top_level_keys.h"

using namespace dsrt::config;
using nlohmann::json;

namespace {

struct Captured {
  Captured() {
    setWarningSinkForTesting([this](const std::string& m) { emitted.push_back(m); });
  }
  ~Captured() { setWarningSinkForTesting(nullptr); }
  std::vector<std::string> emitted;
};

json base() { return json{{"train_batch_size", 4}}; }

}  // namespace

TEST_CASE("every key of the table is listed once and none is a key the parser reads itself", "[runtime][config]") {
  std::set<std::string> seen;
  for (const TopLevelKey& k : unparsedTopLevelKeys()) {
    INFO(k.key);
    CHECK(seen.insert(k.key).second);
    CHECK(std::string(k.note).size() > 0);
    json doc = base();
    doc[k.key] = json::object({{"enabled", true}});
    Captured captured;
    const DeepSpeedConfig c = parseConfig(doc, 1, "t.json", std::nullopt);
    for (const std::string& w : c.warnings) CHECK(w.find("unknown key") == std::string::npos);
  }
  CHECK(seen.count("tensorboard") == 1);
  CHECK(seen.count("optimizer") == 0);
}

TEST_CASE("an enabled unsupported block warns once with its note, a disabled one is silent", "[runtime][config]") {
  const auto [value, warns] = GENERATE(table<json, bool>({
      {json::object(), true},
      {json{{"enabled", true}}, true},
      {json{{"enabled", false}, {"x", 1}}, false},
      {json(false), false},
      {json(true), true},
  }));
  json doc = base();
  doc["pipeline"] = value;
  Captured captured;
  const DeepSpeedConfig c = parseConfig(doc, 1, "t.json", std::nullopt);
  INFO(value.dump());
  if (warns) {
    REQUIRE(c.warnings == std::vector<std::string>{"t.json: pipeline: not supported by libdsrt, ignored "
                                                   "(data parallel only)"});
    CHECK(captured.emitted == c.warnings);
  } else {
    CHECK(c.warnings.empty());
    CHECK(captured.emitted.empty());
  }
}

TEST_CASE("blocks the Python package carries out are recorded when enabled, never warned about",
          "[runtime][config]") {
  json doc = base();
  doc["tensorboard"] = {{"enabled", true}, {"output_path", "tb"}};
  doc["csv_monitor"] = {{"enabled", false}};
  doc["wandb"] = {{"project", "p"}};  // DeepSpeed's monitor blocks default to off
  doc["comms_logger"] = {{"enabled", true}};
  Captured captured;
  const DeepSpeedConfig c = parseConfig(doc, 1, "t.json", std::nullopt);
  CHECK(c.pythonPackageBlocks == std::vector<std::string>{"tensorboard", "comms_logger"});
  CHECK(c.warnings.empty());
  CHECK(captured.emitted.empty());
}

TEST_CASE("SilencedWarnings keeps this thread's warnings off stderr but in the parse's list", "[runtime][config]") {
  json doc = base();
  doc["amp"] = json{{"enabled", true}};
  Captured captured;
  DeepSpeedConfig silenced;
  {
    SilencedWarnings quiet;
    silenced = parseConfig(doc, 1, "t.json", std::nullopt);
  }
  CHECK(silenced.warnings.size() == 1);
  CHECK(captured.emitted.empty());
  // Another thread (another rank of a threads-as-ranks test) is not silenced by this one's scope.
  SilencedWarnings quiet;
  std::thread other([&] { parseConfig(doc, 1, "t.json", std::nullopt); });
  other.join();
  CHECK(captured.emitted == silenced.warnings);
}
