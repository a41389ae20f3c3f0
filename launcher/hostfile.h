#pragma once
// Hostfiles as DeepSpeed reads them: one `HOST slots=N` per line, '#' comments and blank lines ignored.

#include <string>
#include <string_view>
#include <vector>

namespace dsrun::launcher {

/// One host line of a hostfile.
struct HostEntry {
  std::string name;  ///< host name or address, as written
  int slots = 0;     ///< number of slots (GPUs), > 0
  int line = 0;      ///< 1-based line number in the source
};

/// A parsed hostfile: hosts in file order, names unique.
struct Hostfile {
  std::string source;              ///< where the text came from (a path), for messages
  std::vector<HostEntry> entries;  ///< in file order

  /// The entry named `name`, or nullptr.
  const HostEntry* find(std::string_view name) const;
};

/// Parses hostfile text with DeepSpeed's rule (`^(\S+)\s+slots=(\d+)`, anything after the count and a
/// blank is ignored, as MPI's `max_slots=` would be). Throws ParseError "<source>:<line>: ..." for a
/// malformed line, a missing, zero or oversized slot count and a duplicate host, and "<source>: ..." when
/// the text holds no host at all.
Hostfile parseHostfile(std::string_view text, const std::string& sourceName);

}  // namespace dsrun::launcher
