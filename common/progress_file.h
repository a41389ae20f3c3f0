#pragma once
// The launcher's side of the progress-file contract (common/env_contract.h kEnvProgressFile): each rank's
// engine rewrites its global step into its DSRUN_PROGRESS_FILE after every optimizer step. Read by the agent
// (agent/progress_watch.h) and by the local supervisor (common/hang_watch.h).

#include <cstdint>
#include <string>

namespace dsrun {

/// Reads a step counter file: a decimal integer, possibly padded with spaces or a newline. -1 when the file
/// is missing, empty or not a number (the rank has not written yet, or is writing).
int64_t readProgressFile(const std::string& path);

}  // namespace dsrun
