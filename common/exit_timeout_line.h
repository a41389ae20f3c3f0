#pragma once
// The one line every backend prints when --exit_timeout_s stops the ranks still running:
// those ranks were cut short, so the job fails, and the line names each of them.

#include <string>
#include <vector>

namespace dsrun {

/// "dsrun: exit timeout: rank 1 on dsn2, rank 2 on dsn3 still running 2s after rank 0 on dsn1 finished
/// cleanly; stopped them, the job fails". `firstClean` names the first clean exit, `stillRunning` the ranks
/// stopped (empty when a backend cannot tell: "ranks"). Pure.
std::string exitTimeoutLine(const std::string& firstClean, double timeoutS, const std::vector<std::string>& stillRunning);

}  // namespace dsrun
