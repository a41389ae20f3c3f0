#pragma once
// SshSession: one libssh connection to a host, configured the way OpenSSH's client is (ssh_config file,
// the user's keys and ssh-agent, known_hosts verification as StrictHostKeyChecking says), with one exec
// channel. RAII: the destructor closes the channel and the connection. Errors carry host:port.

#include <optional>
#include <string>

struct ssh_session_struct;
struct ssh_channel_struct;

namespace dsrun::launcher {

struct SshTarget {
  std::string host;                ///< as in the hostfile (also the config's Host match)
  std::string configFile;          ///< ssh_config to read; empty: ~/.ssh/config as libssh does
  std::optional<int> port;         ///< --ssh_port: overrides the config
  long connectTimeoutS = 10;       ///< connection timeout
};

class SshSession {
 public:
  /// Connects, verifies the host key and authenticates (agent, then the config's or default keys).
  /// Throws Error "ssh HOST:PORT: <what>" plus a hint saying what to fix. Any thread; one session per thread.
  explicit SshSession(const SshTarget& target);
  ~SshSession();
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  /// Opens a session channel and runs `command` in the remote user's shell. Throws Error on failure (then
  /// the session has no channel: sendEof() and exitStatus() do nothing).
  void exec(const std::string& command);
  /// Reads what is available without blocking: >0 bytes, 0 nothing now, -1 end of that stream.
  int readSome(char* buffer, int size, bool isStderr);
  /// True when the remote side closed the channel and everything was read.
  bool finished();
  /// Writes `bytes` to the remote command's stdin (blocking; meant for short control lines). Returns false
  /// when the channel is closed, its input was closed by sendEof(), or the write failed.
  bool write(const std::string& bytes);
  /// Closes our side of the channel's input: the remote command sees EOF on stdin.
  void sendEof();
  /// The remote exit status, or -1 when it sent none (e.g. killed by a signal).
  int exitStatus();
  /// The socket, for poll() (-1 once libssh closed it after an error).
  int fd() const;
  /// True once the connection itself failed or closed (a reset, a timeout, the peer gone); the channel's
  /// own end is finished().
  bool broken();
  /// libssh's last error text ("Socket error: Connection timed out"), empty when none.
  std::string lastError();
  /// TCP_USER_TIMEOUT on the socket: data unacknowledged for `ms` ends the connection (ETIMEDOUT), so a
  /// host whose link went silently down is noticed while we write to it. Returns false if it cannot be set.
  bool setUserTimeout(unsigned ms);
  /// The numeric address of the connected peer ("10.77.0.12"), empty if unknown.
  std::string peerAddress() const;
  /// "host:port".
  const std::string& peer() const { return peer_; }

 private:
  void connect(const SshTarget& target);

  ssh_session_struct* session_ = nullptr;  ///< the connection
  ssh_channel_struct* channel_ = nullptr;  ///< the exec channel, once open
  std::string peer_;                       ///< host:port for messages
  bool eofSent_ = false;                   ///< sendEof() done
};

}  // namespace dsrun::launcher
