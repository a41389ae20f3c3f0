#pragma once
// PidFile: DeepSpeed's --save_pid file, /tmp/<mainPid>.deepspeed holding this process's pid, so a
// program that started the launcher can find the process to signal.

#include <string>

namespace dsrun {

class PidFile {
 public:
  /// Prints "launcher pid: <pid>" on stdout and creates /tmp/<mainPid>.deepspeed, as launch.py does.
  /// Throws IoError if it exists already or cannot be written.
  explicit PidFile(int mainPid);
  /// Removes the file (DeepSpeed removes it only when signalled; dsrun never leaves it stale).
  ~PidFile();
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;  ///< /tmp/<mainPid>.deepspeed
};

}  // namespace dsrun
