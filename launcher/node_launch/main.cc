// dsrun-launch: the per-node program of dsrun's multi-node backends (see node_launch_args.h and
// docs/backends.md). Errors end it with one line on stderr and the error's exit code.

#include <unistd.h>

#include <csignal>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "supervision/launch_lines.h"
#include "supervision/local_job.h"
#include "common/logging.h"
#include "launcher/node_launch/job_registry.h"
#include "launcher/node_launch/job_signal.h"
#include "launcher/node_launch/node_launch_args.h"
#include "launcher/node_launch/node_ranks.h"
#include "launcher/node_launch/rank_env_mapping.h"
#include "launcher/node_launch/rank_process.h"
#include "launcher/node_launch/stdin_control.h"
#include "launcher/real_machine.h"
#include "launcher/python_interpreter.h"

namespace {

std::string hostName() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

int runNode(const dsrun::launcher::NodeLaunchArgs& args, dsrun::launcher::RealMachine& machine) {
  std::optional<dsrun::launcher::JobRegistration> registration;
  if (!args.launch.jobId.empty()) {
    registration.emplace(args.launch.jobId);
    if (registration->killed()) {
      std::cerr << "dsrun-launch: " << hostName() << ": job " << args.launch.jobId
                << " was stopped before it started here" << std::endl;
      return 128 + SIGTERM;
    }
  }
  // Refused before any rank of this node starts, naming --python (dsrun forwards its value).
  if (!args.launch.noPython) dsrun::launcher::checkPythonInterpreter(args.launch.python, machine.environment());
  const std::vector<dsrun::RankSpec> ranks =
      dsrun::launcher::nodeRankSpecs(args, machine.environment(), machine.physicalCoreCount());
  dsrun::LocalJobOptions options = dsrun::launcher::nodeJobOptions(args);
  dsrun::UniqueFd stdinControl;
  if (args.watchStdin) {
    stdinControl = dsrun::launcher::takeStdinForControl();
    if (args.stdinTimeoutMs > 0) {
      stdinControl = dsrun::launcher::relayWithTimeout(std::move(stdinControl), args.stdinTimeoutMs);
    }
    options.controlFds.push_back(stdinControl.get());
  }
  if (registration) options.controlFds.push_back(registration->controlFd());
  if (args.stdinTimeoutMs > 0 && !ranks.empty()) {
    // An elastic ssh round: tells dsrun this node got this far (ssh_job.h), after the login and the shell.
    std::cerr << dsrun::nodeStartingLine(args.nodeRank, ranks.front().host, ranks.front().rank, ranks.back().rank)
              << std::endl;
  }
  const int code = dsrun::runLocalJob(ranks, options);
  if (code != 0 && !ranks.empty()) {
    // The launcher's last resort when no rank line named the failure (see launcher/failure_line.h).
    std::cerr << dsrun::nodeExitLine(ranks.front().host, args.nodeRank, ranks.front().rank, ranks.back().rank, code)
              << std::endl;
  }
  return code;
}

int runRank(const dsrun::launcher::NodeLaunchArgs& args, dsrun::launcher::RealMachine& machine) {
  const dsrun::launcher::RankIdentity id = dsrun::launcher::rankIdentityFromEnv(args.rankEnv, machine.environment());
  dsrun::RankSpec spec;
  spec.rank = id.rank;
  spec.localRank = id.localRank;
  spec.host = hostName();
  spec.command.argv = dsrun::launcher::rankArgv(args.program(), id.localRank);
  spec.command.env =
      dsrun::launcher::withRankContract(machine.environment(), id, args.masterAddr, args.masterPort, args.launch.jobId);
  return dsrun::launcher::runRankProcess(spec, args.launch.stop.killGrace,
                                         /*signalsReachRank=*/args.rankEnv == "slurm");
}

}  // namespace

int main(int argc, char** argv) {
  dsrun::setLogIdentity("dsrun-launch");
  try {
    const std::vector<std::string> words(argv + 1, argv + argc);
    if (!words.empty() && (words[0] == "-h" || words[0] == "--help")) {
      std::cout << dsrun::launcher::nodeLaunchUsage();
      return 0;
    }
    const dsrun::launcher::NodeLaunchArgs args = dsrun::launcher::parseNodeLaunchArgs(words);
    dsrun::launcher::RealMachine machine;
    switch (args.mode) {
      case dsrun::launcher::NodeLaunchMode::Kill: {
        const int n = dsrun::launcher::killJob(args.launch.jobId, args.launch.stop.killGrace);
        if (n > 0) {
          std::cerr << "dsrun-launch: " << hostName() << ": stopped " << n << " process(es) of job "
                    << args.launch.jobId << std::endl;
        }
        return 0;
      }
      case dsrun::launcher::NodeLaunchMode::Signal:
        dsrun::launcher::signalJob(args.launch.jobId, args.signals);
        return 0;
      case dsrun::launcher::NodeLaunchMode::Rank:
        return runRank(args, machine);
      case dsrun::launcher::NodeLaunchMode::Node:
        return runNode(args, machine);
    }
    return 1;
  } catch (const dsrun::Error& e) {
    std::cerr << "dsrun-launch: " << hostName() << ": " << e.what() << std::endl;
    return e.exitCode();
  } catch (const std::exception& e) {
    std::cerr << "dsrun-launch: " << hostName() << ": internal error: " << e.what() << std::endl;
    return 1;
  }
}
