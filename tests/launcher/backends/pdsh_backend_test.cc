#include <catch2/catch.hpp>

#include <csignal>

#include "common/error.h"
#include "common/exit_status.h"
#include "common/strings.h"
#include "launcher/backends/node_launch_command.h"
#include "launcher/backends/command/pdsh_backend.h"
#include "launcher/backends/shell_words.h"
#include "plan_fixture.h"

using dsrun::launcher::PdshBackend;
using dsrun::launcher::test::fakeSite;
using dsrun::launcher::test::kTwoWorkers;
using dsrun::launcher::test::makePlan;
using Words = std::vector<std::string>;

namespace {

// What the remote shell receives from pdsh for node `node`: pdsh expands %n and %% in its command.
std::string asPdshSends(const Words& words, int node) {
  std::string line = dsrun::join(words, " "), out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '%' && i + 1 < line.size() && line[i + 1] == '%') {
      out += '%';
      ++i;
    } else if (line[i] == '%' && i + 1 < line.size() && line[i + 1] == 'n') {
      out += std::to_string(node);
      ++i;
    } else {
      out += line[i];
    }
  }
  return out;
}

}  // namespace

TEST_CASE("pdsh builds DeepSpeed's command with dsrun-launch and quoted words", "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"--no_python", "/bin/echo", "a b", "$x%n"}, {{"NCCL_DEBUG", "IN FO"}});
  PdshBackend pdsh(fakeSite());
  const dsrun::Command c = pdsh.buildCommand(f->plan, *f->ctx);
  // torchrun's job-wide variables travel as exports, as DeepSpeed's exported variables do
  CHECK(c.argv == Words{"pdsh", "-S", "-f", "1024", "-w", "worker-0,worker-1", "export DSRUN_MAX_RESTARTS=0;",
                        "export DSRUN_RESTART_COUNT=0;", "export NCCL_DEBUG='IN FO';", "export PYTHONPATH=/work/job;",
                        "export TORCHELASTIC_MAX_RESTARTS=0;", "export TORCHELASTIC_RESTART_COUNT=0;",
                        "export TORCHELASTIC_RUN_ID=job-1;", "cd /work/job;", "/opt/dsrun/bin/dsrun-launch",
                        "--world_info=eyJ3b3JrZXItMCI6IFswLCAxLCAyLCAzXSwgIndvcmtlci0xIjogWzAsIDEsIDIsIDNdfQ==",
                        "--node_rank=%n", "--master_addr=10.0.0.1", "--master_port=29500", "--no_python",
                        "--job_id=job-1", "--kill_grace_s=30", "/bin/echo", "'a b'", "'$x%%n'"});
  CHECK(c.env.at("PDSH_RCMD_TYPE") == "ssh");
  CHECK(c.env.count("PDSH_SSH_ARGS_APPEND") == 0);
}

TEST_CASE("pdsh delivers argv and exported values byte for byte through the remote shell", "[launcher][backends]") {
  const std::string nasty = "it's \"$HOME\" `x` \\ %h %n 100%\nline2 \xc3\xbcnic\xc3\xb8" "de ;|&";
  auto f = makePlan(kTwoWorkers, {"--no_python", "/bin/prog", nasty, "", "--flag=a b"}, {{"PYTHONX", nasty}});
  PdshBackend pdsh(fakeSite());
  const Words argv = pdsh.buildCommand(f->plan, *f->ctx).argv;
  const Words remote(argv.begin() + 6, argv.end());
  // The remote line, as the shell word-splits it (shlex.split follows POSIX quoting for these forms).
  const Words words = dsrun::launcher::shellSplit(asPdshSends(remote, 1), "remote line");
  const Words expected = dsrun::launcher::nodeLaunchArgv(fakeSite().node, f->plan, f->options, 777, "1", false);
  REQUIRE(words.size() >= expected.size());
  CHECK(Words(words.end() - static_cast<long>(expected.size()), words.end()) == expected);
  CHECK(std::find(words.begin(), words.end(), "PYTHONX=" + nasty + ";") != words.end());
}

TEST_CASE("pdsh adds -p for --ssh_port to PDSH_SSH_ARGS_APPEND and passes launcher args", "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"--ssh_port", "2222", "--launcher_args", "-R ssh -u 5", "x.py"},
                    {{"PDSH_SSH_ARGS_APPEND", "-F /etc/cfg"}});
  PdshBackend pdsh(fakeSite());
  const dsrun::Command c = pdsh.buildCommand(f->plan, *f->ctx);
  CHECK(c.env.at("PDSH_SSH_ARGS_APPEND") == "-F /etc/cfg -p 2222");
  CHECK(Words(c.argv.begin(), c.argv.begin() + 10) ==
        Words{"pdsh", "-S", "-f", "1024", "-w", "worker-0,worker-1", "-R", "ssh", "-u", "5"});
  CHECK(pdsh.sshCheck(f->plan, *f->ctx).argv == Words{"ssh", "-o", "PasswordAuthentication=no", "-o", "BatchMode=yes",
                                                      "-F", "/etc/cfg", "-p", "2222", "worker-0", "hostname"});
}

TEST_CASE("pdsh's kill command stops the job by its id on every host", "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"--kill_grace_s", "5", "x.py"});
  PdshBackend pdsh(fakeSite());
  const std::optional<dsrun::Command> kill = pdsh.killCommand(f->plan, *f->ctx);
  REQUIRE(kill);
  CHECK(kill->argv == Words{"pdsh", "-S", "-f", "1024", "-w", "worker-0,worker-1", "/opt/dsrun/bin/dsrun-launch",
                            "--kill", "--job_id=job-1", "--kill_grace_s=5"});
}

TEST_CASE("pdsh's signal command passes the signals, in order, to the job's launchers on every host",
          "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"x.py"});
  PdshBackend pdsh(fakeSite());
  const std::optional<dsrun::Command> signal = pdsh.signalCommand(f->plan, *f->ctx, {SIGUSR1, SIGUSR2, SIGUSR1, SIGINT});
  REQUIRE(signal);
  CHECK(signal->argv == Words{"pdsh", "-S", "-f", "1024", "-w", "worker-0,worker-1", "/opt/dsrun/bin/dsrun-launch",
                              "--signal=USR1,USR2,USR1,INT", "--job_id=job-1"});
  CHECK(signal->env.at("PDSH_RCMD_TYPE") == "ssh");
}

TEST_CASE("pdsh's ssh check failure says what to fix", "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"x.py"});
  dsrun::Command seen;
  PdshBackend pdsh(fakeSite(), [&](const dsrun::Command& c) {
    seen = c;
    return dsrun::launcher::CapturedRun{255 << 8, "root@worker-0: Permission denied (publickey).\n"};
  });
  const dsrun::Command check = pdsh.sshCheck(f->plan, *f->ctx);
  REQUIRE_THROWS_WITH(dsrun::launcher::checkPasswordlessSsh("worker-0", check, "/job/hostfile", "PDSH_SSH_ARGS_APPEND",
                                                  [&](const dsrun::Command& c) {
                                                    seen = c;
                                                    return dsrun::launcher::CapturedRun{255 << 8, "Permission denied (publickey).\n"};
                                                  }),
                      Catch::Contains("passwordless ssh to 'worker-0' failed") &&
                          Catch::Contains("exited with code 255: Permission denied (publickey).") &&
                          Catch::Contains("PDSH_SSH_ARGS_APPEND") && Catch::Contains("--no_ssh_check"));
  CHECK(seen.argv.back() == "hostname");
}

TEST_CASE("the ssh check of a --force_multi job without a hostfile blames no hostfile", "[launcher][backends]") {
  const dsrun::Command check{{"ssh", "localhost", "hostname"}, {}, ""};
  const auto refused = [](const dsrun::Command&) {
    return dsrun::launcher::CapturedRun{255 << 8, "Connection refused\n"};
  };
  REQUIRE_THROWS_WITH(dsrun::launcher::checkPasswordlessSsh("localhost", check, "", "PDSH_SSH_ARGS_APPEND", refused),
                      Catch::Contains("host 'localhost' (local mode: no hostfile) must accept") &&
                          Catch::Contains("to run on this machine drop --force_multi") &&
                          !Catch::Contains("/job/hostfile") && !Catch::Contains("remove the hostfile"));
  REQUIRE_THROWS_WITH(
      dsrun::launcher::checkPasswordlessSsh("worker-0", check, "hosts", "PDSH_SSH_ARGS_APPEND", refused),
      Catch::Contains("host 'worker-0' of hosts must accept") &&
          Catch::Contains("for a single node remove the hostfile"));
}

TEST_CASE("pdsh is unavailable without pdsh in PATH", "[launcher][backends]") {
  CHECK(PdshBackend(fakeSite({"pdsh"})).unavailableReason() == std::string("'pdsh' not found in PATH"));
  CHECK_FALSE(PdshBackend(fakeSite()).unavailableReason());
}

TEST_CASE("remoteShellWords refuses a variable name a shell cannot export", "[launcher][backends]") {
  REQUIRE_THROWS_WITH(dsrun::launcher::remoteShellWords({{"NCCL-X", "1"}}, "/", {"a"}), Catch::Contains("'NCCL-X'"));
}
