#include "launcher/backends/ssh_backend.h"

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <future>
#include <memory>
#include <sstream>

#include "common/control_line.h"
#include "common/error.h"
#include "common/line_buffer.h"
#include "common/line_sink.h"
#include "common/signal_pipe.h"
#include "common/strings.h"
#include "launcher/failure_line.h"

namespace dsrun {

namespace {

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// One host's session and its output state.
struct Node {
  std::string host;
  std::unique_ptr<SshSession> session;
  LineBuffer out, err;
  bool outOpen = true, errOpen = true, done = false;
  int exitStatus = -1;
};

}  // namespace

SshTarget SshBackend::targetFor(const std::string& host, const Options& options) {
  SshTarget t;
  t.host = host;
  t.configFile = options.sshConfig;
  t.port = options.sshPort;
  return t;
}

std::vector<NodeCommand> SshBackend::nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const {
  std::vector<NodeCommand> out;
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    const std::vector<std::string> launch =
        nodeLaunchArgv(site_.node, plan, ctx.options, ctx.launcherPid, std::to_string(i), true);
    out.push_back({plan.hosts[i].host, remoteShellWords(plan.exports, site_.node.cwd, launch)});
  }
  return out;
}

MasterAddrSource SshBackend::preflightFirstHost(const std::string& host, const LaunchContext& ctx) {
  SshSession session(targetFor(host, ctx.options));
  session.exec("hostname -I");
  const std::string hint = "\n  hint: pass --master_addr ADDR (the address of the first host)";
  std::string output;
  char buffer[1024];
  const double deadline = nowSeconds() + 30;
  while (true) {
    const int n = session.readSome(buffer, sizeof buffer, false);
    if (n > 0) {
      output.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0) break;
    if (nowSeconds() > deadline) {
      throw Error(strCat("cannot infer the master address: 'hostname -I' on ", session.peer(),
                         " did not finish within 30 s", hint));
    }
    pollfd p{session.fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
  }
  std::istringstream words(output);
  std::string first;
  words >> first;
  if (first.empty()) {
    throw Error(strCat("cannot infer the master address: 'hostname -I' on ", session.peer(),
                       " printed no address (exit status ", session.exitStatus(), ")", hint));
  }
  return {MasterAddrSource::Kind::Known, first};
}

int SshBackend::run(const WorldPlan& plan, const LaunchContext& ctx) {
  const std::vector<NodeCommand> commands = nodeCommands(plan, ctx);
  std::vector<Node> nodes(plan.hosts.size());
  // The first host alone first: it is DeepSpeed's passwordless-ssh check, with the backend's own settings.
  nodes[0].host = plan.hosts[0].host;
  nodes[0].session = std::make_unique<SshSession>(targetFor(nodes[0].host, ctx.options));
  std::vector<std::future<std::unique_ptr<SshSession>>> pending;
  for (size_t i = 1; i < nodes.size(); ++i) {
    nodes[i].host = plan.hosts[i].host;
    pending.push_back(std::async(std::launch::async, [target = targetFor(nodes[i].host, ctx.options)] {
      return std::make_unique<SshSession>(target);
    }));
  }
  std::vector<std::string> errors;
  for (size_t i = 1; i < nodes.size(); ++i) {
    try {
      nodes[i].session = pending[i - 1].get();
    } catch (const Error& e) {
      errors.push_back(e.what());
    }
  }
  if (!errors.empty()) {
    throw Error(strCat(errors.front(), errors.size() > 1 ? strCat(" (and ", errors.size() - 1, " more host(s))") : "",
                       "; nothing was started"));
  }

  SignalPipe signals(controlSignals());
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i].session->exec(join(commands[i].argv, " "));

  LineSink stdoutSink(1), stderrSink(2);
  std::optional<RankFailure> failure;
  std::optional<int> signalled;
  bool stopping = false;
  double hardDeadline = 0;
  std::optional<double> exitDeadline;  // first clean exit anywhere + --exit_timeout_s
  std::string cleanExit;               // "rank 3 on dsn2"
  bool exitTimedOut = false;
  const auto stopAll = [&] {
    stopping = true;
    hardDeadline = nowSeconds() + ctx.options.launch.killGraceS + 5;
    for (Node& n : nodes) n.session->sendEof();  // dsrun-launch --watch_stdin: EOF stops its ranks (SIGTERM)
  };
  size_t running = nodes.size();
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
          hardDeadline = nowSeconds() + ctx.options.launch.killGraceS + 5;
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
          sink.write("", line);
          if (!failure && !stopping) {  // ranks dying of a stop are not failures
            failure = parseFailureLine(line);
            if (failure) stopAll();
          }
          if (!failure && !stopping && ctx.options.launch.exitTimeoutS >= 0 && !exitDeadline) {
            if (std::optional<RankFailure> clean = parseCleanExitLine(line)) {
              // --exit_timeout_s is job-wide: the first clean exit on any host starts every host's clock.
              exitDeadline = nowSeconds() + ctx.options.launch.exitTimeoutS;
              cleanExit = strCat("rank ", clean->rank, " on ", clean->host);
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
      if (!n.outOpen && !n.errOpen && n.session->finished()) {
        n.done = true;
        n.exitStatus = n.session->exitStatus();
        --running;
        if (n.exitStatus != 0 && !stopping) stopAll();
      }
    }
    if (!stopping && exitDeadline && nowSeconds() >= *exitDeadline) {
      stderrSink.write("", strCat("dsrun: ", cleanExit, " finished ", ctx.options.launch.exitTimeoutS,
                                  "s ago and other ranks are still running (exit timeout); stopping the job on every host"));
      exitTimedOut = true;
      stopAll();
    }
    if (stopping && nowSeconds() > hardDeadline) break;  // the sessions' close kills what is left
  }
  if (failure) {
    stderrSink.write("", strCat("dsrun: ", describeFailure(*failure), "; stopped the job on every host"));
    return failure->exitCode;
  }
  if (signalled) return 128 + *signalled;
  if (exitTimedOut) return 0;  // docs/local_launch.md: the ranks still running were stopped as asked
  for (const Node& n : nodes) {
    if (n.exitStatus != 0) {
      stderrSink.write("", strCat("dsrun: ssh ", n.session->peer(), ": dsrun-launch ",
                                  n.exitStatus < 0 ? std::string("ended without an exit status")
                                                   : strCat("exited with code ", n.exitStatus)));
      return n.exitStatus < 0 ? 255 : n.exitStatus;
    }
  }
  return 0;
}

}  // namespace dsrun
