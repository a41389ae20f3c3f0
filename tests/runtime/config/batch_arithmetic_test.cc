#include "runtime/config/batch_arithmetic.h"

#include <catch2/catch.hpp>

#include "tests/runtime/config/golden_file.h"

using Catch::Matchers::Contains;
using dsrt::config::BatchConfig;
using dsrt::config::ConfigError;
using dsrt::config::resolveBatchConfig;

namespace {

std::optional<int64_t> opt(const nlohmann::json& v) {
  return v.is_null() ? std::nullopt : std::optional<int64_t>(v.get<int64_t>());
}

std::string show(std::optional<int64_t> v) { return v ? std::to_string(*v) : "absent"; }

}  // namespace

TEST_CASE("resolveBatchConfig derives the missing batch keys as DeepSpeed does", "[runtime][config]") {
  using Row = std::tuple<std::optional<int64_t>, std::optional<int64_t>, std::optional<int64_t>, int, int64_t,
                         int64_t, int64_t>;
  auto [train, micro, gas, ws, eTrain, eMicro, eGas] = GENERATE(table<std::optional<int64_t>, std::optional<int64_t>,
                                                                      std::optional<int64_t>, int, int64_t, int64_t,
                                                                      int64_t>({
      Row{32, 4, 2, 4, 32, 4, 2},                        // all three given and consistent
      Row{32, 4, std::nullopt, 4, 32, 4, 2},             // gas = 32 // 4 // 4
      Row{32, std::nullopt, 2, 4, 32, 4, 2},             // micro = 32 // 4 // 2
      Row{std::nullopt, 4, 2, 4, 32, 4, 2},              // train = 4 * 2 * 4
      Row{32, std::nullopt, std::nullopt, 4, 32, 8, 1},  // gas = 1, micro = 32 // 4
      Row{std::nullopt, 8, std::nullopt, 3, 24, 8, 1},   // train = 8 * 3, gas = 1
  }));
  BatchConfig b = resolveBatchConfig(train, micro, gas, ws, "cfg.json");
  CHECK(b.trainBatchSize == eTrain);
  CHECK(b.microBatchPerGpu == eMicro);
  CHECK(b.gradientAccumulationSteps == eGas);
}

TEST_CASE("resolveBatchConfig reports each failed batch assertion with the value DeepSpeed computes",
          "[runtime][config]") {
  CHECK_THROWS_WITH(resolveBatchConfig(std::nullopt, std::nullopt, 4, 2, "cfg.json"),
                    "cfg.json: either train_batch_size or train_micro_batch_size_per_gpu needs to be provided,"
                    " got only gradient_accumulation_steps");
  CHECK_THROWS_WITH(resolveBatchConfig(4, 8, std::nullopt, 1, "cfg.json"),
                    "cfg.json: gradient_accumulation_steps: must be greater than 0, got '0' (derived as"
                    " train_batch_size // train_micro_batch_size_per_gpu // world_size = 4 // 8 // 1)");
  CHECK_THROWS_WITH(resolveBatchConfig(10, 3, std::nullopt, 1, "cfg.json"),
                    "cfg.json: train_batch_size is not equal to train_micro_batch_size_per_gpu *"
                    " gradient_accumulation_steps * world_size, got 10 != 3 * 3 * 1");
  CHECK_THROWS_WITH(resolveBatchConfig(8, 0, std::nullopt, 1, "cfg.json"),
                    "cfg.json: train_micro_batch_size_per_gpu: must be greater than 0, got '0'");
  CHECK_THROWS_WITH(resolveBatchConfig(8, 2, 2, 0, "cfg.json"), Contains("world size must be at least 1"));
}

TEST_CASE("resolveBatchConfig matches DeepSpeed on every combination of the golden table", "[runtime][config]") {
  // Each row: train, micro, gas, world size, then DeepSpeed's outcome: "ok" with the three values,
  // "nonpositive" with the key and value it asserted on, "mismatch" with its "a != b * c * d" text,
  // "missing", or "zerodiv" (a ZeroDivisionError in DeepSpeed, a > 0 error here).
  nlohmann::json rows = dsrt::config::testing::loadGolden("batch_arithmetic.json");
  REQUIRE(rows.size() == 4000);
  int checked = 0;
  for (const nlohmann::json& row : rows) {
    auto train = opt(row[0]), micro = opt(row[1]), gas = opt(row[2]);
    int ws = row[3].get<int>();
    std::string outcome = row[4].get<std::string>();
    INFO("train " << show(train) << " micro " << show(micro) << " gas " << show(gas) << " world " << ws << ": "
                  << row.dump());
    if (outcome == "ok") {
      BatchConfig b = resolveBatchConfig(train, micro, gas, ws, "cfg.json");
      REQUIRE(b.trainBatchSize == row[5].get<int64_t>());
      REQUIRE(b.microBatchPerGpu == row[6].get<int64_t>());
      REQUIRE(b.gradientAccumulationSteps == row[7].get<int64_t>());
    } else if (outcome == "nonpositive") {
      REQUIRE_THROWS_WITH(resolveBatchConfig(train, micro, gas, ws, "cfg.json"),
                          Contains("cfg.json: " + row[5].get<std::string>() + ": must be greater than 0, got '" +
                                   std::to_string(row[6].get<int64_t>()) + "'"));
    } else if (outcome == "mismatch") {
      REQUIRE_THROWS_WITH(resolveBatchConfig(train, micro, gas, ws, "cfg.json"),
                          Contains("world_size, got " + row[5].get<std::string>()));
    } else if (outcome == "missing") {
      REQUIRE_THROWS_WITH(resolveBatchConfig(train, micro, gas, ws, "cfg.json"),
                          Contains("either train_batch_size or train_micro_batch_size_per_gpu"));
    } else {
      REQUIRE(outcome == "zerodiv");
      REQUIRE_THROWS_WITH(resolveBatchConfig(train, micro, gas, ws, "cfg.json"),
                          Contains(": must be greater than 0, got '0'"));
    }
    ++checked;
  }
  CHECK(checked == 4000);
}

TEST_CASE("resolveBatchConfig passes DeepSpeed's own TestBatchConfig cases on 2 ranks", "[runtime][config]") {
  // tests/unit/runtime/test_ds_config_dict.py: (batch, micro, gas, success) with every subset it tries.
  auto [batch, micro, gas, success] = GENERATE(table<int64_t, int64_t, int64_t, bool>({
      {32, 16, 1, true},
      {32, 8, 2, true},
      {33, 17, 2, false},
      {32, 18, 1, false},
  }));
  auto check = [&, batch = batch, micro = micro, gas = gas, success = success](
                   std::optional<int64_t> t, std::optional<int64_t> m, std::optional<int64_t> g) {
    INFO("train " << show(t) << " micro " << show(m) << " gas " << show(g));
    if (!success) {
      CHECK_THROWS_AS(resolveBatchConfig(t, m, g, 2, "cfg.json"), ConfigError);
      return;
    }
    BatchConfig b = resolveBatchConfig(t, m, g, 2, "cfg.json");
    CHECK(b.trainBatchSize == batch);
    CHECK(b.microBatchPerGpu == micro);
    CHECK(b.gradientAccumulationSteps == gas);
  };
  check(batch, micro, gas);
  check(batch, micro, std::nullopt);
  if (success) {
    check(batch, std::nullopt, gas);
    check(std::nullopt, micro, gas);
    if (gas == 1) {
      check(std::nullopt, micro, std::nullopt);
      check(batch, std::nullopt, std::nullopt);
    }
  } else {
    check(std::nullopt, std::nullopt, gas);
    if (gas != 1) {
      check(batch, std::nullopt, gas);
    }
  }
}
