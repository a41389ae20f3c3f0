#pragma once
// The command line of `dsrun-launch`, the per-node program multi-node backends run on each host:
//  - node mode (DeepSpeed's launch.py flags): --world_info=B64 --node_rank=N ... SCRIPT ARGS: runs that
//    node's share of the world with runLocalJob;
//  - rank mode: --rank_env=openmpi|mpich|impi|mvapich|slurm|auto ... SCRIPT ARGS: one MPI/Slurm task maps
//    its launcher's variables to dsrun's environment contract and runs the rank program;
//  - kill mode: --kill --job_id=ID: stops every process of job ID on this host;
//  - signal mode: --signal=USR1[,USR2...] --job_id=ID: passes those signals, in order, to the job's
//    dsrun-launch processes on this host (pdsh's signal channel, job_signal.h).

#include <string>
#include <vector>

#include "launcher/launch_settings.h"
#include "launcher/rank_program.h"

namespace dsrun::launcher {

enum class NodeLaunchMode { Node, Rank, Kill, Signal };

struct NodeLaunchArgs {
  NodeLaunchMode mode = NodeLaunchMode::Node;
  std::string worldInfo;                    ///< --world_info (node mode)
  int nodeRank = 0;                         ///< --node_rank (node mode; pdsh's %n)
  std::string masterAddr = "127.0.0.1";     ///< --master_addr
  int masterPort = 29500;                   ///< --master_port
  /// --python, --module, --no_python, --no_local_rank, --save_pid, --enable_each_rank_log, --bind_*,
  /// --job_id, --tag_output, --kill_grace_s, --exit_timeout_s: read by RankLaunchSettings::takeFlag
  RankLaunchSettings launch;
  bool watchStdin = false;                  ///< --watch_stdin: control lines on stdin, EOF stops the job (ssh)
  int stdinTimeoutMs = 0;                   ///< --stdin_timeout_ms: with --watch_stdin, silence = EOF (0: off)
  std::vector<int> signals;                 ///< --signal NAMES (signal mode), in order
  std::string rankEnv;                      ///< --rank_env FLAVOR (rank mode)
  std::string userScript;                   ///< the program (first positional)
  std::vector<std::string> userArgs;        ///< its arguments, untouched

  /// What each rank runs (script, arguments, launch settings): what planRanks needs from this command line.
  RankProgram program() const { return {userScript, userArgs, launch}; }
};

/// Parses `args` (no argv[0]); `--flag=value` and `--flag value` both work, parsing stops at the first
/// word that is not a flag. Throws ParseError naming the flag for unknown flags, bad numbers, a missing
/// script (node and rank mode), a missing --job_id (kill and signal mode) or --world_info (node mode), and
/// a --signal name that is not INT, TERM, HUP, USR1 or USR2.
NodeLaunchArgs parseNodeLaunchArgs(const std::vector<std::string>& args);

/// The usage text of dsrun-launch.
std::string nodeLaunchUsage();

}  // namespace dsrun::launcher
