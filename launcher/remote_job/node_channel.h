#pragma once
// NodeChannel: how a remote-job driver (remote_job.h) reaches one node's ranks, whatever the medium (an ssh
// session to dsrun-launch, the local pdsh/mpirun/srun command, an agent connection). The driver decides;
// a channel only carries the decision. What happens on the node comes back as the driver's events
// (RemoteJob::onStarted / onOutput / onExited / onLost), reported by the medium's loop.

#include <optional>
#include <string>

namespace dsrun::launcher {

class NodeChannel {
 public:
  virtual ~NodeChannel() = default;
  /// Starts the node's ranks. Returns why it could not (the driver then counts the node lost), or throws
  /// dsrun::Error when that must end the launch with nothing else started (the medium's choice).
  virtual std::optional<std::string> start() = 0;
  /// Passes a signal dsrun received to the node's ranks, as itself (the node decides what a second stop
  /// signal does).
  virtual void signal(int signal) = 0;
  /// Stops the node's ranks; the node applies the kill grace.
  virtual void stop() = 0;
  /// Kill the node's ranks now (the grace ran out, or a second stop signal on a medium that kills then).
  /// Returns how the node ended when that closes the channel at once (its end will not be reported);
  /// nullopt when the medium still reports the node's end.
  virtual std::optional<std::string> kill() = 0;
  /// A sign of life to the node, which stops its ranks when they stop arriving.
  virtual void heartbeat() = 0;
};

}  // namespace dsrun::launcher
