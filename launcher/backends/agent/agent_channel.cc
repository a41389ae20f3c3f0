#include "launcher/backends/agent/agent_channel.h"

#include <algorithm>
#include <csignal>
#include <utility>

#include "common/logging.h"
#include "common/strings.h"

namespace dsrun::launcher {

void AgentChannel::welcomed(const wire::Welcome& welcome) {
  ready_ = true;
  heartbeatMs_ = std::max<uint32_t>(welcome.heartbeat_period_ms(), 20);
}

void AgentChannel::closed(const std::string& reason) {
  done_ = true;
  error_ = reason;
}

std::optional<std::string> AgentChannel::start() {
  // A tree member's launch travels inside its root's; its parent starts it.
  if (client_) client_->send(launch_);
  for (int signal : std::exchange(pendingSignals_, {})) this->signal(signal);
  return std::nullopt;  // a refused launch comes back as an Error (RemoteJob::onSpawnFailed)
}

void AgentChannel::signal(int signal) {
  if (client_ && !ready_ && !done_) {
    // dsrun adopting a lost root's child (agent_job.cc onRootLost): the stop must reach it once it is attached.
    pendingSignals_.push_back(signal);
    return;
  }
  if (!live()) return;
  wire::Envelope e;
  e.mutable_signal()->set_job_id(jobId_);
  e.mutable_signal()->set_signal(signal);
  client_->send(e);
}

void AgentChannel::stop() { signal(SIGTERM); }

std::optional<std::string> AgentChannel::kill() {
  signal(SIGKILL);
  return std::nullopt;
}

void AgentChannel::heartbeat() {
  if (!live()) return;
  wire::Envelope beat;
  beat.mutable_heartbeat();
  client_->send(beat);
}

std::chrono::milliseconds AgentChannel::silenceBudget() const {
  const uint32_t beat = client_->agentBeatMs();
  if (beat == 0) return std::chrono::milliseconds(heartbeatMs_) * silence_.periods;
  return std::chrono::milliseconds(beat) * silence_.beats;
}

std::optional<std::string> AgentChannel::silentAt(std::chrono::steady_clock::time_point now, const std::string& host) {
  if (!live() || !client_->agentHeartbeats()) return std::nullopt;
  const auto budget = silenceBudget();
  const auto silent = now - client_->lastHeard();
  if (silent < budget) return std::nullopt;
  // Its beats may be waiting unread in our socket while this loop was busy (thousands of ranks' events, or a
  // starved CPU): then we are late, not the host. Read them before judging again.
  if (const size_t waiting = client_->bytesWaiting(); waiting > 0) {
    DSRUN_LOG(DEBUG) << "agent " << client_->address() << ": " << waiting << " bytes unread after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(silent).count()
                     << " ms: this loop is behind, the host is not silent";
    return std::nullopt;
  }
  // Packets dropped, no reset: TCP alone would wait for minutes. The agent there stops its own ranks once
  // our heartbeats stop reaching it.
  std::string reason = strCat("agent ", client_->address(), ": host ", host, " silent for ",
                              std::chrono::duration_cast<std::chrono::milliseconds>(silent).count(),
                              " ms (heartbeat budget ", budget.count(), " ms; network down or host hung)");
  client_->close();
  closed(reason);
  return reason;
}

int64_t AgentChannel::lastHeardUs(int64_t fallback) const {
  const auto heard = client_->lastHeardWall();
  if (heard.time_since_epoch().count() == 0) return fallback;
  return std::chrono::duration_cast<std::chrono::microseconds>(heard.time_since_epoch()).count();
}

void AgentChannel::written(size_t bytes, uint64_t windowBytes) {
  uncredited_ += bytes;
  // Batched: one OutputCredit per quarter window keeps the agent streaming without a message per chunk.
  if (uncredited_ >= windowBytes / 4 && live()) {
    client_->sendCredit(uncredited_);
    uncredited_ = 0;
  }
}

}  // namespace dsrun::launcher
