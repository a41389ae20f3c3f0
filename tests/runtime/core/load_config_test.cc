// dsrt::loadConfig (runtime/initialize.cc): the config's warnings reach stderr from rank 0 only (every rank
// still records them), and a C++ program is told which enabled blocks only the Python package carries out.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/config/config_warnings.h"
#include "runtime/runtime.h"

// After the torch headers: Catch's CHECK must replace glog's.
#include <catch2/catch.hpp>

namespace {

struct Captured {
  Captured() {
    dsrt::config::setWarningSinkForTesting([this](const std::string& m) { emitted.push_back(m); });
  }
  ~Captured() { dsrt::config::setWarningSinkForTesting(nullptr); }
  std::vector<std::string> emitted;
};

const nlohmann::json kDoc = {{"train_batch_size", 2},
                             {"optimizer", {{"type", "Adam"}, {"params", {{"lr", 0.1}}}}},
                             {"pipeline", {{"stages", 2}}},
                             {"tensorboard", {{"enabled", true}}},
                             {"csv_monitor", {{"enabled", false}}}};

}  // namespace

// One TEST_CASE with sections: each case is a process, and LibTorch costs about a second to start.
TEST_CASE("loadConfig: rank 0 alone prints, and a C++ program hears of the Python package's blocks",
          "[runtime][config]") {
  SECTION("the config's warnings reach stderr from rank 0 only") {
    Captured captured;
    const auto other = dsrt::loadConfig(kDoc, 1, "ds.json", /*rank=*/1, dsrt::Frontend::Python);
    CHECK(captured.emitted.empty());
    CHECK(other.warnings == std::vector<std::string>{"ds.json: pipeline: not supported by libdsrt, ignored "
                                                     "(data parallel only)"});
    const auto zero = dsrt::loadConfig(kDoc, 1, "ds.json", /*rank=*/0, dsrt::Frontend::Python);
    CHECK(captured.emitted == zero.warnings);
    CHECK(zero.warnings == other.warnings);
  }
  SECTION("a C++ program hears once that an enabled monitor block is the Python package's") {
    Captured captured;
    const auto cfg = dsrt::loadConfig(kDoc, 1, "ds.json", /*rank=*/0, dsrt::Frontend::Cpp);
    CHECK(cfg.pythonPackageBlocks == std::vector<std::string>{"tensorboard"});
    CHECK(captured.emitted == std::vector<std::string>{
                                  "ds.json: pipeline: not supported by libdsrt, ignored (data parallel only)",
                                  "ds.json: tensorboard: carried out by the dsrt Python package only, ignored by "
                                  "C++ programs"});
  }
}
