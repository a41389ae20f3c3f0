#pragma once
// RankLaunchSettings: how every rank of a job is started and stopped (interpreter, --module, log files,
// output tags, core binding, kill grace, exit timeout, ...), held once. dsrun's Options and dsrun-launch's
// NodeLaunchArgs each hold one; toArgv()/toRankArgv() write it onto a dsrun-launch command line and
// takeFlag()/fromArgv() read it back, so the launcher's writer and the node's reader are one list
// (launch_settings.cc) instead of two that must agree. localJobOptions() maps it onto runLocalJob's.

#include <optional>
#include <string>
#include <vector>

#include "common/stop_times.h"
#include "supervision/local_job.h"
#include "launcher/python_interpreter.h"

namespace dsrun::launcher {

struct RankLaunchSettings {
  std::string python = defaultPython();     ///< --python: the ranks' interpreter (python_interpreter.h)
  bool module = false;                      ///< --module: python -u -m SCRIPT
  bool noPython = false;                    ///< --no_python: exec SCRIPT directly
  bool noLocalRank = false;                 ///< --no_local_rank: no --local_rank=N argument
  int savePid = 0;                          ///< --save_pid PID: write /tmp/PID.deepspeed (0: off)
  std::string eachRankLogDir;               ///< --enable_each_rank_log DIR: a log file per rank (empty: off)
  bool bindCoresToRank = false;             ///< --bind_cores_to_rank
  std::optional<std::string> bindCoreList;  ///< --bind_core_list "0,2-5"
  std::string jobId;                        ///< --job_id: the job's DSRUN_JOB_ID (dsrun-launch --kill finds it)
  bool tagOutput = false;                   ///< --tag_output: prefix rank output lines with "host:rank | "
  StopTimes stop;                           ///< --kill_grace_s (SIGTERM -> SIGKILL), --exit_timeout_s
  double hangTimeoutS = 0;                  ///< --hang_timeout_s: no training step for this long = hung (0: off)

  /// The node-mode dsrun-launch flags for these settings, in the order of its usage: the switches and
  /// values that differ from the defaults, plus --job_id and --kill_grace_s, which are always written.
  /// --python is written when it is not builtInPython(), so a node's own DSRUN_PYTHON applies otherwise.
  /// Seconds are written with 6 significant digits.
  std::vector<std::string> toArgv() const;
  /// The rank-mode subset (MPI/Slurm tasks): --job_id, --python, --no_python, --module, --no_local_rank,
  /// --kill_grace_s. The other settings act in the node's dsrun-launch or in dsrun, not in one rank's.
  std::vector<std::string> toRankArgv() const;

  /// How a dsrun-launch flag ("--tag_output", no "=value") is read: not one of these settings, a switch,
  /// or a flag that takes a value.
  enum class FlagKind { NotSetting, Switch, Value };
  static FlagKind flagKind(const std::string& flag);
  /// Applies one flag of flagKind() Switch (value ignored) or Value. Throws ParseError naming the flag for
  /// a value that is not a number where one is needed; InternalError for a flag that is not a setting.
  void takeFlag(const std::string& flag, const std::string& value);
  /// The inverse of toArgv() and toRankArgv(): settings flags only, as `--flag=value` or `--flag value`;
  /// what is not written keeps its default ("None" as --enable_each_rank_log is off, as in launch.py).
  /// Throws ParseError naming the word for anything else.
  static RankLaunchSettings fromArgv(const std::vector<std::string>& argv);

  /// runLocalJob's options for these settings (announceCleanExit and controlFds stay the caller's).
  LocalJobOptions localJobOptions() const;

  bool operator==(const RankLaunchSettings& other) const;
  bool operator!=(const RankLaunchSettings& other) const { return !(*this == other); }
};

}  // namespace dsrun::launcher
