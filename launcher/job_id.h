#pragma once
// DSRUN_JOB_ID values.

#include <string>

namespace dsrun::launcher {

/// A job id unique across jobs and machines for practical purposes: "dsrun-<UTC yyyymmddHHMMSS>-<pid>-
/// <8 random hex digits>". Only [a-z0-9-], so it is safe in shell words, file names and pkill patterns.
std::string makeJobId(int pid);

}  // namespace dsrun::launcher
