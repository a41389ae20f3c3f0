#include "common/logging.h"

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace dsrun {
namespace {

std::mutex identityMutex;
std::string identity = "dsrun";

LogLevel levelFromEnv() {
  const char* value = std::getenv("DSRUN_LOG_LEVEL");
  if (value == nullptr) return LogLevel::INFO;
  std::string v(value);
  if (v == "DEBUG" || v == "debug") return LogLevel::DEBUG;
  if (v == "WARN" || v == "warn" || v == "WARNING" || v == "warning") return LogLevel::WARN;
  if (v == "ERROR" || v == "error") return LogLevel::ERROR;
  return LogLevel::INFO;
}

std::atomic<int>& threshold() {
  static std::atomic<int> value{static_cast<int>(levelFromEnv())};
  return value;
}

char levelLetter(LogLevel level) {
  switch (level) {
    case LogLevel::DEBUG: return 'D';
    case LogLevel::INFO: return 'I';
    case LogLevel::WARN: return 'W';
    case LogLevel::ERROR: return 'E';
  }
  return '?';
}

}  // namespace

void setLogIdentity(const std::string& program, const std::string& host) {
  std::lock_guard<std::mutex> lock(identityMutex);
  identity = host.empty() ? program : program + " " + host;
}

bool logEnabled(LogLevel level) { return static_cast<int>(level) >= threshold().load(); }

void setLogLevel(LogLevel level) { threshold().store(static_cast<int>(level)); }

namespace detail {

LogLine::LogLine(LogLevel level, const char* file, int line) : level_(level), file_(file), line_(line) {}

LogLine::~LogLine() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  tm local{};
  localtime_r(&tv.tv_sec, &local);
  char clock[32];
  std::snprintf(clock, sizeof clock, "%02d:%02d:%02d.%03d", local.tm_hour, local.tm_min, local.tm_sec,
                static_cast<int>(tv.tv_usec / 1000));
  const char* base = std::strrchr(file_, '/');
  std::string who;
  {
    std::lock_guard<std::mutex> lock(identityMutex);
    who = identity;
  }
  std::string text = "[" + who + " " + levelLetter(level_) + " " + clock + " " + (base ? base + 1 : file_) +
                     ":" + std::to_string(line_) + "] " + out_.str() + "\n";
  // One write(2) per line so lines from several threads or processes do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

}  // namespace detail
}  // namespace dsrun
