#pragma once
// ProgressFile: the rank's half of hang detection. When DSRUN_PROGRESS_FILE names a file, the
// engine writes its global step counter there after every optimizer step, so the launcher's agent can tell
// a rank that stopped moving from a slow one. The file always holds one fixed-size record,
// "%20lld\n" (the step right-aligned in 20 columns, then a newline: 21 bytes), rewritten in place with one
// pwrite at offset 0: no fsync, no rename, no truncation, so a reader never sees an empty file once the
// first step is written, and the cost is one syscall per optimizer step (docs/elastic_resume.md).

#include <cstdint>
#include <optional>
#include <string>

namespace dsrt {

/// Size of the record: 20 digit columns (any int64) plus '\n'.
inline constexpr size_t kProgressRecordBytes = 21;

/// Formats `step` as the record ProgressFile writes ("%20lld\n"). Pure.
std::string formatProgressRecord(int64_t step);

/// Writes the step counter to one file. Not thread-safe: the engine's training thread calls record().
/// Never throws: the first failure (open or write) is printed once to stderr as a warning naming the file
/// and errno, and later records are dropped, so progress reporting never stops training.
class ProgressFile {
 public:
  /// `path` empty or unset: record() does nothing. The file is opened (created, 0644) at the first record.
  explicit ProgressFile(std::optional<std::string> path);
  ~ProgressFile();
  ProgressFile(const ProgressFile&) = delete;
  ProgressFile& operator=(const ProgressFile&) = delete;

  /// Reads DSRUN_PROGRESS_FILE from the process environment (unset or empty: disabled).
  static ProgressFile fromEnvironment();

  /// Overwrites the file's record with `step`.
  void record(int64_t step);

  bool enabled() const { return path_.has_value() && !failed_; }
  const std::optional<std::string>& path() const { return path_; }

  ProgressFile(ProgressFile&& other) noexcept;

 private:
  void fail(const char* syscall, int err);

  std::optional<std::string> path_;  ///< where the record goes; nullopt: disabled
  int fd_ = -1;                      ///< opened at the first record
  bool failed_ = false;              ///< a failure was reported; nothing more is written
};

}  // namespace dsrt
