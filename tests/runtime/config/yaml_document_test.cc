#include "runtime/config/yaml_document.h"

#include <catch2/catch.hpp>

#include "runtime/config/deepspeed_config.h"

using Catch::Matchers::Contains;
using namespace dsrt::config;
using nlohmann::json;

namespace {

const char* kYaml = R"(
# the same config as kJson
train_batch_size: 16
gradient_accumulation_steps: 2
gradient_clipping: 1.0
steps_per_print: 5
wall_clock_breakdown: false
communication_data_type: ~
optimizer:
  type: AdamW
  params: {lr: 3.0e-4, betas: [0.9, 0.95], eps: 1e-8, weight_decay: 0.01}
scheduler:
  type: WarmupDecayLR
  params:
    warmup_min_lr: 0
    warmup_max_lr: 0.0003
    warmup_num_steps: 100
    total_num_steps: 1000
    warmup_type: "linear"
zero_optimization:
  stage: 2
  reduce_bucket_size: 2e8
  allgather_bucket_size: 5.0e8
  overlap_comm: true
  offload_optimizer:
    device: cpu
    pin_memory: True
)";

const char* kJson = R"({
  "train_batch_size": 16, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0, "steps_per_print": 5,
  "wall_clock_breakdown": false, "communication_data_type": null,
  "optimizer": {"type": "AdamW", "params": {"lr": 3.0e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                                             "weight_decay": 0.01}},
  "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.0003,
      "warmup_num_steps": 100, "total_num_steps": 1000, "warmup_type": "linear"}},
  "zero_optimization": {"stage": 2, "reduce_bucket_size": 2e8, "allgather_bucket_size": 5.0e8,
      "overlap_comm": true, "offload_optimizer": {"device": "cpu", "pin_memory": true}}
})";

}  // namespace

TEST_CASE("a YAML ds_config reads as the same document and config as its JSON twin", "[runtime][config]") {
  if (!yamlSupported()) {
    WARN("libdsrt was built without yaml-cpp: checking only that YAML is refused with a clear message");
    CHECK_THROWS_WITH(yamlToJson(kYaml, "c.yaml"), Contains("c.yaml: YAML configs need libdsrt built with yaml-cpp"));
    return;
  }
  json fromYaml = yamlToJson(kYaml, "c.yaml");
  json fromJson = json::parse(kJson);
  CHECK(fromYaml == fromJson);
  DeepSpeedConfig y = parseConfig(fromYaml, 4, "c.yaml");
  DeepSpeedConfig j = parseConfig(fromJson, 4, "c.json");
  CHECK(y.batch.microBatchPerGpu == 2);
  CHECK(y.batch.microBatchPerGpu == j.batch.microBatchPerGpu);
  CHECK(y.zero.reduceBucketSize == 200000000);
  CHECK(y.zero.offloadOptimizer.pinMemory);
  CHECK(y.optimizer->betas == j.optimizer->betas);
  CHECK(y.scheduler->warmupType == WarmupType::Linear);
  CHECK(y.warnings.empty());
}

TEST_CASE("YAML scalars follow the 1.2 core schema and quoted scalars stay strings", "[runtime][config]") {
  if (!yamlSupported()) {
    WARN("libdsrt was built without yaml-cpp: YAML scalar rules not tested");
    return;
  }
  json doc = yamlToJson("a: 2e8\nb: '5'\nc: yes\nd: -7\ne: .5\nf: null\ng: TRUE\nh: auto\n", "s.yaml");
  CHECK(doc["a"] == 2e8);
  CHECK(doc["b"] == "5");
  CHECK(doc["c"] == "yes");
  CHECK(doc["d"] == -7);
  CHECK(doc["e"] == 0.5);
  CHECK(doc["f"].is_null());
  CHECK(doc["g"] == true);
  CHECK(doc["h"] == "auto");
  CHECK_THROWS_WITH(parseConfig(yamlToJson("train_batch_size: '8'\n", "q.yaml"), 1, "q.yaml"),
                    "q.yaml: train_batch_size: expected an integer, got '8'");
}

TEST_CASE("YAML syntax errors and duplicate keys name the file, line and column", "[runtime][config]") {
  if (!yamlSupported()) {
    WARN("libdsrt was built without yaml-cpp: YAML error positions not tested");
    return;
  }
  CHECK_THROWS_WITH(yamlToJson("a: 1\nb: [1, 2\n", "bad.yaml"), Contains("bad.yaml:"));
  CHECK_THROWS_WITH(yamlToJson("a: 1\nzero:\n  stage: 1\n  stage: 2\n", "dup.yaml"),
                    "dup.yaml:4:3: duplicate key, got 'stage'");
}
