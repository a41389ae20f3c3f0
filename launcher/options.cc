#include "launcher/options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>

#include <boost/program_options.hpp>

#include "common/error.h"
#include "common/strings.h"

namespace po = boost::program_options;

namespace dsrun::launcher {

const std::vector<std::string> kLauncherChoices = {"pdsh", "openmpi", "mpich", "mvapich",
                                                   "impi", "slurm",   "ssh",   "agent"};

namespace {

po::options_description describe() {
  po::options_description d("dsrun [options] SCRIPT [ARGS...]\n\nDeepSpeed launcher options");
  auto text = [] { return po::value<std::string>()->value_name("ARG"); };
  d.add_options()
      ("hostfile,H", text(), "hostfile (MPI style, 'worker-0 slots=4'); default /job/hostfile, "
                             "local mode if that is absent")
      ("include,i", text(), "NODE_SPEC[@NODE_SPEC...], NODE_SPEC=NAME[:SLOT[,SLOT...]]: resources to use")
      ("exclude,e", text(), "resources not to use; same syntax; exclusive with --include")
      ("num_nodes", text(), "use the first N hosts")
      ("num_gpus", text(), "use the first N slots of each host")
      ("num_accelerators", text(), "alias of --num_gpus")
      ("min_elastic_nodes", text(), "elastic training: minimum nodes")
      ("max_elastic_nodes", text(), "elastic training: maximum nodes")
      ("master_port", text(), "rendezvous port (default 29500)")
      ("master_addr", text(), "rendezvous address (default: 127.0.0.1 locally, first host's "
                              "'hostname -I' for multi-node)")
      ("node_rank", text(), "this node's index in the world (with --no_ssh)")
      ("launcher", text(), "multi-node backend: pdsh (default), openmpi, mpich, mvapich, impi, slurm, "
                           "ssh, agent")
      ("launcher_args", text(), "extra arguments for the backend, as one quoted string")
      ("module", po::bool_switch(), "run SCRIPT as a python module (python -m)")
      ("no_python", po::bool_switch(), "execute SCRIPT directly, without python")
      ("no_local_rank", po::bool_switch(), "do not pass --local_rank=N to SCRIPT")
      ("no_ssh", po::bool_switch(), "launch only this node's ranks (needs --node_rank)")
      ("no_ssh_check", po::bool_switch(), "skip the passwordless-ssh check")
      ("force_multi", po::bool_switch(), "use the multi-node backend even for a single host")
      ("save_pid", po::bool_switch(), "write the launcher pid to /tmp/<pid>.deepspeed")
      ("enable_each_rank_log", text(), "write each rank's stdout+stderr to a file in DIR")
      ("autotuning", text(), "DeepSpeed autotuner (not supported by dsrun)")
      ("elastic_training", po::bool_switch(), "elastic training between --min_elastic_nodes and --max_elastic_nodes "
                                              "hosts of the hostfile (agent and ssh backends)")
      ("bind_cores_to_rank", po::bool_switch(), "bind each rank to its share of the cores")
      ("bind_core_list", text(), "cores to share out, e.g. 0,2-5 (default: all physical cores)")
      ("ssh_port", text(), "ssh port for remote hosts")
      ("venv_script", text(), "script each node sources before its launch, e.g. a venv's bin/activate "
                              "(pdsh and ssh backends, as DeepSpeed's pdsh runner)")
      ("comment", text(), "Slurm backend: passed to srun --comment (job metadata)")
      ("account", text(), "Slurm backend: passed to srun --account")
      ("log_level", text(), "dsrun's own messages: debug, info (default), warning, error or critical")
      ("quiet,q", po::bool_switch(), "as quiet as possible: --log_level error");
  po::options_description own("dsrun options");
  own.add_options()
      ("python", text(), "interpreter for the ranks (default $DSRUN_PYTHON, else the one dsrt was built for)")
      ("dry_run", po::bool_switch(), "print the resolved plan as indented JSON; contacts no host, launches nothing")
      ("tag_output", po::bool_switch(), "prefix each output line with 'host:rank | '")
      ("kill_grace_s", text(), "seconds between SIGTERM and SIGKILL when stopping ranks (default 30)")
      ("exit_timeout_s", text(), "seconds the other ranks may run after the first clean exit "
                                 "(default unlimited)")
      ("max_restarts", text(), "restarts of the whole world after failures before the job fails (torchrun's "
                               "--max-restarts; default 0, elastic training 100; scale-ups are not counted)")
      ("elastic_timeout_s", text(), "elastic training: how long to wait for hosts while fewer than "
                                    "--min_elastic_nodes answer (default 100)")
      ("hang_timeout_s", text(), "a rank whose training step has not moved for this long is hung: "
                                 "stacks of every rank are saved, the job fails (or restarts); not with MPI/Slurm; default off")
      ("agent_port", text(), "dsrun-agent port (default 29600)")
      ("agent_heartbeat_ms", text(), "agent backend: how often each agent must show it is alive; elastic ssh: "
                                     "how often dsrun writes to each host (default 500)")
      ("agent_heartbeat_misses", text(), "agent backend: missed agent heartbeats before its host counts as lost; "
                                         "elastic ssh: unacknowledged beats before it does (default 5)")
      ("no_mesh_probe", po::bool_switch(), "agent backend: skip the check, before the launch, that the agents "
                                           "can connect to each other (every pair up to 16 hosts, log2(N) + 1 "
                                           "peers each beyond; on by default)")
      ("mesh_probe", po::bool_switch(), "agent backend: the reachability check before the launch (the default; "
                                        "kept for scripts that ask for it)")
      ("tree_width", text(), "agent backend: dsrun dials at most N agents and each agent forwards the launch to "
                             "at most N others (a tree, Slurm's TreeWidth); 0: dsrun dials every agent itself; "
                             "auto: the star up to 16 hosts, width 8 above (default auto)")
      ("rendezvous", text(), "agent backend: 'store' (the default): rank 0 hosts torch's TCPStore at "
                             "MASTER_ADDR:MASTER_PORT, as torchrun; 'agent': each node's agent serves the store "
                             "protocol to its own ranks and the agents pass keys up the launch tree (or to rank 0's "
                             "agent), so no process faces every rank (docs/rendezvous.md)")
      ("tls_dir", text(), "CA and certificate directory for the agent backend")
      ("ssh_config", text(), "OpenSSH client config for the ssh backend (default ~/.ssh/config)")
      ("make_tls", text(), "create a cluster CA and the launcher's certificate in DIR, then exit")
      ("make_node_cert", text(), "issue a node certificate from the CA in DIR (with --host, --addr, --out), "
                                 "then exit")
      ("host", text(), "with --make_node_cert: the host name the node's certificate is for")
      ("addr", text(), "with --make_node_cert: an IP address of that host (repeatable)")
      ("out", text(), "with --make_node_cert: the node's new TLS directory")
      ("revoke_cert", text(), "add --cert FILE to the revocation list of the CA in DIR, then exit")
      ("cert", text(), "with --revoke_cert: the certificate to revoke (e.g. DIR/issued/HOST.*.pem)")
      ("renew_launcher_cert", text(), "revoke the launcher certificate in DIR and issue a new one, then exit")
      ("help,h", po::bool_switch(), "show this help")
      ("version", po::bool_switch(), "show the version");
  d.add(own);
  return d;
}

// "--num-gpus" -> "--num_gpus", "--num-gpus=2" -> "--num_gpus=2": torchrun accepts both spellings of its
// flags, and every dsrun flag is spelled with underscores (DeepSpeed's), so a dash inside a long flag's name
// can only mean an underscore. Values are left alone.
std::string underscoredFlag(const std::string& token) {
  const size_t end = std::min(token.find('='), token.size());
  std::string out = token;
  std::replace(out.begin() + 2, out.begin() + static_cast<long>(end), '-', '_');
  return out;
}

// Index of the user script in `args` (args.size() if there is none): the first token that is neither an
// option nor an option's value, or the token after "--". Everything from there on belongs to the script
// (argparse's REMAINDER), so it is kept away from Boost, which would otherwise parse the script's flags.
// Long flags before it are rewritten with underscores (underscoredFlag) on the way.
size_t scriptIndex(const po::options_description& desc, std::vector<std::string>& args, bool& sawDashDash) {
  sawDashDash = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      sawDashDash = true;
      return i + 1;
    }
    if (args[i].size() < 2 || args[i][0] != '-') return i;
    if (startsWith(args[i], "--")) args[i] = underscoredFlag(args[i]);
    const std::string& token = args[i];
    std::string name;
    if (startsWith(token, "--")) {
      if (token.find('=') != std::string::npos) continue;  // --flag=value
      name = token.substr(2);
    } else if (token.size() == 2) {
      name = token;  // "-H value"; "-Hvalue" carries its value
    } else {
      continue;
    }
    // Unknown or ambiguous names are left for Boost to report, with its better message.
    const po::option_description* option = nullptr;
    try {
      option = desc.find_nothrow(name, true);
    } catch (const po::ambiguous_option&) {
      return args.size();
    }
    if (option != nullptr && option->semantic()->max_tokens() > 0) ++i;
  }
  return args.size();
}

// Edits (insert, delete, substitute, swap two neighbours) between `a` and `b`: optimal string alignment
// distance. Boost.Program_options reports an unknown option but suggests nothing; git's help.c and clang rank
// their "did you mean" candidates with this same measure.
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// " (did you mean --num_gpus?)" for an unknown `flag`, naming the known long flag fewest edits away when it
// is close (at most a third of the name changed, as argparse's difflib cutoff of 0.6 roughly allows).
std::string didYouMean(const po::options_description& desc, const std::string& flag) {
  std::string name = flag;
  while (!name.empty() && name.front() == '-') name.erase(name.begin());
  name = name.substr(0, name.find('='));
  std::string best;
  size_t bestDistance = std::numeric_limits<size_t>::max();
  for (const auto& option : desc.options()) {
    const std::string& candidate = option->long_name();
    const size_t distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best.empty() || name.empty() || bestDistance * 3 > std::max(name.size(), best.size())) return "";
  return strCat(" (did you mean --", best, "?)");
}

int toInt(const std::string& flag, const std::string& value) {
  long long parsed = 0;
  if (!parseInt(value, parsed) || parsed < std::numeric_limits<int>::min() ||
      parsed > std::numeric_limits<int>::max()) {
    throw ParseError("--" + flag, 0, strCat("expected an integer, got '", value, "'"));
  }
  return static_cast<int>(parsed);
}

double toSeconds(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  double parsed = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(parsed)) {
    throw ParseError("--" + flag, 0, strCat("expected a number of seconds, got '", value, "'"));
  }
  return parsed;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

using Setter = std::function<void(Options&, const std::string&)>;

// Flag name -> how its value lands in Options. Applied in command-line order, so a repeated flag keeps
// its last value as with argparse.
const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = {
      {"hostfile", [](Options& o, const std::string& v) { o.hostfile = v; o.hostfileGiven = true; }},
      {"include", [](Options& o, const std::string& v) { o.include = v; }},
      {"exclude", [](Options& o, const std::string& v) { o.exclude = v; }},
      {"num_nodes", [](Options& o, const std::string& v) { o.numNodes = toInt("num_nodes", v); }},
      {"num_gpus", [](Options& o, const std::string& v) { o.numGpus = toInt("num_gpus", v); }},
      {"num_accelerators",
       [](Options& o, const std::string& v) { o.numGpus = toInt("num_accelerators", v); }},
      {"min_elastic_nodes",
       [](Options& o, const std::string& v) { o.minElasticNodes = toInt("min_elastic_nodes", v); }},
      {"max_elastic_nodes",
       [](Options& o, const std::string& v) { o.maxElasticNodes = toInt("max_elastic_nodes", v); }},
      {"master_port",
       [](Options& o, const std::string& v) {
         o.masterPort = toInt("master_port", v);
         if (o.masterPort < 0 || o.masterPort > 65535) {
           throw ParseError("--master_port", 0, strCat("expected a port in [0, 65535], got '", v, "'"));
         }
       }},
      {"master_addr", [](Options& o, const std::string& v) { o.masterAddr = v; }},
      {"node_rank", [](Options& o, const std::string& v) { o.nodeRank = toInt("node_rank", v); }},
      {"launcher",
       [](Options& o, const std::string& v) {
         o.launcher = lower(v);
         if (std::find(kLauncherChoices.begin(), kLauncherChoices.end(), o.launcher) ==
             kLauncherChoices.end()) {
           throw ParseError("--launcher", 0,
                            strCat("unknown launcher '", v, "' (choices: ", join(kLauncherChoices, ", "), ")"));
         }
       }},
      {"launcher_args", [](Options& o, const std::string& v) { o.launcherArgs = v; }},
      {"module", [](Options& o, const std::string&) { o.launch.module = true; }},
      {"no_python", [](Options& o, const std::string&) { o.launch.noPython = true; }},
      {"no_local_rank", [](Options& o, const std::string&) { o.launch.noLocalRank = true; }},
      {"no_ssh", [](Options& o, const std::string&) { o.noSsh = true; }},
      {"no_ssh_check", [](Options& o, const std::string&) { o.noSshCheck = true; }},
      {"force_multi", [](Options& o, const std::string&) { o.forceMulti = true; }},
      {"save_pid", [](Options& o, const std::string&) { o.savePid = true; }},
      // DeepSpeed's default is the string "None", which it treats as "off".
      {"enable_each_rank_log",
       [](Options& o, const std::string& v) { o.launch.eachRankLogDir = v == "None" ? "" : v; }},
      {"autotuning",
       [](Options& o, const std::string& v) {
         if (v != "tune" && v != "run") {
           throw ParseError("--autotuning", 0, strCat("expected 'tune' or 'run', got '", v, "'"));
         }
         o.autotuning = v;
       }},
      {"elastic_training", [](Options& o, const std::string&) { o.elasticTraining = true; }},
      {"bind_cores_to_rank", [](Options& o, const std::string&) { o.launch.bindCoresToRank = true; }},
      {"bind_core_list", [](Options& o, const std::string& v) { o.launch.bindCoreList = v; }},
      {"ssh_port", [](Options& o, const std::string& v) { o.sshPort = toInt("ssh_port", v); }},
      {"venv_script", [](Options& o, const std::string& v) { o.venvScript = v; }},
      {"comment", [](Options& o, const std::string& v) { o.comment = v; }},
      {"account", [](Options& o, const std::string& v) { o.account = v; }},
      {"log_level",
       [](Options& o, const std::string& v) {
         static const std::vector<std::string> levels = {"debug", "info", "warning", "error", "critical"};
         if (std::find(levels.begin(), levels.end(), v) == levels.end()) {
           throw ParseError("--log_level", 0, strCat("expected one of ", join(levels, ", "), ", got '", v, "'"));
         }
         o.logLevel = v;
       }},
      {"quiet", [](Options& o, const std::string&) { o.logLevel = "error"; }},
      {"python", [](Options& o, const std::string& v) { o.launch.python = v; }},
      {"dry_run", [](Options& o, const std::string&) { o.dryRun = true; }},
      {"tag_output", [](Options& o, const std::string&) { o.launch.tagOutput = true; }},
      {"kill_grace_s",
       [](Options& o, const std::string& v) {
         o.launch.stop.killGrace = Seconds(toSeconds("kill_grace_s", v));
         if (o.launch.stop.killGrace < Seconds(0)) {
           throw ParseError("--kill_grace_s", 0, strCat("expected a non-negative number, got '", v, "'"));
         }
       }},
      {"exit_timeout_s",
       [](Options& o, const std::string& v) {
         // Negative: no timeout (the default), as dsrun-launch reads it (launch_settings.cc).
         const double timeout = toSeconds("exit_timeout_s", v);
         o.launch.stop.exitTimeout = timeout >= 0 ? std::optional<Seconds>(Seconds(timeout)) : std::nullopt;
       }},
      {"max_restarts",
       [](Options& o, const std::string& v) {
         o.maxRestarts = toInt("max_restarts", v);
         o.maxRestartsGiven = true;
         if (o.maxRestarts < 0) {
           throw ParseError("--max_restarts", 0, strCat("expected a non-negative integer, got '", v, "'"));
         }
       }},
      {"elastic_timeout_s",
       [](Options& o, const std::string& v) {
         o.elasticTimeoutS = toSeconds("elastic_timeout_s", v);
         if (o.elasticTimeoutS < 0) {
           throw ParseError("--elastic_timeout_s", 0, strCat("expected a non-negative number, got '", v, "'"));
         }
       }},
      {"mesh_probe", [](Options& o, const std::string&) { o.meshProbe = true; }},
      {"no_mesh_probe", [](Options& o, const std::string&) { o.meshProbe = false; }},
      {"agent_port",
       [](Options& o, const std::string& v) {
         o.agentPort = toInt("agent_port", v);
         if (o.agentPort <= 0 || o.agentPort > 65535) {
           throw ParseError("--agent_port", 0, strCat("expected a port in [1, 65535], got '", v, "'"));
         }
       }},
      {"hang_timeout_s",
       [](Options& o, const std::string& v) {
         o.launch.hangTimeoutS = toSeconds("hang_timeout_s", v);
         if (o.launch.hangTimeoutS < 0) {
           throw ParseError("--hang_timeout_s", 0, strCat("expected a non-negative number, got '", v, "'"));
         }
       }},
      {"agent_heartbeat_ms",
       [](Options& o, const std::string& v) {
         o.agentHeartbeatMs = toInt("agent_heartbeat_ms", v);
         if (o.agentHeartbeatMs < 50) {
           throw ParseError("--agent_heartbeat_ms", 0, strCat("expected at least 50, got '", v, "'"));
         }
       }},
      {"agent_heartbeat_misses",
       [](Options& o, const std::string& v) {
         o.agentHeartbeatMisses = toInt("agent_heartbeat_misses", v);
         if (o.agentHeartbeatMisses < 1) {
           throw ParseError("--agent_heartbeat_misses", 0, strCat("expected a positive integer, got '", v, "'"));
         }
       }},
      {"tree_width",
       [](Options& o, const std::string& v) {
         if (v == "auto") {
           o.treeWidth = kTreeWidthAuto;
           return;
         }
         o.treeWidth = toInt("tree_width", v);
         // Width 1 would chain every node behind the previous one: N hops for N nodes.
         if (o.treeWidth < 0 || o.treeWidth == 1) {
           throw ParseError("--tree_width", 0, strCat("expected auto, 0 (no tree) or a width of at least 2, got '", v, "'"));
         }
       }},
      {"rendezvous",
       [](Options& o, const std::string& v) {
         if (v != "store" && v != "agent") {
           throw ParseError("--rendezvous", 0, strCat("expected 'store' or 'agent', got '", v, "'"));
         }
         o.agentRendezvous = v == "agent";
       }},
      {"tls_dir", [](Options& o, const std::string& v) { o.tlsDir = v; }},
      {"ssh_config", [](Options& o, const std::string& v) { o.sshConfig = v; }},
      {"make_tls", [](Options& o, const std::string& v) { o.makeTls = v; }},
      {"make_node_cert", [](Options& o, const std::string& v) { o.makeNodeCert = v; }},
      {"host", [](Options& o, const std::string& v) { o.certHost = v; }},
      {"addr",
       [](Options& o, const std::string& v) {
         for (const auto& part : split(v, ',')) {
           const std::string addr = trim(part);
           if (!addr.empty()) o.certAddrs.push_back(addr);
         }
       }},
      {"out", [](Options& o, const std::string& v) { o.certOut = v; }},
      {"revoke_cert", [](Options& o, const std::string& v) { o.revokeCert = v; }},
      {"cert", [](Options& o, const std::string& v) { o.certFile = v; }},
      {"renew_launcher_cert", [](Options& o, const std::string& v) { o.renewLauncherCert = v; }},
      {"help", [](Options& o, const std::string&) { o.help = true; }},
      {"version", [](Options& o, const std::string&) { o.version = true; }},
  };
  return table;
}

// The certificate commands' companion flags make sense only with their command (and --host would
// otherwise silently shadow argparse's abbreviation of --hostfile).
void checkCertificateFlags(const Options& o) {
  if (o.makeNodeCert.empty()) {
    if (!o.certHost.empty()) throw ParseError("--host", 0, "only with --make_node_cert (did you mean --hostfile?)");
    if (!o.certAddrs.empty()) throw ParseError("--addr", 0, "only with --make_node_cert");
    if (!o.certOut.empty()) throw ParseError("--out", 0, "only with --make_node_cert");
  } else if (o.certHost.empty() || o.certOut.empty()) {
    throw ParseError("--make_node_cert", 0,
                     "needs --host NAME and --out NODEDIR\n  hint: dsrun --make_node_cert DIR --host node-1 "
                     "[--addr 10.0.0.11] --out node-1-tls");
  }
  if (o.revokeCert.empty() && !o.certFile.empty()) throw ParseError("--cert", 0, "only with --revoke_cert");
  if (!o.revokeCert.empty() && o.certFile.empty()) {
    throw ParseError("--revoke_cert", 0, "needs --cert FILE (the certificate to revoke)");
  }
}

}  // namespace

Options parseOptions(const std::vector<std::string>& args) {
  static const po::options_description desc = describe();
  Options options;
  std::vector<std::string> positional;
  try {
    bool sawDashDash = false;
    std::vector<std::string> words = args;
    const size_t script = scriptIndex(desc, words, sawDashDash);
    const size_t optionsEnd = sawDashDash ? script - 1 : script;
    const std::vector<std::string> launcherArgs(words.begin(), words.begin() + static_cast<long>(optionsEnd));
    positional.assign(words.begin() + static_cast<long>(std::min(script, words.size())), words.end());
    const po::parsed_options parsed = po::command_line_parser(launcherArgs).options(desc).run();
    for (const po::option& opt : parsed.options) {
      const auto& table = setters();
      auto it = table.find(opt.string_key);
      if (it == table.end()) throw InternalError("no setter for option --" + opt.string_key);
      it->second(options, opt.value.empty() ? std::string() : opt.value.front());
    }
  } catch (const po::unknown_option& e) {
    throw ParseError("command line", 0, strCat(e.what(), didYouMean(desc, e.get_option_name()),
                                               "\n  hint: run 'dsrun --help' for the options"));
  } catch (const po::error& e) {
    throw ParseError("command line", 0, strCat(e.what(), "\n  hint: run 'dsrun --help' for the options"));
  }
  checkCertificateFlags(options);
  const bool tlsCommand = !options.makeTls.empty() || !options.makeNodeCert.empty() || !options.revokeCert.empty() ||
                          !options.renewLauncherCert.empty();
  if (!positional.empty()) {
    options.userScript = positional.front();
    options.userArgs.assign(positional.begin() + 1, positional.end());
  } else if (!options.help && !options.version && !tlsCommand) {
    throw ParseError("command line", 0,
                     "missing the user script\n  hint: usage: dsrun [options] SCRIPT [ARGS...]; "
                     "see 'dsrun --help'");
  }
  return options;
}

RankLaunchSettings launchSettings(const Options& options, const std::string& jobId, int launcherPid) {
  RankLaunchSettings launch = options.launch;
  launch.jobId = jobId;
  launch.savePid = options.savePid ? launcherPid : 0;
  return launch;
}

int restartBudget(const Options& options) {
  return options.elasticTraining || options.maxRestartsGiven ? options.maxRestarts : 0;
}

std::string usageText() {
  std::ostringstream out;
  out << describe();
  return out.str();
}

}  // namespace dsrun::launcher
