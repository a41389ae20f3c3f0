#pragma once
// FakeMachine: an in-memory Machine for tests; every answer is a public field to set.

#include <map>
#include <string>
#include <vector>

#include "launcher/machine.h"

namespace dsrun::launcher {

class FakeMachine : public Machine {
 public:
  std::map<std::string, std::string> env;          ///< environment()
  std::map<std::string, std::string> files;        ///< path -> contents for readFile()
  std::map<std::string, std::string> unreadable;   ///< path -> errno text readFile() throws as IoError
  std::string home = "/home/user";                 ///< homeDir()
  std::string cwd = "/work/job";                   ///< currentDir()
  int gpus = 0;                                    ///< gpuCount()
  int cores = 4;                                   ///< physicalCoreCount()
  std::map<std::string, std::string> hostAddrs;    ///< host -> address for resolveMasterAddr()
  std::vector<std::string> resolved;               ///< hosts resolveMasterAddr() was asked about
  int processId = 4242;                            ///< pid()
  std::map<int, std::string> heldPorts;            ///< port -> the ConfigError checkPortBindable() throws
  int freePort = 40123;                            ///< pickFreePort()
  std::map<std::string, std::string> unresolvable; ///< host -> the message hostLookupError() returns
  std::vector<std::string> lookedUp;               ///< hosts hostLookupError() was asked about

  const std::map<std::string, std::string>& environment() const override { return env; }
  std::optional<std::string> readFile(const std::string& path) const override;
  std::string homeDir() const override { return home; }
  std::string currentDir() const override { return cwd; }
  int gpuCount() const override { return gpus; }
  int physicalCoreCount() const override { return cores; }
  std::string resolveMasterAddr(const std::string& host, const std::vector<std::string>& sshOptions) override;
  std::optional<std::string> hostLookupError(const std::string& host, bool viaSsh,
                                             const std::vector<std::string>& sshOptions) override;
  int pid() const override { return processId; }
  void checkPortBindable(int port) override;
  int pickFreePort() override { return freePort; }
};

}  // namespace dsrun::launcher
