#pragma once
// Command line of ds_estimate, parsed into a value (pure: argv in, options out).

#include <optional>
#include <string>
#include <vector>

#include "runtime/estimate/memory_estimate.h"

namespace dsrt::estimate {

/// What ds_estimate was asked for.
struct EstimateArgs {
  EstimateInput input;
  std::vector<int> stages;                 ///< tables to print, in order ({2, 3} unless --stage)
  std::optional<bool> cpuOffload;          ///< --offload_optimizer cpu|none: keep only matching rows
  std::optional<bool> cpuOffloadParams;    ///< --offload_param cpu|none (stage 3 rows)
  std::optional<bool> zeroInit;            ///< --zero_init 0|1 (stage 3 rows)
  bool json = false;                       ///< --json
  bool help = false;                       ///< --help
};

/// Parses argv[1..]. Counts accept 1300000000, 1.3e9 and 1.3B / 125M / 350K / 1T. Throws
/// std::invalid_argument "<flag>: <what>, got '<value>'" for a bad flag or value, and "command line: <what is
/// missing>" for a missing one (without the program's name: ds_estimate's main adds it).
EstimateArgs parseEstimateArgs(const std::vector<std::string>& args);

/// Parses a parameter count as above; `flag` names it in the error.
int64_t parseCount(const std::string& text, const std::string& flag);

/// The --help text.
std::string estimateUsage();

}  // namespace dsrt::estimate
