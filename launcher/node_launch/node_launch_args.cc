#include "launcher/node_launch/node_launch_args.h"

#include <cstdlib>
#include <functional>
#include <map>

#include "common/control_line.h"
#include "common/error.h"
#include "common/strings.h"

namespace dsrun {

namespace {

int toInt(const std::string& flag, const std::string& value) {
  long long v = 0;
  if (!parseInt(value, v) || v < -2147483647LL || v > 2147483647LL) {
    throw ParseError(flag, 0, strCat("expected an integer, got '", value, "'"));
  }
  return static_cast<int>(v);
}

double toSeconds(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end == nullptr || *end != '\0') {
    throw ParseError(flag, 0, strCat("expected a number of seconds, got '", value, "'"));
  }
  return v;
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
      {"--save_pid", [](NodeLaunchArgs& a, const std::string& v) { a.savePid = toInt("--save_pid", v); }},
      {"--enable_each_rank_log",
       [](NodeLaunchArgs& a, const std::string& v) { a.eachRankLogDir = v == "None" ? "" : v; }},
      {"--bind_core_list", [](NodeLaunchArgs& a, const std::string& v) { a.bindCoreList = v; }},
      {"--job_id", [](NodeLaunchArgs& a, const std::string& v) { a.jobId = v; }},
      {"--python", [](NodeLaunchArgs& a, const std::string& v) { a.python = v; }},
      {"--kill_grace_s", [](NodeLaunchArgs& a, const std::string& v) { a.killGraceS = toSeconds("--kill_grace_s", v); }},
      {"--exit_timeout_s",
       [](NodeLaunchArgs& a, const std::string& v) { a.exitTimeoutS = toSeconds("--exit_timeout_s", v); }},
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

const std::map<std::string, std::function<void(NodeLaunchArgs&)>>& switchFlags() {
  static const std::map<std::string, std::function<void(NodeLaunchArgs&)>> flags = {
      {"--module", [](NodeLaunchArgs& a) { a.module = true; }},
      {"--no_python", [](NodeLaunchArgs& a) { a.noPython = true; }},
      {"--no_local_rank", [](NodeLaunchArgs& a) { a.noLocalRank = true; }},
      {"--bind_cores_to_rank", [](NodeLaunchArgs& a) { a.bindCoresToRank = true; }},
      {"--tag_output", [](NodeLaunchArgs& a) { a.tagOutput = true; }},
      {"--watch_stdin", [](NodeLaunchArgs& a) { a.watchStdin = true; }},
      {"--kill", [](NodeLaunchArgs& a) { a.mode = NodeLaunchMode::Kill; }},
  };
  return flags;
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
    if (auto s = switchFlags().find(flag); s != switchFlags().end()) {
      if (eq != std::string::npos) throw ParseError(flag, 0, strCat("takes no value, got '", word, "'"));
      s->second(out);
      continue;
    }
    auto v = valueFlags().find(flag);
    if (v == valueFlags().end()) {
      if (flag == "--enable_elastic_training" || flag == "--min_elastic_nodes" || flag == "--max_elastic_nodes") {
        throw ConfigError(strCat(flag, ": elastic training is not supported by dsrun-launch"));
      }
      throw ParseError(flag, 0, strCat("unknown dsrun-launch flag, got '", word, "' (see dsrun-launch --help)"));
    }
    if (eq != std::string::npos) {
      v->second(out, word.substr(eq + 1));
    } else {
      if (i + 1 >= args.size()) throw ParseError(flag, 0, "expected a value, got nothing");
      v->second(out, args[++i]);
    }
  }
  if (i < args.size()) {
    out.userScript = args[i];
    out.userArgs.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  }
  if (out.mode == NodeLaunchMode::Kill) {
    if (out.jobId.empty()) throw ParseError("--kill", 0, "needs --job_id=ID, got none");
    return out;
  }
  if (out.mode == NodeLaunchMode::Signal) {
    if (out.jobId.empty()) throw ParseError("--signal", 0, "needs --job_id=ID, got none");
    return out;
  }
  if (out.userScript.empty()) throw ParseError("dsrun-launch", 0, "expected the program to run, got none");
  if (out.mode == NodeLaunchMode::Node && out.worldInfo.empty()) {
    throw ParseError("--world_info", 0, "node mode needs --world_info=BASE64, got none");
  }
  if (out.noPython && out.module) {
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

}  // namespace dsrun
