#include <cstdio>
#include <fstream>

#include <catch2/catch.hpp>
#include <unistd.h>

#include "runtime/config/config_warnings.h"
#include "runtime/config/deepspeed_config.h"

using Catch::Matchers::Contains;
using namespace dsrt::config;

namespace {

// A file under $TMPDIR removed at scope exit.
struct TempFile {
  explicit TempFile(const std::string& suffix, const std::string& text) {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir ? dir : "/tmp") + "/dsrt_config_test_" + std::to_string(::getpid()) + "_" +
           std::to_string(counter++) + suffix;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
  static inline int counter = 0;
};

}  // namespace

TEST_CASE("JSON configs may carry comments, as DeepSpeed's hjson reader allows", "[runtime][config]") {
  DeepSpeedConfig c = parseConfigText("{\n  // per-rank batch\n  \"train_micro_batch_size_per_gpu\": 2 /* x */\n}",
                                      3, "c.json");
  CHECK(c.batch.trainBatchSize == 6);
}

TEST_CASE("duplicate keys are refused with their path, as DeepSpeed's loader does", "[runtime][config]") {
  CHECK_THROWS_WITH(parseConfigText(R"({"train_batch_size": 4, "train_batch_size": 8})", 1, "d.json"),
                    "d.json: duplicate key in ds_config, got 'train_batch_size'");
  CHECK_THROWS_WITH(
      parseConfigText(R"({"train_batch_size": 4, "zero_optimization": {"stage": 1, "stage": 2}})", 1, "d.json"),
      "d.json: duplicate key in ds_config, got 'zero_optimization.stage'");
  // The same key in sibling objects is fine.
  CHECK_NOTHROW(parseConfigText(R"({"train_batch_size": 4, "fp16": {"enabled": false},
                                    "bf16": {"enabled": false}})", 1, "d.json"));
}

TEST_CASE("malformed JSON names the file, line and column", "[runtime][config]") {
  CHECK_THROWS_WITH(parseConfigText("{\n  \"train_batch_size\": 4,\n}", 1, "bad.json"),
                    Contains("bad.json:3:1: invalid JSON: syntax error"));
  CHECK_THROWS_WITH(parseConfigText("[1, 2]", 1, "arr.json"),
                    "arr.json: expected a JSON object at the top level, got '[1,2]'");
}

TEST_CASE("loadConfigFile reads a JSON file and names it in errors", "[runtime][config]") {
  TempFile good(".json", R"({"train_batch_size": 16, "gradient_accumulation_steps": 2})");
  DeepSpeedConfig c = loadConfigFile(good.path, 4);
  CHECK(c.batch.microBatchPerGpu == 2);
  CHECK(c.source == good.path);
  TempFile bad(".json", R"({"train_batch_size": 16, "zero_optimization": {"stage": 7}})");
  CHECK_THROWS_WITH(loadConfigFile(bad.path, 4),
                    bad.path + ": zero_optimization.stage: expected one of 0, 1, 2, 3, got '7'");
  CHECK_THROWS_WITH(loadConfigFile("/nonexistent/ds_config.json", 1),
                    "/nonexistent/ds_config.json: cannot open ds_config: No such file or directory");
}

TEST_CASE("an unknown key warns once per process, naming its path, and is otherwise ignored",
          "[runtime][config]") {
  std::vector<std::string> emitted;
  setWarningSinkForTesting([&](const std::string& m) { emitted.push_back(m); });
  const std::string text = R"({"train_batch_size": 4, "trian_micro_batch": 2,
      "zero_optimization": {"stage": 2, "stage3_prefetch_bucket_sizes": 1},
      "optimizer": {"type": "Adam", "params": {"lr": 0.1, "momentum": 0.9}}})";
  DeepSpeedConfig first = parseConfigText(text, 1, "u.json");
  DeepSpeedConfig second = parseConfigText(text, 1, "u.json");
  setWarningSinkForTesting(nullptr);
  const std::vector<std::string> expected = {
      "u.json: zero_optimization.stage3_prefetch_bucket_sizes: unknown key, ignored",
      "u.json: optimizer.params.momentum: unknown key, ignored",
      "u.json: trian_micro_batch: unknown key, ignored",
  };
  CHECK(emitted == expected);  // the second parse emitted nothing new
  CHECK(first.warnings == expected);
  CHECK(second.warnings == expected);  // but each config still records its own warnings
  CHECK(first.batch.trainBatchSize == 4);
}

TEST_CASE("DeepSpeed features libdsrt does not implement warn that they are ignored", "[runtime][config]") {
  std::vector<std::string> emitted;
  setWarningSinkForTesting([&](const std::string& m) { emitted.push_back(m); });
  DeepSpeedConfig c = parseConfigText(R"({"train_batch_size": 4, "activation_checkpointing": {},
      "zero_optimization": {"stage": 1, "zero_quantized_weights": true, "offload_param": {"device": "cpu"}}})",
                                      1, "i.json");
  setWarningSinkForTesting(nullptr);
  CHECK(c.warnings == std::vector<std::string>{
                          "i.json: zero_optimization.zero_quantized_weights: not supported by libdsrt, ignored",
                          "i.json: zero_optimization.offload_param: only used by stage 3, ignored at stage 1",
                          "i.json: activation_checkpointing: not supported by libdsrt, ignored (deepspeed.checkpointing.checkpoint() "
                          "works without it)",
                      });
  CHECK(emitted.size() == 3);
}
