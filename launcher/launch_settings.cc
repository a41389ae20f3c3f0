#include "launcher/launch_settings.h"

#include <cstdlib>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

std::string seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

int toInt(const std::string& flag, const std::string& value) {
  long long v = 0;
  if (!parseInt(value, v) || v < -2147483647LL || v > 2147483647LL) {
    throw ParseError(flag, 0, strCat("expected an integer, got '", value, "'"));
  }
  return static_cast<int>(v);
}

Seconds toSeconds(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end == nullptr || *end != '\0') {
    throw ParseError(flag, 0, strCat("expected a number of seconds, got '", value, "'"));
  }
  return Seconds(v);
}

}  // namespace

// The writers here and kReaders below are the one list of these flags: a field added to the struct needs a
// line in each and in operator==; tests/launcher/launch_settings_test.cc round-trips every field.
std::vector<std::string> RankLaunchSettings::toArgv() const {
  std::vector<std::string> argv;
  if (noPython) argv.push_back("--no_python");
  if (module) argv.push_back("--module");
  if (noLocalRank) argv.push_back("--no_local_rank");
  if (savePid != 0) {
    argv.push_back("--save_pid");
    argv.push_back(std::to_string(savePid));
  }
  if (!eachRankLogDir.empty()) argv.push_back("--enable_each_rank_log=" + eachRankLogDir);
  if (bindCoresToRank) argv.push_back("--bind_cores_to_rank");
  if (bindCoreList) argv.push_back("--bind_core_list=" + *bindCoreList);
  argv.push_back("--job_id=" + jobId);
  if (python != builtInPython()) argv.push_back("--python=" + python);
  if (tagOutput) argv.push_back("--tag_output");
  argv.push_back("--kill_grace_s=" + seconds(stop.killGrace.count()));
  if (stop.exitTimeout) argv.push_back("--exit_timeout_s=" + seconds(stop.exitTimeout->count()));
  if (hangTimeoutS > 0) argv.push_back("--hang_timeout_s=" + seconds(hangTimeoutS));
  return argv;
}

std::vector<std::string> RankLaunchSettings::toRankArgv() const {
  std::vector<std::string> argv = {"--job_id=" + jobId};
  if (python != builtInPython()) argv.push_back("--python=" + python);
  if (noPython) argv.push_back("--no_python");
  if (module) argv.push_back("--module");
  if (noLocalRank) argv.push_back("--no_local_rank");
  argv.push_back("--kill_grace_s=" + seconds(stop.killGrace.count()));
  return argv;
}

namespace {

using Kind = RankLaunchSettings::FlagKind;

struct FlagReader {
  const char* flag;
  Kind kind;
  void (*apply)(RankLaunchSettings&, const std::string&);
};

// The reading half of the list, in toArgv()'s order.
const FlagReader kReaders[] = {
    {"--no_python", Kind::Switch, [](RankLaunchSettings& s, const std::string&) { s.noPython = true; }},
    {"--module", Kind::Switch, [](RankLaunchSettings& s, const std::string&) { s.module = true; }},
    {"--no_local_rank", Kind::Switch, [](RankLaunchSettings& s, const std::string&) { s.noLocalRank = true; }},
    {"--save_pid", Kind::Value,
     [](RankLaunchSettings& s, const std::string& v) { s.savePid = toInt("--save_pid", v); }},
    // launch.py's default is the string "None", which means off.
    {"--enable_each_rank_log", Kind::Value,
     [](RankLaunchSettings& s, const std::string& v) { s.eachRankLogDir = v == "None" ? "" : v; }},
    {"--bind_cores_to_rank", Kind::Switch,
     [](RankLaunchSettings& s, const std::string&) { s.bindCoresToRank = true; }},
    {"--bind_core_list", Kind::Value, [](RankLaunchSettings& s, const std::string& v) { s.bindCoreList = v; }},
    {"--job_id", Kind::Value, [](RankLaunchSettings& s, const std::string& v) { s.jobId = v; }},
    {"--python", Kind::Value, [](RankLaunchSettings& s, const std::string& v) { s.python = v; }},
    {"--tag_output", Kind::Switch, [](RankLaunchSettings& s, const std::string&) { s.tagOutput = true; }},
    {"--kill_grace_s", Kind::Value,
     [](RankLaunchSettings& s, const std::string& v) { s.stop.killGrace = toSeconds("--kill_grace_s", v); }},
    // As the option writes it: a negative timeout is no timeout.
    {"--exit_timeout_s", Kind::Value,
     [](RankLaunchSettings& s, const std::string& v) {
       const Seconds timeout = toSeconds("--exit_timeout_s", v);
       s.stop.exitTimeout = timeout >= Seconds(0) ? std::optional<Seconds>(timeout) : std::nullopt;
     }},
    {"--hang_timeout_s", Kind::Value,
     [](RankLaunchSettings& s, const std::string& v) { s.hangTimeoutS = toSeconds("--hang_timeout_s", v).count(); }},
};

const FlagReader* findReader(const std::string& flag) {
  for (const FlagReader& r : kReaders) {
    if (flag == r.flag) return &r;
  }
  return nullptr;
}

}  // namespace

RankLaunchSettings::FlagKind RankLaunchSettings::flagKind(const std::string& flag) {
  const FlagReader* r = findReader(flag);
  return r == nullptr ? FlagKind::NotSetting : r->kind;
}

void RankLaunchSettings::takeFlag(const std::string& flag, const std::string& value) {
  const FlagReader* r = findReader(flag);
  if (r == nullptr) throw InternalError(strCat("RankLaunchSettings::takeFlag: '", flag, "' is not a launch setting"));
  r->apply(*this, value);
}

RankLaunchSettings RankLaunchSettings::fromArgv(const std::vector<std::string>& argv) {
  RankLaunchSettings out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    const size_t eq = word.find('=');
    const std::string flag = word.substr(0, eq);
    switch (flagKind(flag)) {
      case FlagKind::NotSetting:
        throw ParseError(flag, 0, strCat("not a launch setting, got '", word, "'"));
      case FlagKind::Switch:
        if (eq != std::string::npos) throw ParseError(flag, 0, strCat("takes no value, got '", word, "'"));
        out.takeFlag(flag, "");
        break;
      case FlagKind::Value:
        if (eq != std::string::npos) {
          out.takeFlag(flag, word.substr(eq + 1));
        } else {
          if (i + 1 >= argv.size()) throw ParseError(flag, 0, "expected a value, got nothing");
          out.takeFlag(flag, argv[++i]);
        }
        break;
    }
  }
  return out;
}

LocalJobOptions RankLaunchSettings::localJobOptions() const {
  LocalJobOptions job;
  job.eachRankLogDir = eachRankLogDir;
  job.tagOutput = tagOutput;
  job.stop = stop;
  job.hangTimeoutS = hangTimeoutS;
  job.hangDir = eachRankLogDir;  // as on the agent backend: the stacks go with the logs, else to the cwd
  job.jobId = jobId;
  job.savePid = savePid;
  return job;
}

bool RankLaunchSettings::operator==(const RankLaunchSettings& o) const {
  auto fields = [](const RankLaunchSettings& s) {
    return std::tie(s.python, s.module, s.noPython, s.noLocalRank, s.savePid, s.eachRankLogDir, s.bindCoresToRank,
                    s.bindCoreList, s.jobId, s.tagOutput, s.stop, s.hangTimeoutS);
  };
  return fields(*this) == fields(o);
}

}  // namespace dsrun::launcher
