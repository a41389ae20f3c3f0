#pragma once
// Config warnings (unknown, ignored or deprecated keys) go to stderr once per distinct message per process,
// so a config parsed by every rank and again on reload does not repeat itself. Thread-safe.

#include <functional>
#include <string>

namespace dsrt::config {

/// Emits `message` as "[dsrt] warning: <message>" on stderr unless the same text was emitted before.
/// Returns true if it was emitted now.
bool warnOnce(const std::string& message);

/// While one lives, warnOnce() on this thread prints nothing and remembers nothing (parses still collect
/// their warnings): every rank parses the same config, and rank 0's copy of each warning is enough.
class SilencedWarnings {
 public:
  SilencedWarnings();
  ~SilencedWarnings();
  SilencedWarnings(const SilencedWarnings&) = delete;
  SilencedWarnings& operator=(const SilencedWarnings&) = delete;
};

/// Test hook: routes emitted warnings to `sink` instead of stderr (nullptr restores stderr) and forgets
/// which messages were already emitted.
void setWarningSinkForTesting(std::function<void(const std::string&)> sink);

}  // namespace dsrt::config
