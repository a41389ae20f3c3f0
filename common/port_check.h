#pragma once
// MASTER_PORT pre-flight: before any rank starts, the master host must be able to bind the
// rendezvous port, else the job fails or hangs much later in the rendezvous (pytorch#73320). When it cannot,
// the error names the port and the process holding it, found the way ss(8) does: the listening socket's inode
// in /proc/net/tcp{,6}, then the process with that socket among /proc/*/fd.

#include <optional>
#include <string>

namespace dsrun {

/// Who holds a TCP port.
struct PortHolder {
  int pid = -1;       ///< -1: not found (another user's process, or another network namespace)
  std::string comm;   ///< /proc/PID/comm
};

/// The inode of a socket listening on TCP `port` in `procNetTcp` (the text of /proc/net/tcp or tcp6), if any.
/// Pure.
std::optional<unsigned long> listeningInode(const std::string& procNetTcp, int port);

/// The process listening on TCP `port` on this machine, from /proc (readable entries only).
PortHolder findPortHolder(int port);

/// Throws ConfigError "MASTER_PORT 29500 is already in use on <where> by pid 77 (python3)" with a hint, if
/// `port` cannot be bound on all addresses (with SO_REUSEADDR, as c10d's TCPStore binds it).
void checkPortBindable(int port, const std::string& where = "this host");

/// A port the kernel says is free now (bind to port 0); throws IoError if none can be had.
int pickFreePort();

}  // namespace dsrun
