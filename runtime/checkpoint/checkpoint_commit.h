#pragma once
// The atomic save protocol (torch-free; the caller adds barriers between the steps on multi-rank saves):
//   1. rank 0: beginStaging(dir, tag)   makes DIR and an empty DIR/TAG.tmp (a stale one is removed)
//   2. every rank writes its files into DIR/TAG.tmp (writeCheckpointFile fsyncs each)
//   3. rank 0: commitStaging(dir, tag)  fsyncs TAG.tmp, renames it to DIR/TAG (an existing DIR/TAG is
//      moved aside to TAG.old first and removed after), fsyncs DIR, then moves `latest` (writeLatest)
// A crash before the TAG rename leaves DIR/TAG.tmp behind and every earlier tag and `latest` untouched;
// a crash between the rename and writeLatest leaves a complete DIR/TAG that `latest` does not name yet.
// Either way the checkpoint `latest` names stays loadable.

#include <optional>
#include <string>

namespace dsrt::checkpoint {

/// Creates DIR (and parents) if needed and an empty DIR/TAG.tmp, removing a stale one. Returns its path.
/// Throws CheckpointError naming the path and the failed syscall.
std::string beginStaging(const std::string& dir, const std::string& tag);

/// Publishes DIR/TAG.tmp as DIR/TAG (see above), then, if `updateLatest`, points DIR/latest at `tag`.
/// Throws CheckpointError if DIR/TAG.tmp is missing or a syscall fails.
void commitStaging(const std::string& dir, const std::string& tag, bool updateLatest = true);

/// Atomically replaces DIR/latest with `tag` (write latest.tmp, fsync, rename, fsync DIR).
void writeLatest(const std::string& dir, const std::string& tag);

/// The tag DIR/latest names (whitespace trimmed), or nullopt when DIR/latest does not exist.
/// Throws CheckpointError when it exists but is empty or unreadable.
std::optional<std::string> readLatest(const std::string& dir);

/// fsync()s a directory so renames inside it are durable. Throws CheckpointError.
void fsyncDir(const std::string& dir);

/// True if `path` exists (any type).
bool pathExists(const std::string& path);

}  // namespace dsrt::checkpoint
