// ds_estimate: DeepSpeed's ZeRO model-state memory estimator as a command (docs/estimate.md).
// Exit codes: 0 success, 2 bad command line.

#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/estimate/estimate_args.h"
#include "runtime/estimate/estimate_report.h"

int main(int argc, char** argv) {
  using namespace dsrt::estimate;
  try {
    const EstimateArgs args = parseEstimateArgs(std::vector<std::string>(argv + 1, argv + argc));
    if (args.help) {
      std::cout << estimateUsage();
      return 0;
    }
    nlohmann::json all = nlohmann::json::array();
    for (int stage : args.stages) {
      std::vector<EstimateRow> rows;
      for (const EstimateRow& row : stage == 2 ? zero2Rows(args.input) : zero3Rows(args.input)) {
        const bool keep = (!args.cpuOffload || row.cpuOffload == *args.cpuOffload) &&
                          (stage == 2 || !args.cpuOffloadParams || row.cpuOffloadParams == *args.cpuOffloadParams) &&
                          (stage == 2 || !args.zeroInit || row.zeroInit == *args.zeroInit);
        if (keep) rows.push_back(row);
      }
      if (args.json) {
        all.push_back(estimateJson(args.input, stage, rows));
      } else {
        std::cout << formatTable(args.input, stage, rows);
      }
    }
    if (args.json) {
      std::cout << (all.size() == 1 ? all[0] : all).dump(2) << "\n";
    }
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "ds_estimate: " << e.what() << "\n";
    return 2;
  }
}
