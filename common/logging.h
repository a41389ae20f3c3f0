#pragma once
// DSRUN_LOG(level) << ...; prints one line to stderr:
//   [dsrun-agent worker-1 I 12:00:01.123 session.cc:88] message
// The level threshold comes from DSRUN_LOG_LEVEL (DEBUG, INFO, WARN, ERROR; default INFO).
// Thread-safe: each line is written with a single write(2).

#include <sstream>
#include <string>

namespace dsrun {

enum class LogLevel { DEBUG = 0, INFO = 1, WARN = 2, ERROR = 3 };

/// Sets who is speaking, e.g. setLogIdentity("dsrun-agent", "worker-1"). Call once from main().
void setLogIdentity(const std::string& program, const std::string& host = "");

/// True if messages at `level` are printed under the current DSRUN_LOG_LEVEL.
bool logEnabled(LogLevel level);

/// Overrides DSRUN_LOG_LEVEL (for tests and --verbose flags).
void setLogLevel(LogLevel level);

namespace detail {
/// Collects one line and writes it, prefixed, when destroyed.
class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  std::ostream& stream() { return out_; }

 private:
  LogLevel level_;          ///< severity letter of the prefix
  const char* file_;        ///< source file (basename printed)
  int line_;                ///< source line
  std::ostringstream out_;  ///< the message body
};
}  // namespace detail

}  // namespace dsrun

#define DSRUN_LOG(level)                                  \
  if (!::dsrun::logEnabled(::dsrun::LogLevel::level)) {   \
  } else                                                  \
    ::dsrun::detail::LogLine(::dsrun::LogLevel::level, __FILE__, __LINE__).stream()

/// Logs at WARN only the first time this line is reached in the process.
#define DSRUN_WARN_ONCE                                                       \
  for (static bool dsrunWarned_ = false; !dsrunWarned_; dsrunWarned_ = true) \
  DSRUN_LOG(WARN)
