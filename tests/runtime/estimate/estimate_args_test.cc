#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

#include "runtime/estimate/estimate_args.h"

using namespace dsrt::estimate;
using Catch::Contains;

TEST_CASE("parseCount accepts plain, scientific and suffixed counts", "[estimate]") {
  auto [text, expected] = GENERATE(table<std::string, int64_t>({
      {"1300000000", 1300000000}, {"1.3e9", 1300000000}, {"1.3B", 1300000000}, {"125M", 125000000},
      {"350k", 350000}, {"1T", 1000000000000LL}, {"0", 0}, {"6.7b", 6700000000LL}}));
  INFO(text);
  CHECK(parseCount(text, "--params") == expected);
}

TEST_CASE("parseCount rejects what is not a whole non-negative count", "[estimate]") {
  auto text = GENERATE(as<std::string>{}, "", "abc", "-5", "1.5", "12Q", "M", "1e20", "nan");
  INFO(text);
  REQUIRE_THROWS_WITH(parseCount(text, "--params"), Contains("--params: ") && Contains("got '" + text + "'"));
}

TEST_CASE("parseEstimateArgs reads DeepSpeed's knobs and defaults like DeepSpeed", "[estimate]") {
  auto a = parseEstimateArgs({"--params", "1.3B", "--largest_layer_params", "52M"});
  CHECK(a.input.totalParams == 1300000000);
  CHECK(a.input.largestLayerParams == 52000000);
  CHECK(a.input.numGpusPerNode == 1);
  CHECK(a.input.numNodes == 1);
  CHECK(a.input.additionalBufferFactor == 1.5);
  CHECK(a.stages == std::vector<int>{2, 3});
  CHECK_FALSE(a.json);

  a = parseEstimateArgs({"--params", "10", "--stage", "2", "--num_gpus_per_node", "8", "--num_nodes", "4",
                         "--additional_buffer_factor", "1.0", "--offload_optimizer", "none", "--json"});
  CHECK(a.stages == std::vector<int>{2});
  CHECK(a.input.numGpusPerNode == 8);
  CHECK(a.input.numNodes == 4);
  CHECK(a.input.additionalBufferFactor == 1.0);
  REQUIRE(a.cpuOffload.has_value());
  CHECK_FALSE(*a.cpuOffload);
  CHECK(a.json);

  a = parseEstimateArgs({"--layer_params", "3,10,2", "--offload_param", "cpu", "--zero_init", "0"});
  CHECK(a.input.totalParams == 15);
  CHECK(a.input.largestLayerParams == 10);
  CHECK(*a.cpuOffloadParams);
  CHECK_FALSE(*a.zeroInit);
}

TEST_CASE("parseEstimateArgs names the flag and value it rejects", "[estimate]") {
  auto [args, message] = GENERATE(table<std::vector<std::string>, std::string>({
      {{"--params", "10", "--stage", "1"}, "--stage: expected one of 2, 3, got '1'"},
      {{"--params", "10", "--stage", "2", "--num_nodes", "0"}, "--num_nodes: expected a positive integer, got '0'"},
      {{"--params", "10", "--stage", "2", "--num_gpus_per_node", "x"}, "--num_gpus_per_node: expected a positive integer, got 'x'"},
      {{"--params", "10", "--stage", "2", "--offload_optimizer", "nvme"}, "--offload_optimizer: expected one of cpu, none, got 'nvme'"},
      {{"--params", "10", "--stage", "2", "--zero_init", "yes"}, "--zero_init: expected one of 0, 1, got 'yes'"},
      {{"--params", "10", "--stage", "2", "--additional_buffer_factor", "-1"}, "--additional_buffer_factor: expected a positive number, got '-1'"},
      {{"--params"}, "--params: expected a value after it, got the end of the command line"},
      {{"--bogus"}, "command line: unknown flag (see ds_estimate --help), got '--bogus'"},
      {{"--stage", "2"}, "--params (or --layer_params) is required"},
      {{"--params", "10"}, "stage 3 needs --largest_layer_params"},
      {{"--layer_params", "1,,2"}, "--layer_params: expected a parameter count in every comma-separated entry, got '1,,2'"},
      {{"--layer_params", "1,x"}, "--layer_params: expected a parameter count such as 1300000000, 1.3e9 or 1.3B, got 'x'"}}));
  INFO(args.size());
  REQUIRE_THROWS_WITH(parseEstimateArgs(args), Contains(message));
  // main() prefixes "ds_estimate: "; the message must not say it again, nor quote an empty value.
  REQUIRE_THROWS_WITH(parseEstimateArgs(args), !Contains("ds_estimate:") && !Contains("got ''"));
}
