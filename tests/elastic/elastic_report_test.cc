#include <catch2/catch.hpp>

#include "elastic/elastic_report.h"

using namespace dsrun::elastic;
using nlohmann::json;

namespace {
// The "elasticity" block of DeepSpeed's test fixture, with keys out of order and non-ASCII text, to
// exercise sort_keys and ensure_ascii.
json block() {
  return json::parse(R"({"version": 0.1, "name": "caf\u00e9", "micro_batch_sizes": [8, 17], "enabled": true,
      "nested": {"b": [], "a": {}}, "ratio": 1e-05})");
}
}  // namespace

TEST_CASE("formatPlainReport prints what DeepSpeed's bin/ds_elastic prints for a world size", "[launcher][elastic]") {
  ElasticResult r{9792, std::vector<long long>{32, 34}, 17, std::nullopt};
  // Captured from DeepSpeed's bin/ds_elastic for the same block and results.
  const char* expected =
      "------------------------------------------\n"
      "Elasticity config:\n"
      "------------------------------------------\n"
      "{\n"
      "    \"enabled\": true,\n"
      "    \"micro_batch_sizes\": [\n"
      "        8,\n"
      "        17\n"
      "    ],\n"
      "    \"name\": \"caf\\u00e9\",\n"
      "    \"nested\": {\n"
      "        \"a\": {},\n"
      "        \"b\": []\n"
      "    },\n"
      "    \"ratio\": 1e-05,\n"
      "    \"version\": 0.1\n"
      "}\n"
      "------------------------------------------\n"
      "Calculated results for world size 64:\n"
      "------------------------------------------\n"
      "final_batch_size .... 9792\n"
      "valid_gpus .......... [32, 34]\n"
      "micro_batch_size .... 17\n";
  CHECK(formatPlainReport(block(), r, 64) == expected);
}

TEST_CASE("formatPlainReport without a world size has no micro batch line", "[launcher][elastic]") {
  ElasticResult r{2, std::nullopt, std::nullopt, std::nullopt};
  std::string out = formatPlainReport(json::object(), r, 0);
  CHECK(out ==
        "------------------------------------------\nElasticity config:\n------------------------------------------\n"
        "{}\n------------------------------------------\nCalculated results:\n"
        "------------------------------------------\nfinal_batch_size .... 2\nvalid_gpus .......... None\n");
}

TEST_CASE("formatJsonReport prints one object, micro_batch_size only with a world size", "[launcher][elastic]") {
  CHECK(formatJsonReport({9792, std::vector<long long>{32, 64}, 17, std::nullopt}) ==
        "{\"final_batch_size\": 9792, \"valid_gpus\": [32, 64], \"micro_batch_size\": 17}\n");
  CHECK(formatJsonReport({96, std::vector<long long>{}, std::nullopt, std::nullopt}) ==
        "{\"final_batch_size\": 96, \"valid_gpus\": []}\n");
  std::string none = formatJsonReport({2, std::nullopt, std::nullopt, std::nullopt});
  CHECK(none == "{\"final_batch_size\": 2, \"valid_gpus\": null}\n");
  CHECK(json::parse(none)["valid_gpus"].is_null());
}
