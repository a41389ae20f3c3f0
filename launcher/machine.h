#pragma once
// Machine: everything the launcher learns from the computer it runs on, behind one interface so the whole
// dsrun flow (hostfile -> plan -> backend) runs in tests with FakeMachine (docs/style.md §12).

#include <map>
#include <optional>
#include <vector>
#include <string>

namespace dsrun::launcher {

class Machine {
 public:
  virtual ~Machine() = default;

  /// The launcher's environment (name -> value).
  virtual const std::map<std::string, std::string>& environment() const = 0;

  /// The whole file, or nullopt if nothing exists at `path`. Throws IoError naming `path` when it exists
  /// but cannot be read (permissions, a directory, ...).
  virtual std::optional<std::string> readFile(const std::string& path) const = 0;

  /// The home directory (`~` as DeepSpeed expands it: $HOME, else the password database).
  virtual std::string homeDir() const = 0;

  /// The launcher's working directory (absolute).
  virtual std::string currentDir() const = 0;

  /// Number of GPUs on this machine (/dev/nvidia0, /dev/nvidia1, ...); 0 without GPUs.
  virtual int gpuCount() const = 0;

  /// Physical cores (DeepSpeed uses psutil.cpu_count(logical=False)); at least 1.
  virtual int physicalCoreCount() const = 0;

  /// The address DeepSpeed would use as MASTER_ADDR for `host`: the first word of
  /// `ssh -o BatchMode=yes SSH_OPTIONS HOST hostname -I`, where SSH_OPTIONS are the backend's own
  /// (sshOptionsFor). Throws Error (with a --master_addr hint) when that fails.
  virtual std::string resolveMasterAddr(const std::string& host, const std::vector<std::string>& sshOptions) = 0;

  /// Why `host` has no address here (the resolver's message), or nullopt when it has one. With `viaSsh`, a
  /// name the resolver does not know is then mapped through the OpenSSH client's configuration with
  /// `sshOptions` (`ssh -G`: a `Host` alias may name a machine DNS does not know), as ssh and pdsh would reach
  /// it. Consults /etc/hosts, DNS and ssh's configuration only: no host of the job is contacted.
  virtual std::optional<std::string> hostLookupError(const std::string& host, bool viaSsh,
                                                     const std::vector<std::string>& sshOptions) = 0;

  /// This process's pid (for the job id and --save_pid).
  virtual int pid() const = 0;

  /// Throws ConfigError naming the port and the process holding it when TCP `port` cannot be bound here
  /// (port_check.h). The local backend's MASTER_PORT pre-flight.
  virtual void checkPortBindable(int port) = 0;

  /// A TCP port that is free here now (for --master_port 0).
  virtual int pickFreePort() = 0;
};

}  // namespace dsrun::launcher
