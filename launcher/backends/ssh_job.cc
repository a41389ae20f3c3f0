#include "launcher/backends/ssh_job.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <future>
#include <optional>
#include <set>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/exit_timeout_line.h"
#include "common/line_buffer.h"
#include "supervision/line_sink.h"
#include "common/logging.h"
#include "supervision/signal_pipe.h"
#include "common/strings.h"
#include "launcher/failure_line.h"

namespace dsrun {

namespace {

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

struct SshJob::Node {
  std::string host;
  std::unique_ptr<SshSession> session;
  LineBuffer out, err;
  bool outOpen = true, errOpen = true, done = false;
  int exitStatus = -1;
};

SshJob::SshJob(std::vector<NodeCommand> commands, Connect connect, Settings settings)
    : commands_(std::move(commands)), connect_(std::move(connect)), settings_(std::move(settings)) {}

bool SshJob::connectAll(std::vector<Node>& nodes) {
  std::vector<std::string> errors;
  std::vector<std::string> unreachable;  // hosts, for an elastic round's outcome
  const auto failed = [&](size_t i, const Error& e) {
    errors.push_back(e.what());
    unreachable.push_back(nodes[i].host);
  };
  // The first host alone first: it is DeepSpeed's passwordless-ssh check, with the backend's own settings.
  nodes[0].host = commands_[0].host;
  try {
    nodes[0].session = connect_(nodes[0].host);
  } catch (const Error& e) {
    if (!settings_.elasticRound) throw;
    failed(0, e);
  }
  std::vector<std::future<std::unique_ptr<SshSession>>> pending;
  for (size_t i = 1; i < nodes.size(); ++i) {
    nodes[i].host = commands_[i].host;
    pending.push_back(std::async(std::launch::async, [this, host = nodes[i].host] { return connect_(host); }));
  }
  for (size_t i = 1; i < nodes.size(); ++i) {
    try {
      nodes[i].session = pending[i - 1].get();
    } catch (const Error& e) {
      failed(i, e);
    }
  }
  if (errors.empty()) return true;
  if (settings_.elasticRound) {
    outcome_.end = RoundOutcome::End::Unreachable;
    outcome_.exitCode = 255;
    outcome_.unreachable = errors;
    outcome_.lostHosts = unreachable;
    outcome_.detectedAt = std::chrono::steady_clock::now();
    return false;
  }
  throw Error(strCat(errors.front(), errors.size() > 1 ? strCat(" (and ", errors.size() - 1, " more host(s))") : "",
                     "; nothing was started"));
}

int SshJob::run() {
  std::vector<Node> nodes(commands_.size());
  if (!connectAll(nodes)) return outcome_.exitCode;
  if (settings_.elasticRound) {
    // The first beat a silent host misses leaves within one period; TCP then gives up on it after the rest
    // of the budget, so a host is declared silent within heartbeatMs x heartbeatMisses, as on agents.
    const unsigned userTimeout = static_cast<unsigned>(settings_.heartbeatMs * std::max(settings_.heartbeatMisses - 1, 1));
    for (Node& n : nodes) {
      if (!n.session->setUserTimeout(userTimeout)) {
        DSRUN_LOG(WARN) << "ssh " << n.session->peer() << ": cannot set TCP_USER_TIMEOUT; a silent host is noticed "
                        << "only when TCP gives up";
      }
    }
  }
  return loop(nodes);
}

int SshJob::loop(std::vector<Node>& nodes) {
  SignalPipe signals(controlSignals());
  std::vector<SshStopEvent> execFailures;  // elastic rounds: a host lost between the login and the exec
  for (size_t i = 0; i < nodes.size(); ++i) {
    try {
      nodes[i].session->exec(join(commands_[i].argv, " "));
    } catch (const Error& e) {
      if (!settings_.elasticRound) throw;
      nodes[i].done = true;
      execFailures.push_back({nodes[i].host, e.what(), 255, true});
    }
  }

  LineSink stdoutSink(1), stderrSink(2);
  size_t starting = 0;  // hosts whose dsrun-launch said it is starting its ranks (elastic rounds)
  SshRoundFacts facts;
  std::optional<RankFailure> failure;
  RootCauseCollector rootCauses;  // the nodes' root-cause lines, for the closing block
  std::optional<int> signalled;
  bool stopping = false;
  double hardDeadline = 0;
  std::optional<double> exitDeadline;  // first clean exit anywhere + --exit_timeout_s
  std::string cleanExit;               // "rank 3 on dsn2"
  std::set<int> cleanRanks;            // ranks a dsrun-launch said finished cleanly
  bool exitTimedOut = false;
  double nextBeat = nowSeconds() + settings_.heartbeatMs / 1000.0;
  const auto stopAll = [&] {
    stopping = true;
    hardDeadline = nowSeconds() + settings_.killGraceS + 15;  // + the nodes' kill wait (state D, 10 s) + 5 s
    for (Node& n : nodes) n.session->sendEof();  // dsrun-launch --watch_stdin: EOF stops its ranks (SIGTERM)
  };
  const auto detected = [&] {
    if (facts.events.empty() && !facts.rescaled) outcome_.detectedAt = std::chrono::steady_clock::now();
  };
  size_t running = nodes.size() - execFailures.size();
  if (!execFailures.empty()) {
    detected();
    facts.events = execFailures;
    stopAll();
  }
  while (running > 0) {
    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
    for (const Node& n : nodes) {
      if (!n.done) fds.push_back({n.session->fd(), POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR) throw IoError("", "poll", errno, "ssh sessions");
    for (int s : signals.drain()) {
      if (s == SIGCHLD) continue;
      // Every signal goes down every channel as a control line, in order: dsrun-launch acts on it as on
      // the signal itself (a first INT/TERM/HUP stops its ranks with that signal, a second kills them, USR1
      // and USR2 pass through), so the ranks see exactly what dsrun saw, as on the local backend.
      if (isStopSignal(s)) {
        if (!signalled) signalled = s;
        if (!stopping) {
          stopping = true;
          hardDeadline = nowSeconds() + settings_.killGraceS + 15;  // + the nodes' kill wait (state D, 10 s) + 5 s
        }
      }
      for (Node& n : nodes) {
        if (!n.done) n.session->write(controlLine(s));
      }
    }
    for (Node& n : nodes) {
      if (n.done) continue;
      for (bool isStderr : {false, true}) {
        bool& open = isStderr ? n.errOpen : n.outOpen;
        LineBuffer& lines = isStderr ? n.err : n.out;
        LineSink& sink = isStderr ? stderrSink : stdoutSink;
        const auto emit = [&](std::string_view line) {
          if (settings_.elasticRound && isStderr && isNodeStartingLine(line)) {
            // Every host's dsrun-launch is starting its ranks: the round runs (the restart line).
            if (++starting == nodes.size() && settings_.hooks.onAllRanksStarted) {
              const std::string notice = settings_.hooks.onAllRanksStarted();
              if (!notice.empty()) stderrSink.write("", notice);
            }
            return;
          }
          // A node's root-cause lines arrive after the stop; dsrun quotes them in its closing block instead.
          if (rootCauses.take(line)) return;
          sink.write("", line);
          if (!failure && !stopping) {  // ranks dying of a stop are not failures
            failure = parseFailureLine(line);
            if (failure) {
              detected();
              facts.events.push_back({n.host, describeFailure(*failure), failure->exitCode, false});
              stopAll();
            }
          }
          if (!failure && !stopping && settings_.exitTimeoutS >= 0) {
            if (std::optional<RankFailure> clean = parseCleanExitLine(line)) {
              cleanRanks.insert(clean->rank);
              // --exit_timeout_s is job-wide: the first clean exit on any host starts every host's clock.
              if (!exitDeadline) {
                exitDeadline = nowSeconds() + settings_.exitTimeoutS;
                cleanExit = strCat("rank ", clean->rank, " on ", clean->host);
              }
            }
          }
        };
        char buffer[65536];
        while (open) {
          const int got = n.session->readSome(buffer, sizeof buffer, isStderr);
          if (got > 0) {
            lines.feed(std::string_view(buffer, static_cast<size_t>(got)), emit);
          } else {
            if (got < 0) {
              lines.finish(emit);
              open = false;
            }
            break;
          }
        }
      }
      // A broken connection never reports the channel's end: its streams ending is the end.
      if (!n.outOpen && !n.errOpen && (n.session->finished() || n.session->broken())) {
        n.done = true;
        n.exitStatus = n.session->exitStatus();
        --running;
        if (settings_.elasticRound && n.exitStatus < 0) {
          const std::string socketError = n.session->broken() ? n.session->lastError() : "";
          const SessionEnd end = classifySessionEnd(n.exitStatus, socketError);
          detected();
          facts.events.push_back({n.host,
                                  lostHostCause(n.session->peer(), n.host, end, socketError, settings_.heartbeatMs,
                                                settings_.heartbeatMisses),
                                  255, true});
        } else if (settings_.elasticRound && n.exitStatus != 0 && !stopping) {
          detected();
          facts.events.push_back(
              {n.host, strCat("ssh ", n.session->peer(), ": dsrun-launch exited with code ", n.exitStatus),
               n.exitStatus, false});
        }
        if (n.exitStatus != 0 && !stopping) stopAll();
      }
    }
    if (!stopping && nowSeconds() >= nextBeat) {
      // Unacknowledged beats make TCP_USER_TIMEOUT end a silent host's connection; dsrun-launch's relay
      // stops its ranks when they stop arriving (every job).
      nextBeat = nowSeconds() + settings_.heartbeatMs / 1000.0;
      for (Node& n : nodes) {
        if (!n.done) n.session->write(heartbeatLine());
      }
      if (settings_.elasticRound && settings_.hooks.rescaleWanted && settings_.hooks.rescaleWanted()) {
        detected();
        facts.rescaled = true;
        stopAll();
      }
    }
    if (!stopping && exitDeadline && nowSeconds() >= *exitDeadline) {
      std::vector<std::string> running;
      for (const auto& [rank, host] : settings_.rankHosts) {
        if (cleanRanks.count(rank) == 0) running.push_back(strCat("rank ", rank, " on ", host));
      }
      stderrSink.write("", exitTimeoutLine(cleanExit, settings_.exitTimeoutS, running));
      exitTimedOut = true;
      stopAll();
    }
    if (stopping && nowSeconds() > hardDeadline) break;  // the sessions' close kills what is left
  }
  facts.signalled = signalled;
  facts.exitCode = [&] {
    if (failure) {
      if (!settings_.elasticRound) {
        stderrSink.write("", strCat("dsrun: ", describeFailure(*failure), "; stopped the job on every host"));
        for (const std::string& line : rootCauses.block(*failure, settings_.program)) stderrSink.write("", line);
      }
      return failure->exitCode;
    }
    if (signalled) return 128 + *signalled;
    if (exitTimedOut) return 1;  // the ranks still running were cut short: the job fails
    if (!facts.events.empty()) return facts.events.front().exitCode;
    if (facts.rescaled) return 0;
    for (const Node& n : nodes) {
      if (n.exitStatus != 0) {
        if (!settings_.elasticRound) {
          stderrSink.write("", strCat("dsrun: ssh ", n.session->peer(), ": dsrun-launch ",
                                      n.exitStatus < 0 ? std::string("ended without an exit status")
                                                       : strCat("exited with code ", n.exitStatus)));
        }
        return n.exitStatus < 0 ? 255 : n.exitStatus;
      }
    }
    return 0;
  }();
  const std::chrono::steady_clock::time_point detectedAt = outcome_.detectedAt;
  outcome_ = sshRoundOutcome(facts);
  outcome_.detectedAt = detectedAt;
  return outcome_.exitCode;
}

}  // namespace dsrun
