#pragma once
// RealMachine: the Machine dsrun runs on (environ, files, /dev/nvidia*, /sys CPU topology, ssh).

#include "launcher/machine.h"

namespace dsrun::launcher {

class RealMachine : public Machine {
 public:
  /// Snapshots `environ` and the working directory.
  RealMachine();

  const std::map<std::string, std::string>& environment() const override { return env_; }
  std::optional<std::string> readFile(const std::string& path) const override;
  std::string homeDir() const override;
  std::string currentDir() const override { return cwd_; }
  int gpuCount() const override;
  int physicalCoreCount() const override;
  /// Runs `ssh [-p PORT] -o BatchMode=yes HOST hostname -I` (stdin from /dev/null, stderr passed through).
  std::string resolveMasterAddr(const std::string& host, const std::vector<std::string>& sshOptions) override;
  /// getaddrinfo(3) of the name; when that fails and `viaSsh`, of the name `ssh -G` maps it to.
  std::optional<std::string> hostLookupError(const std::string& host, bool viaSsh,
                                             const std::vector<std::string>& sshOptions) override;
  int pid() const override;
  void checkPortBindable(int port) override;
  int pickFreePort() override;

 private:
  std::map<std::string, std::string> env_;  ///< environ at construction
  std::string cwd_;                         ///< getcwd() at construction
};

}  // namespace dsrun::launcher
