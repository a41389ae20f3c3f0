#include "launcher/options.h"

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "common/error.h"

using Catch::Matchers::Contains;
using dsrun::launcher::Options;
using dsrun::launcher::parseOptions;
using Args = std::vector<std::string>;

TEST_CASE("parseOptions has DeepSpeed's defaults", "[launcher][options]") {
  const Options o = parseOptions({"train.py"});
  CHECK(o.hostfile == "/job/hostfile");
  CHECK_FALSE(o.hostfileGiven);
  CHECK(o.include.empty());
  CHECK(o.exclude.empty());
  CHECK(o.numNodes == -1);
  CHECK(o.numGpus == -1);
  CHECK(o.minElasticNodes == -1);
  CHECK(o.maxElasticNodes == -1);
  CHECK(o.masterPort == 29500);
  CHECK(o.masterAddr.empty());
  CHECK(o.nodeRank == -1);
  CHECK(o.launcher == "pdsh");
  CHECK(o.launcherArgs.empty());
  CHECK_FALSE(o.launch.module);
  CHECK_FALSE(o.launch.noPython);
  CHECK_FALSE(o.launch.noLocalRank);
  CHECK_FALSE(o.noSsh);
  CHECK_FALSE(o.noSshCheck);
  CHECK_FALSE(o.forceMulti);
  CHECK_FALSE(o.savePid);
  CHECK(o.launch.eachRankLogDir.empty());
  CHECK_FALSE(o.elasticTraining);
  CHECK_FALSE(o.launch.bindCoresToRank);
  CHECK_FALSE(o.launch.bindCoreList.has_value());
  CHECK_FALSE(o.sshPort.has_value());
  CHECK(o.launch.python == dsrun::launcher::defaultPython());  // launcher/python_interpreter.h
  CHECK_FALSE(o.dryRun);
  CHECK_FALSE(o.launch.tagOutput);
  CHECK(o.launch.stop.killGrace == dsrun::Seconds(30));
  CHECK_FALSE(o.launch.stop.exitTimeout.has_value());
  CHECK(o.agentPort == dsrun::launcher::kDefaultAgentPort);
  CHECK(o.userScript == "train.py");
  CHECK(o.userArgs.empty());
}

TEST_CASE("parseOptions accepts every flag in both --flag=value and --flag value forms", "[launcher][options]") {
  const bool equals = GENERATE(false, true);
  auto flag = [&](const std::string& name, const std::string& value) {
    return equals ? Args{"--" + name + "=" + value} : Args{"--" + name, value};
  };
  Args args;
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"hostfile", "hf"}, {"include", "a:0@b"}, {"num_nodes", "2"}, {"num_gpus", "3"},
           {"min_elastic_nodes", "1"}, {"max_elastic_nodes", "4"}, {"master_port", "1234"},
           {"master_addr", "10.0.0.1"}, {"node_rank", "1"}, {"launcher", "OpenMPI"},
           {"launcher_args", "-mca btl_tcp_if_include eth1"}, {"enable_each_rank_log", "/tmp/logs"},
           {"bind_core_list", "0-3"}, {"ssh_port", "2222"}, {"python", "/usr/bin/python3"},
           {"kill_grace_s", "2.5"}, {"exit_timeout_s", "10"}, {"agent_port", "4000"}, {"tls_dir", "/etc/dsrun"},
           {"ssh_config", "/root/.ssh/cfg"}}) {
    const Args words = flag(name, value);
    args.insert(args.end(), words.begin(), words.end());
  }
  for (const char* sw : {"--module", "--no_local_rank", "--no_ssh", "--no_ssh_check", "--force_multi",
                         "--save_pid", "--bind_cores_to_rank", "--dry_run", "--tag_output"}) {
    args.push_back(sw);
  }
  args.push_back("train.py");
  const Options o = parseOptions(args);
  CHECK(o.hostfile == "hf");
  CHECK(o.hostfileGiven);
  CHECK(o.include == "a:0@b");
  CHECK(o.numNodes == 2);
  CHECK(o.numGpus == 3);
  CHECK(o.minElasticNodes == 1);
  CHECK(o.maxElasticNodes == 4);
  CHECK(o.masterPort == 1234);
  CHECK(o.masterAddr == "10.0.0.1");
  CHECK(o.nodeRank == 1);
  CHECK(o.launcher == "openmpi");
  CHECK(o.launcherArgs == "-mca btl_tcp_if_include eth1");
  CHECK(o.launch.eachRankLogDir == "/tmp/logs");
  CHECK(o.launch.bindCoreList == std::optional<std::string>("0-3"));
  CHECK(o.sshPort == std::optional<int>(2222));
  CHECK(o.launch.python == "/usr/bin/python3");
  CHECK(o.launch.stop.killGrace == dsrun::Seconds(2.5));
  CHECK(o.launch.stop.exitTimeout == dsrun::Seconds(10));
  CHECK(o.agentPort == 4000);
  CHECK(o.tlsDir == "/etc/dsrun");
  CHECK(o.sshConfig == "/root/.ssh/cfg");
  CHECK(o.launch.module);
  CHECK(o.launch.noLocalRank);
  CHECK(o.noSsh);
  CHECK(o.noSshCheck);
  CHECK(o.forceMulti);
  CHECK(o.savePid);
  CHECK(o.launch.bindCoresToRank);
  CHECK(o.dryRun);
  CHECK(o.launch.tagOutput);
  CHECK(o.userScript == "train.py");
}

TEST_CASE("parseOptions reads short flags and aliases", "[launcher][options]") {
  const Options o = parseOptions({"-H", "hf", "-e", "w:1", "--num_accelerators", "2", "--no_python", "x"});
  CHECK(o.hostfile == "hf");
  CHECK(o.exclude == "w:1");
  CHECK(o.numGpus == 2);
  CHECK(o.launch.noPython);
  CHECK(parseOptions({"-iw:0", "x"}).include == "w:0");
}

TEST_CASE("parseOptions passes the script's arguments through untouched (argparse REMAINDER)", "[launcher][options]") {
  const Args tail = {"--num_gpus", "7", "-H", "other", "--", "--dry_run", "a b", "it's", "\"q\"", "$HOME",
                     "line1\nline2", "ünïcødé", "", "-"};
  Args args = {"--num_gpus", "2", "train.py"};
  args.insert(args.end(), tail.begin(), tail.end());
  const Options o = parseOptions(args);
  CHECK(o.numGpus == 2);
  CHECK(o.hostfile == "/job/hostfile");
  CHECK_FALSE(o.dryRun);
  CHECK(o.userScript == "train.py");
  CHECK(o.userArgs == tail);
}

TEST_CASE("parseOptions treats '--' as the end of dsrun's options", "[launcher][options]") {
  const Options o = parseOptions({"--dry_run", "--", "--weird-script", "--x"});
  CHECK(o.dryRun);
  CHECK(o.userScript == "--weird-script");
  CHECK(o.userArgs == Args{"--x"});
}

TEST_CASE("parseOptions takes a flag value that starts with a dash", "[launcher][options]") {
  // DeepSpeed test_multinode_runner.py passes '--launcher_arg' '-mca btl_tcp_if_include eth1'.
  auto [flag, value] = GENERATE(table<std::string, std::string>({
      {"--launcher_arg", "-mca btl_tcp_if_include eth1"},
      {"--launcher_args", "--mca btl_tcp_if_include eth1"},
      {"--launcher_args", "-x"},
  }));
  const Options o = parseOptions({flag, value, "test_launcher.py"});
  CHECK(o.launcherArgs == value);
  CHECK(o.userScript == "test_launcher.py");
}

TEST_CASE("parseOptions accepts unique prefixes of long flags, like argparse", "[launcher][options]") {
  CHECK(parseOptions({"--num_g", "3", "x"}).numGpus == 3);
  CHECK(parseOptions({"--force", "x"}).forceMulti);
}

TEST_CASE("parseOptions keeps the last value of a repeated flag, like argparse", "[launcher][options]") {
  CHECK(parseOptions({"--num_gpus", "1", "--num_accelerators", "4", "x"}).numGpus == 4);
  CHECK(parseOptions({"-i", "a", "-i", "b", "x"}).include == "b");
}

TEST_CASE("parseOptions lower-cases --launcher and treats 'None' as no per-rank log", "[launcher][options]") {
  CHECK(parseOptions({"--launcher", "SLURM", "x"}).launcher == "slurm");
  CHECK(parseOptions({"--enable_each_rank_log", "None", "x"}).launch.eachRankLogDir.empty());
}

TEST_CASE("parseOptions needs no script for --help, --version and --make_tls", "[launcher][options]") {
  CHECK(parseOptions({"--help"}).help);
  CHECK(parseOptions({"-h"}).help);
  CHECK(parseOptions({"--version"}).version);
  CHECK(parseOptions({"--make_tls", "/tmp/tls"}).makeTls == "/tmp/tls");
}

TEST_CASE("parseOptions reads the certificate commands without a script", "[launcher][options]") {
  const Options node = parseOptions(
      {"--make_node_cert", "/ca", "--host", "worker-1", "--addr", "10.0.0.11,fd00::11", "--addr", "10.1.0.11", "--out",
       "/n1"});
  CHECK(node.makeNodeCert == "/ca");
  CHECK(node.certHost == "worker-1");
  CHECK(node.certAddrs == std::vector<std::string>{"10.0.0.11", "fd00::11", "10.1.0.11"});
  CHECK(node.certOut == "/n1");
  const Options revoke = parseOptions({"--revoke_cert", "/ca", "--cert", "/ca/issued/w.pem"});
  CHECK(revoke.revokeCert == "/ca");
  CHECK(revoke.certFile == "/ca/issued/w.pem");
  CHECK(parseOptions({"--renew_launcher_cert", "/ca"}).renewLauncherCert == "/ca");
}

TEST_CASE("the certificate commands' flags are refused without their command", "[launcher][options]") {
  auto [args, expected] = GENERATE(table<Args, std::string>({
      {{"--host", "hf", "x"}, "--host: only with --make_node_cert (did you mean --hostfile?)"},
      {{"--addr", "10.0.0.1", "x"}, "--addr: only with --make_node_cert"},
      {{"--out", "d", "x"}, "--out: only with --make_node_cert"},
      {{"--cert", "c.pem", "x"}, "--cert: only with --revoke_cert"},
      {{"--make_node_cert", "/ca", "--out", "d"}, "--make_node_cert: needs --host NAME and --out NODEDIR"},
      {{"--make_node_cert", "/ca", "--host", "h"}, "--make_node_cert: needs --host NAME and --out NODEDIR"},
      {{"--revoke_cert", "/ca"}, "--revoke_cert: needs --cert FILE"},
  }));
  CAPTURE(args);
  REQUIRE_THROWS_AS(parseOptions(args), dsrun::ParseError);
  REQUIRE_THROWS_WITH(parseOptions(args), Contains(expected));
}

TEST_CASE("parseOptions errors name the flag and the bad value", "[launcher][options]") {
  auto [args, expected] = GENERATE(table<Args, std::string>({
      {Args{}, "command line: missing the user script"},
      {{"--dry_run"}, "command line: missing the user script"},
      {{"--num_gpus", "two", "x"}, "--num_gpus: expected an integer, got 'two'"},
      {{"--num_nodes=1.5", "x"}, "--num_nodes: expected an integer, got '1.5'"},
      {{"--master_port", "70000", "x"}, "--master_port: expected a port in [0, 65535], got '70000'"},
      {{"--ssh_port", "", "x"}, "--ssh_port: expected an integer, got ''"},
      {{"--launcher", "torchrun", "x"},
       "--launcher: unknown launcher 'torchrun' (choices: pdsh, openmpi, mpich, mvapich, impi, slurm, ssh, agent)"},
      {{"--autotuning", "maybe", "x"}, "--autotuning: expected 'tune' or 'run', got 'maybe'"},
      {{"--kill_grace_s", "-1", "x"}, "--kill_grace_s: expected a non-negative number, got '-1'"},
      {{"--kill_grace_s", "soon", "x"}, "--kill_grace_s: expected a number of seconds, got 'soon'"},
      {{"--agent_port", "0", "x"}, "--agent_port: expected a port in [1, 65535], got '0'"},
      {{"--bogus", "x"}, "command line: unrecognised option '--bogus'"},
      {{"--no", "x"}, "command line: option '--no' is ambiguous"},
      {{"--hostfile"}, "command line: the required argument for option '--hostfile' is missing"},
  }));
  CAPTURE(args);
  REQUIRE_THROWS_AS(parseOptions(args), dsrun::ParseError);
  REQUIRE_THROWS_WITH(parseOptions(args), Contains(expected));
  CHECK(dsrun::ParseError("s", 0, "w").exitCode() == 2);
}

TEST_CASE("parseOptions reads DeepSpeed's --venv_script, --comment, --account, --log_level and -q",
          "[launcher][options]") {
  Options o = parseOptions({"--venv_script", "/opt/venv/bin/activate", "--comment", "run 7", "--account=proj",
                            "--log_level", "warning", "x"});
  CHECK(o.venvScript == "/opt/venv/bin/activate");
  CHECK(o.comment == "run 7");
  CHECK(o.account == "proj");
  CHECK(o.logLevel == "warning");
  CHECK(parseOptions({"-q", "x"}).logLevel == "error");
  CHECK(parseOptions({"--quiet", "x"}).logLevel == "error");
  CHECK(parseOptions({"x"}).logLevel.empty());  // DSRUN_LOG_LEVEL decides
  REQUIRE_THROWS_WITH(parseOptions({"--log_level", "loud", "x"}),
                      Contains("--log_level: expected one of debug, info, warning, error, critical, got 'loud'"));
}

TEST_CASE("parseOptions accepts dashed spellings of long flags, as torchrun does, but not in the script's arguments",
          "[launcher][options]") {
  const Options o = parseOptions({"--num-gpus", "2", "--master-port=1234", "--no-local-rank", "--enable-each-rank-log",
                                  "a-b", "--launcher-args", "--mca btl-tcp", "train.py", "--num-gpus", "3"});
  CHECK(o.numGpus == 2);
  CHECK(o.masterPort == 1234);
  CHECK(o.launch.noLocalRank);
  CHECK(o.launch.eachRankLogDir == "a-b");     // values keep their dashes
  CHECK(o.launcherArgs == "--mca btl-tcp");
  CHECK(o.userScript == "train.py");
  CHECK(o.userArgs == Args{"--num-gpus", "3"});  // the script's own flags are untouched
}

TEST_CASE("an unknown flag's error suggests the closest known one", "[launcher][options]") {
  auto [flag, suggestion] = GENERATE(table<std::string, std::string>({
      {"--num_gpu_s", "did you mean --num_gpus?"},
      {"--hostfiel", "did you mean --hostfile?"},
      {"--enable_each_rank_logs", "did you mean --enable_each_rank_log?"},
      {"--nproc_per_nodes", ""},  // torchrun's name: too far from anything dsrun has
  }));
  CAPTURE(flag);
  REQUIRE_THROWS_WITH(parseOptions({flag, "x"}), Contains("unrecognised option '" + flag + "'"));
  if (suggestion.empty()) {
    REQUIRE_THROWS_WITH(parseOptions({flag, "x"}), !Contains("did you mean"));
  } else {
    REQUIRE_THROWS_WITH(parseOptions({flag, "x"}), Contains(suggestion));
  }
}

TEST_CASE("usageText lists DeepSpeed's flags and dsrun's own", "[launcher][options]") {
  const std::string usage = dsrun::launcher::usageText();
  for (const char* flag : {"--hostfile", "--include", "--exclude", "--num_nodes", "--num_gpus", "--num_accelerators",
                           "--master_port", "--master_addr", "--launcher", "--launcher_args", "--module",
                           "--no_python", "--no_local_rank", "--no_ssh", "--force_multi", "--save_pid",
                           "--enable_each_rank_log", "--bind_cores_to_rank", "--bind_core_list", "--ssh_port",
                           "--python", "--dry_run", "--tag_output", "--kill_grace_s", "--exit_timeout_s",
                           "--agent_port", "--tls_dir", "--ssh_config", "--make_tls", "--make_node_cert",
                           "--revoke_cert", "--renew_launcher_cert", "--mesh_probe", "--venv_script", "--comment",
                           "--account", "--log_level", "--quiet"}) {
    CAPTURE(flag);
    CHECK_THAT(usage, Contains(flag));
  }
}

TEST_CASE("the default interpreter is DSRUN_PYTHON when set, else the one dsrt was built for",
          "[launcher][options]") {
  const char* saved = std::getenv("DSRUN_PYTHON");
  const std::string restore = saved ? saved : "";
  setenv("DSRUN_PYTHON", "/opt/venv/bin/python", 1);
  CHECK(dsrun::launcher::defaultPython() == "/opt/venv/bin/python");
  CHECK(dsrun::launcher::Options{}.launch.python == "/opt/venv/bin/python");
  setenv("DSRUN_PYTHON", "", 1);
  CHECK(dsrun::launcher::defaultPython() == dsrun::launcher::builtInPython());
  unsetenv("DSRUN_PYTHON");
  CHECK(dsrun::launcher::defaultPython() == dsrun::launcher::builtInPython());
  CHECK_FALSE(dsrun::launcher::builtInPython().empty());
  if (saved) {
    setenv("DSRUN_PYTHON", restore.c_str(), 1);
  }
}

TEST_CASE("parseOptions runs the mesh probe unless --no_mesh_probe is given", "[launcher][options]") {
  CHECK(dsrun::launcher::parseOptions({"x.py"}).meshProbe);
  CHECK_FALSE(dsrun::launcher::parseOptions({"--launcher", "agent", "--no_mesh_probe", "x.py"}).meshProbe);
  // --mesh_probe (opt-in before it became the default) is still accepted; the last of the two wins.
  CHECK(dsrun::launcher::parseOptions({"--launcher", "agent", "--mesh_probe", "x.py"}).meshProbe);
  CHECK(dsrun::launcher::parseOptions({"--no_mesh_probe", "--mesh_probe", "x.py"}).meshProbe);
  CHECK_FALSE(dsrun::launcher::parseOptions({"--mesh_probe", "--no_mesh_probe", "x.py"}).meshProbe);
}

TEST_CASE("The tree width (--tree_width) is auto unless given; 1 and negative widths are refused", "[launcher][options]") {
  CHECK(dsrun::launcher::parseOptions({"x.py"}).treeWidth == dsrun::launcher::kTreeWidthAuto);
  CHECK(dsrun::launcher::parseOptions({"--tree_width", "16", "--tree_width", "auto", "x.py"}).treeWidth ==
        dsrun::launcher::kTreeWidthAuto);
  CHECK(dsrun::launcher::parseOptions({"--tree_width", "16", "x.py"}).treeWidth == 16);
  CHECK(dsrun::launcher::parseOptions({"--tree-width=2", "x.py"}).treeWidth == 2);
  CHECK(dsrun::launcher::parseOptions({"--tree_width", "0", "x.py"}).treeWidth == 0);
  CHECK_THROWS_WITH(dsrun::launcher::parseOptions({"--tree_width", "1", "x.py"}),
                    "--tree_width: expected auto, 0 (no tree) or a width of at least 2, got '1'");
  CHECK_THROWS_WITH(dsrun::launcher::parseOptions({"--tree_width", "-4", "x.py"}),
                    "--tree_width: expected auto, 0 (no tree) or a width of at least 2, got '-4'");
  CHECK_THROWS_WITH(dsrun::launcher::parseOptions({"--tree_width", "wide", "x.py"}), "--tree_width: expected an integer, got 'wide'");
}

TEST_CASE("launchSettings completes options.launch with the job id and, with --save_pid, dsrun's pid",
          "[launcher][options]") {
  const dsrun::launcher::Options o =
      dsrun::launcher::parseOptions({"--save_pid", "--tag_output", "--kill_grace_s", "3", "x.py"});
  CHECK(o.launch.savePid == 0);  // only the running dsrun knows its pid
  CHECK(o.launch.jobId.empty());
  const dsrun::launcher::RankLaunchSettings s = dsrun::launcher::launchSettings(o, "job-9", 4242);
  CHECK(s.jobId == "job-9");
  CHECK(s.savePid == 4242);
  dsrun::launcher::RankLaunchSettings expected = o.launch;
  expected.jobId = "job-9";
  expected.savePid = 4242;
  CHECK(s == expected);
  CHECK(dsrun::launcher::launchSettings(dsrun::launcher::parseOptions({"x.py"}), "j", 4242).savePid == 0);
}

TEST_CASE("the rendezvous is 'store' (rank 0's TCPStore) unless 'agent' is given; anything else is refused",
          "[launcher][options]") {
  CHECK_FALSE(dsrun::launcher::parseOptions({"x.py"}).agentRendezvous);
  CHECK(dsrun::launcher::parseOptions({"--rendezvous", "agent", "x.py"}).agentRendezvous);
  CHECK_FALSE(dsrun::launcher::parseOptions({"--rendezvous=store", "x.py"}).agentRendezvous);
  CHECK_THROWS_WITH(dsrun::launcher::parseOptions({"--rendezvous", "tree", "x.py"}),
                    "--rendezvous: expected 'store' or 'agent', got 'tree'");
}
