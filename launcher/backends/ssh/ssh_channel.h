#pragma once
// SshChannel: the ssh medium of a remote job (remote_job/node_channel.h): one host's SshSession running its
// remote line (`dsrun-launch --watch_stdin ...`). Signals go down as control lines, the stop is EOF on the
// channel's stdin (dsrun-launch stops its ranks), a heartbeat is an empty line. pump() reads what the host
// sent and reports it to the driver: output lines, the node-starting line of an elastic round as "started",
// and the session's end as "exited" or, without an exit status, "lost".

#include <memory>
#include <optional>
#include <string>

#include "common/line_buffer.h"
#include "launcher/backends/ssh/ssh_session.h"
#include "launcher/remote_job/node_channel.h"
#include "launcher/remote_job/remote_job.h"

namespace dsrun::launcher {

class SshChannel : public NodeChannel {
 public:
  struct Settings {
    bool elasticRound = false;  ///< an exec failure loses the host instead of ending the launch
    int heartbeatMs = 500;      ///< named when a silent host is reported
    int heartbeatMisses = 5;    ///< named when a silent host is reported
  };
  /// `session` is connected and authenticated; `command` is the host's remote line.
  SshChannel(std::string host, std::unique_ptr<SshSession> session, std::string command, Settings settings);

  /// Runs the remote line. Throws dsrun::Error outside elastic rounds.
  std::optional<std::string> start() override;
  void signal(int signal) override;
  void stop() override;
  /// Nothing to send: the session's close, when the job ends, takes what is left with it.
  std::optional<std::string> kill() override;
  void heartbeat() override;

  /// Reads what the host sent and reports it to `job` as node `index`; after the end, does nothing.
  void pump(RemoteJob& job, size_t index, Seconds now);
  /// The socket to poll, while the session runs; -1 once it ended.
  int fd() const { return ended_ ? -1 : session_->fd(); }
  SshSession& session() { return *session_; }

 private:
  std::string host_;
  std::unique_ptr<SshSession> session_;
  std::string command_;
  Settings settings_;
  LineBuffer out_, err_;             ///< partial lines
  bool outOpen_ = true, errOpen_ = true;
  bool ended_ = false;               ///< reported exited or lost
};

}  // namespace dsrun::launcher
