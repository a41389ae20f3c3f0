#include "launcher/node_launch/node_launch_args.h"

#include <functional>
#include <map>
#include <optional>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

int toInt(const std::string& flag, const std::string& value) {
  long long v = 0;
  if (!parseInt(value, v) || v < -2147483647LL || v > 2147483647LL) {
    throw ParseError(flag, 0, strCat("expected an integer, got '", value, "'"));
  }
  return static_cast<int>(v);
}

std::vector<int> toSignals(const std::string& value) {
  std::vector<int> signals;
  for (const std::string& name : split(value, ',')) {
    std::optional<int> signal = controlSignalFromName(name);
    if (!signal) throw ParseError("--signal", 0, strCat("expected INT, TERM, HUP, USR1 or USR2, got '", name, "'"));
    signals.push_back(*signal);
  }
  return signals;
}

using Setter = std::function<void(NodeLaunchArgs&, const std::string&)>;

const std::map<std::string, Setter>& valueFlags() {
  static const std::map<std::string, Setter> flags = {
      {"--world_info", [](NodeLaunchArgs& a, const std::string& v) { a.worldInfo = v; }},
      {"--node_rank", [](NodeLaunchArgs& a, const std::string& v) { a.nodeRank = toInt("--node_rank", v); }},
      {"--master_addr", [](NodeLaunchArgs& a, const std::string& v) { a.masterAddr = v; }},
      {"--master_port", [](NodeLaunchArgs& a, const std::string& v) { a.masterPort = toInt("--master_port", v); }},
      {"--stdin_timeout_ms",
       [](NodeLaunchArgs& a, const std::string& v) {
         a.stdinTimeoutMs = toInt("--stdin_timeout_ms", v);
         if (a.stdinTimeoutMs < 1) {
           throw ParseError("--stdin_timeout_ms", 0, strCat("expected a positive number of ms, got '", v, "'"));
         }
       }},
      {"--signal",
       [](NodeLaunchArgs& a, const std::string& v) {
         a.signals = toSignals(v);
         a.mode = NodeLaunchMode::Signal;
       }},
      {"--rank_env",
       [](NodeLaunchArgs& a, const std::string& v) {
         a.rankEnv = v;
         a.mode = NodeLaunchMode::Rank;
       }},
  };
  return flags;
}

using Switch = std::function<void(NodeLaunchArgs&)>;

const std::map<std::string, Switch>& switchFlags() {
  static const std::map<std::string, Switch> flags = {
      {"--watch_stdin", [](NodeLaunchArgs& a) { a.watchStdin = true; }},
      {"--kill", [](NodeLaunchArgs& a) { a.mode = NodeLaunchMode::Kill; }},
  };
  return flags;
}

// dsrun-launch's own flags come from the tables above; the per-rank settings read themselves
// (RankLaunchSettings::takeFlag, the inverse of the toArgv() dsrun wrote them with).
std::optional<Switch> switchSetter(const std::string& flag) {
  if (auto s = switchFlags().find(flag); s != switchFlags().end()) return s->second;
  if (RankLaunchSettings::flagKind(flag) != RankLaunchSettings::FlagKind::Switch) return std::nullopt;
  return [flag](NodeLaunchArgs& a) { a.launch.takeFlag(flag, ""); };
}

std::optional<Setter> valueSetter(const std::string& flag) {
  if (auto v = valueFlags().find(flag); v != valueFlags().end()) return v->second;
  if (RankLaunchSettings::flagKind(flag) != RankLaunchSettings::FlagKind::Value) return std::nullopt;
  return [flag](NodeLaunchArgs& a, const std::string& value) { a.launch.takeFlag(flag, value); };
}

}  // namespace

NodeLaunchArgs parseNodeLaunchArgs(const std::vector<std::string>& args) {
  NodeLaunchArgs out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (!startsWith(word, "--")) break;
    const size_t eq = word.find('=');
    const std::string flag = word.substr(0, eq);
    if (auto s = switchSetter(flag)) {
      if (eq != std::string::npos) throw ParseError(flag, 0, strCat("takes no value, got '", word, "'"));
      (*s)(out);
      continue;
    }
    auto v = valueSetter(flag);
    if (!v) {
      if (flag == "--enable_elastic_training" || flag == "--min_elastic_nodes" || flag == "--max_elastic_nodes") {
        throw ConfigError(strCat(flag, ": elastic training is not supported by dsrun-launch"));
      }
      throw ParseError(flag, 0, strCat("unknown dsrun-launch flag, got '", word, "' (see dsrun-launch --help)"));
    }
    if (eq != std::string::npos) {
      (*v)(out, word.substr(eq + 1));
    } else {
      if (i + 1 >= args.size()) throw ParseError(flag, 0, "expected a value, got nothing");
      (*v)(out, args[++i]);
    }
  }
  if (i < args.size()) {
    out.userScript = args[i];
    out.userArgs.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  }
  if (out.mode == NodeLaunchMode::Kill) {
    if (out.launch.jobId.empty()) throw ParseError("--kill", 0, "needs --job_id=ID, got none");
    return out;
  }
  if (out.mode == NodeLaunchMode::Signal) {
    if (out.launch.jobId.empty()) throw ParseError("--signal", 0, "needs --job_id=ID, got none");
    return out;
  }
  if (out.userScript.empty()) throw ParseError("dsrun-launch", 0, "expected the program to run, got none");
  if (out.mode == NodeLaunchMode::Node && out.worldInfo.empty()) {
    throw ParseError("--world_info", 0, "node mode needs --world_info=BASE64, got none");
  }
  if (out.launch.noPython && out.launch.module) {
    throw ConfigError("--no_python and --module cannot be used together (--module runs 'python -m SCRIPT')");
  }
  return out;
}

std::string nodeLaunchUsage() {
  return "usage: dsrun-launch --world_info=B64 --node_rank=N [--master_addr=A] [--master_port=P]\n"
         "                    [--no_python] [--module] [--no_local_rank] [--save_pid=PID]\n"
         "                    [--enable_each_rank_log=DIR] [--bind_cores_to_rank] [--bind_core_list=L]\n"
         "                    [--job_id=ID] [--python=PATH] [--tag_output] [--kill_grace_s=S]\n"
         "                    [--exit_timeout_s=S] [--watch_stdin [--stdin_timeout_ms=MS]] SCRIPT [ARGS...]\n"
         "       dsrun-launch --rank_env=openmpi|mpich|impi|mvapich|slurm|auto [--master_addr=A]\n"
         "                    [--master_port=P] [--job_id=ID] [--python=PATH] [--no_python] [--module]\n"
         "                    [--no_local_rank] SCRIPT [ARGS...]\n"
         "       dsrun-launch --kill --job_id=ID [--kill_grace_s=S]\n"
         "       dsrun-launch --signal=INT|TERM|HUP|USR1|USR2[,...] --job_id=ID\n"
         "See docs/backends.md.\n";
}

}  // namespace dsrun::launcher
