#pragma once
// Each-rank log files, named as DeepSpeed's launch.py names them: <dir>/<YYYYmmddHHMMSS>_rank<R>.log,
// one timestamp (local time, job start) for the whole job.

#include <ctime>
#include <string>

#include "common/unique_fd.h"

namespace dsrun {

/// The job's file-name prefix: `when` as local time "%Y%m%d%H%M%S".
std::string rankLogPrefix(std::time_t when);

/// "<dir>/<prefix>_rank<rank>.log" (a '/' is added only when dir lacks one, like os.path.join).
std::string rankLogPath(const std::string& dir, const std::string& prefix, int rank);

/// Creates `dir` and its parents if missing. Throws ConfigError if it is a file, IoError if it
/// cannot be created.
void prepareRankLogDir(const std::string& dir);

/// Opens (truncates) one rank's log file for writing, CLOEXEC. Throws IoError naming the path.
UniqueFd openRankLog(const std::string& path, int rank);

}  // namespace dsrun
