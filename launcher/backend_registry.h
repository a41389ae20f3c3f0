#pragma once
// BackendRegistry: --launcher name -> Backend factory. Knows every name dsrun accepts; a name without a
// registered factory yields a Backend that reports "not implemented yet".

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/backend.h"

namespace dsrun::launcher {

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

class BackendRegistry {
 public:
  /// Registers (or replaces) the factory for `name`.
  void add(const std::string& name, BackendFactory factory);

  /// A new backend for `name`: "local" or one of kLauncherChoices. A known name without a factory gives
  /// a Backend whose unavailableReason() is "not implemented yet". Throws ConfigError for any other name.
  std::unique_ptr<Backend> create(const std::string& name) const;

  /// Names with a registered factory, sorted.
  std::vector<std::string> registered() const;

  /// The registry `dsrun` uses: local plus every backend compiled in (launcher/builtin_backends.cc).
  static BackendRegistry builtin();

 private:
  std::map<std::string, BackendFactory> factories_;  ///< name -> factory
};

}  // namespace dsrun::launcher
