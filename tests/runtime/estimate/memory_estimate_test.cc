// DeepSpeed's estimator formulas and printed tables against golden values produced by running
// DeepSpeed's own functions (golden/gen_golden.py).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/estimate/estimate_report.h"
#include "runtime/estimate/memory_estimate.h"

using namespace dsrt::estimate;

namespace {

std::string goldenPath(const std::string& name) { return std::string(DSRT_ESTIMATE_GOLDEN_DIR) + "/" + name; }

struct GoldenRow {
  int stage;
  EstimateInput in;
  bool offload, offloadParams, zeroInit;
  int64_t cpu, gpu;
};

std::vector<GoldenRow> readRows() {
  std::ifstream f(goldenPath("rows.txt"));
  std::vector<GoldenRow> rows;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    GoldenRow r{};
    int off, offp, zi;
    s >> r.stage >> r.in.totalParams >> r.in.largestLayerParams >> r.in.numGpusPerNode >> r.in.numNodes >>
        r.in.additionalBufferFactor >> off >> offp >> zi >> r.cpu >> r.gpu;
    r.offload = off;
    r.offloadParams = offp;
    r.zeroInit = zi;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST_CASE("estimateZero2 and estimateZero3 equal DeepSpeed's byte counts for every golden case", "[estimate]") {
  const auto rows = readRows();
  INFO("golden file " << goldenPath("rows.txt"));
  REQUIRE(rows.size() >= 90);  // 9 cases x (2 + 8) calls: an empty or truncated file must fail here
  for (const GoldenRow& r : rows) {
    INFO("stage " << r.stage << " total " << r.in.totalParams << " largest " << r.in.largestLayerParams << " gpus "
                  << r.in.numGpusPerNode << " nodes " << r.in.numNodes << " factor " << r.in.additionalBufferFactor
                  << " offload " << r.offload << " offload_param " << r.offloadParams << " zero_init " << r.zeroInit);
    const EstimateRow got = r.stage == 2 ? estimateZero2(r.in, r.offload)
                                         : estimateZero3(r.in, r.offload, r.offloadParams, r.zeroInit);
    CHECK(got.cpuBytes == r.cpu);
    CHECK(got.gpuBytes == r.gpu);
  }
}

TEST_CASE("formatZero2Table and formatZero3Table print DeepSpeed's tables byte for byte", "[estimate]") {
  const int caseIndex = GENERATE(range(0, 9));
  const int stage = GENERATE(2, 3);
  const std::string path = goldenPath("table_" + std::to_string(caseIndex) + "_zero" + std::to_string(stage) + ".txt");
  std::ifstream f(path);
  INFO("golden file " << path);
  REQUIRE(f.good());
  std::string first;
  std::getline(f, first);  // "# total largest gpus nodes factor"
  std::istringstream params(first.substr(2));
  EstimateInput in;
  params >> in.totalParams >> in.largestLayerParams >> in.numGpusPerNode >> in.numNodes >> in.additionalBufferFactor;
  std::stringstream rest;
  rest << f.rdbuf();
  CHECK((stage == 2 ? formatZero2Table(in) : formatZero3Table(in)) == rest.str());
}

TEST_CASE("zero3Rows lists DeepSpeed's six offload combinations in its order", "[estimate]") {
  EstimateInput in;
  in.totalParams = 1000;
  in.largestLayerParams = 100;
  const auto rows = zero3Rows(in);
  REQUIRE(rows.size() == 6);
  const bool expected[6][3] = {{1, 1, 1}, {1, 1, 0}, {1, 0, 1}, {1, 0, 0}, {0, 0, 1}, {0, 0, 0}};
  for (int i = 0; i < 6; ++i) {
    CHECK(rows[i].cpuOffload == expected[i][0]);
    CHECK(rows[i].cpuOffloadParams == expected[i][1]);
    CHECK(rows[i].zeroInit == expected[i][2]);
  }
  CHECK(largestLayerMemory(in) == 400);
}

TEST_CASE("estimator rejects impossible hardware and names the field", "[estimate]") {
  EstimateInput in;
  in.totalParams = 10;
  in.numGpusPerNode = 0;
  REQUIRE_THROWS_WITH(estimateZero2(in, true), Catch::Contains("num_gpus_per_node must be >= 1, got '0'"));
  in.numGpusPerNode = 1;
  in.numNodes = -2;
  REQUIRE_THROWS_WITH(estimateZero3(in, true, true, true), Catch::Contains("num_nodes must be >= 1, got '-2'"));
  in.numNodes = 1;
  in.totalParams = -1;
  REQUIRE_THROWS_WITH(estimateZero2(in, false), Catch::Contains("total_params must be >= 0, got '-1'"));
}

TEST_CASE("estimateJson reports every row with bytes and option names", "[estimate]") {
  EstimateInput in;
  in.totalParams = 1300000000;
  in.largestLayerParams = 52000000;
  in.numGpusPerNode = 8;
  const auto doc = estimateJson(in, 3, zero3Rows(in));
  REQUIRE(doc["rows"].size() == 6);
  CHECK(doc["stage"] == 3);
  CHECK(doc["largest_layer_memory_bytes"] == 208000000);
  CHECK(doc["rows"][0]["offload_param"] == "cpu");
  CHECK(doc["rows"][0]["offload_optimizer"] == "cpu");
  CHECK(doc["rows"][0]["zero_init"] == true);
  CHECK(doc["rows"][0]["per_cpu_bytes"] == 35100000000LL);
  CHECK(doc["rows"][0]["per_gpu_bytes"] == 208000000);
  const auto z2 = estimateJson(in, 2, zero2Rows(in));
  CHECK_FALSE(z2["rows"][0].contains("offload_param"));
  CHECK(z2["rows"][1]["per_gpu_bytes"] == 5525000000LL);
  REQUIRE_THROWS_WITH(estimateJson(in, 1, {}), Catch::Contains("stage must be 2 or 3, got '1'"));
}
