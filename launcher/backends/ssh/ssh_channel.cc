#include "launcher/backends/ssh/ssh_channel.h"

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/strings.h"
#include "launcher/backends/ssh/ssh_round.h"

namespace dsrun::launcher {

SshChannel::SshChannel(std::string host, std::unique_ptr<SshSession> session, std::string command, Settings settings)
    : host_(std::move(host)), session_(std::move(session)), command_(std::move(command)), settings_(settings) {}

std::optional<std::string> SshChannel::start() {
  try {
    session_->exec(command_);
  } catch (const Error& e) {
    if (!settings_.elasticRound) throw;
    ended_ = true;  // a host lost between the login and the exec
    return std::string(e.what());
  }
  return std::nullopt;
}

void SshChannel::signal(int signal) { session_->write(controlLine(signal)); }

void SshChannel::stop() { session_->sendEof(); }  // dsrun-launch --watch_stdin: EOF stops its ranks (SIGTERM)

std::optional<std::string> SshChannel::kill() {
  ended_ = true;
  return strCat("ssh ", session_->peer(), ": dsrun-launch ended without an exit status");
}

// launch_lines.h: the empty line dsrun-launch counts as life and drops.
void SshChannel::heartbeat() { session_->write(heartbeatLine()); }

void SshChannel::pump(RemoteJob& job, size_t index, Seconds now) {
  if (ended_) return;
  for (bool isStderr : {false, true}) {
    bool& open = isStderr ? errOpen_ : outOpen_;
    LineBuffer& lines = isStderr ? err_ : out_;
    const auto emit = [&](std::string_view line) {
      // Every host's dsrun-launch says so before it starts its ranks; the round runs once all did.
      if (settings_.elasticRound && isStderr && isNodeStartingLine(line)) return job.onStarted(index);
      job.onOutput(index, isStderr, line, now);
    };
    char buffer[65536];
    while (open) {
      const int got = session_->readSome(buffer, sizeof buffer, isStderr);
      if (got == 0) break;
      if (got > 0) {
        lines.feed(std::string_view(buffer, static_cast<size_t>(got)), emit);
      } else {
        lines.finish(emit);
        open = false;
      }
    }
  }
  // A broken connection never reports the channel's end: its streams ending is the end.
  if (outOpen_ || errOpen_ || !(session_->finished() || session_->broken())) return;
  ended_ = true;
  const int status = session_->exitStatus();
  if (status >= 0) {
    return job.onExited(index, status, strCat("ssh ", session_->peer(), ": dsrun-launch exited with code ", status),
                        now);
  }
  if (!settings_.elasticRound) {
    return job.onLost(index, strCat("ssh ", session_->peer(), ": dsrun-launch ended without an exit status"), now);
  }
  const std::string socketError = session_->broken() ? session_->lastError() : "";
  job.onLost(index,
             lostHostCause(session_->peer(), host_, classifySessionEnd(status, socketError), socketError,
                           settings_.heartbeatMs, settings_.heartbeatMisses),
             now);
}

}  // namespace dsrun::launcher
