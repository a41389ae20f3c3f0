#include "launcher/launcher_app.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <iostream>
#include <memory>
#include <optional>

#include "common/env_contract.h"
#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/ssh_check.h"
#include "launcher/dry_run.h"
#include "launcher/host_lookup.h"
#include "launcher/hostfile.h"
#include "launcher/job_id.h"
#include "launcher/restart_loop.h"
#include "tls/tls_directory.h"

#ifndef DSRUN_VERSION
#define DSRUN_VERSION "unknown"
#endif

namespace dsrun::launcher {

PlanInputs gatherPlanInputs(const Options& options, const Machine& machine) {
  PlanInputs inputs;
  std::optional<std::string> text;
  try {
    text = machine.readFile(options.hostfile);
  } catch (const IoError& e) {
    // A hostfile named on the command line that cannot be read is bad input (exit 2, docs/launcher.md), as a
    // missing one is; an unreadable default /job/hostfile is the machine's problem and stays an I/O error.
    if (options.hostfileGiven) throw ConfigError(strCat(e.what(), " (the hostfile given with -H/--hostfile)"));
    throw;
  }
  if (text) {
    inputs.hostfile = parseHostfile(*text, options.hostfile);
  } else if (options.hostfileGiven) {
    throw ConfigError(strCat(options.hostfile, ": open: ", std::strerror(ENOENT),
                             " (reading the hostfile given with -H/--hostfile)"));
  }
  inputs.launcherEnv = machine.environment();
  inputs.cwd = machine.currentDir();
  for (const std::string& path : envFilePaths(inputs.launcherEnv, machine.homeDir(), inputs.cwd)) {
    if (std::optional<std::string> env = machine.readFile(path)) inputs.envFiles.push_back(EnvFile{path, *env});
  }
  inputs.gpuCount = machine.gpuCount();
  inputs.physicalCores = machine.physicalCoreCount();
  inputs.jobId = makeJobId(machine.pid());
  return inputs;
}

namespace {

// Local backend, before any rank starts: MASTER_PORT must be bindable here, or --master_port 0 picks one.
// Returns the port the ranks get.
int preflightLocalMasterPort(const Options& options, const WorldPlan& draft, Machine& machine) {
  if (options.noSsh && draft.localNode != 0) {
    if (draft.masterPort == 0) throw ConfigError("--master_port 0 needs the master host: pass the port it printed");
    return draft.masterPort;  // the master is another host; its own dsrun checks the port
  }
  if (draft.masterPort != 0) {
    machine.checkPortBindable(draft.masterPort);
    return draft.masterPort;
  }
  const int port = machine.pickFreePort();
  DSRUN_LOG(INFO) << "--master_port 0: MASTER_PORT=" << port;
  return port;
}

// DeepSpeed's --log_level names onto dsrun's levels (critical is as quiet as dsrun gets: errors only).
void applyLogLevel(const Options& options) {
  if (options.logLevel.empty()) return;
  static const std::map<std::string, LogLevel> levels = {{"debug", LogLevel::DEBUG},  {"info", LogLevel::INFO},
                                                         {"warning", LogLevel::WARN}, {"error", LogLevel::ERROR},
                                                         {"critical", LogLevel::ERROR}};
  setLogLevel(levels.at(options.logLevel));
}

// DeepSpeed passes --comment and --account to srun only, and sources --venv_script in its pdsh runner only;
// the other backends have nowhere to put them.
std::vector<std::string> ignoredBackendFlags(const Options& options, const WorldPlan& plan) {
  std::vector<std::string> notes;
  if (plan.launcher == "slurm") return notes;
  for (const auto& [flag, value] : {std::pair{"--comment", &options.comment}, std::pair{"--account", &options.account}}) {
    if (!value->empty()) notes.push_back(strCat(flag, " is passed to srun (--launcher slurm) only; ignored with launcher ",
                                                plan.launcher));
  }
  if (options.agentRendezvous && plan.launcher != "agent") {
    notes.push_back(strCat("--rendezvous agent needs the agent backend's agents; ignored with launcher ", plan.launcher,
                           ": rank 0 hosts the store"));
  }
  if (options.treeWidth > 0 && plan.launcher != "agent") {
    notes.push_back(strCat("--tree_width shapes the agent backend's launch only; ignored with launcher ", plan.launcher));
  }
  if (!options.venvScript.empty() && plan.launcher != "pdsh" && plan.launcher != "ssh") {
    notes.push_back(strCat("--venv_script is sourced on the nodes of pdsh and ssh launches only (as DeepSpeed's pdsh "
                           "runner); ignored with launcher ", plan.launcher));
  }
  return notes;
}

void throwIfUnavailable(const Backend& backend) {
  if (std::optional<std::string> reason = backend.unavailableReason()) {
    throw BackendUnavailable(std::string(backend.name()), *reason, backend.unavailableHint());
  }
}

// What a launch learns before the ranks are planned, in DeepSpeed's order: the backend checks it can reach
// the first host (so the first error is about reaching it), then MASTER_ADDR is inferred from that host
// (the backend's answer, or `ssh HOST hostname -I`) and MASTER_PORT is checked where rank 0 will bind it.
Rendezvous learnRendezvous(const WorldPlan& draft, Backend& backend, LaunchContext& ctx, Machine& machine) {
  Rendezvous out;
  LaunchPreparation prepared;
  if (draft.multiNode) {
    prepared = backend.prepareLaunch(draft, ctx);
    ctx.firstHostChecked = !draft.masterAddrHost.empty();
  }
  if (!draft.masterAddrHost.empty()) {
    // The same ssh settings the backend and its passwordless-ssh check use (PDSH_SSH_ARGS_APPEND, --ssh_config).
    out.inferredAddr = !prepared.masterAddr.empty()
                           ? prepared.masterAddr
                           : machine.resolveMasterAddr(draft.masterAddrHost, sshOptionsFor(ctx.options, ctx.launcherEnv));
  }
  out.masterPort = draft.launcher == "local" ? preflightLocalMasterPort(ctx.options, draft, machine) : prepared.masterPort;
  return out;
}

}  // namespace

int runDsrun(const std::vector<std::string>& args, Machine& machine, const BackendRegistry& registry,
             std::ostream& out) {
  const Options options = parseOptions(args);
  if (options.help) {
    out << usageText();
    return 0;
  }
  if (options.version) {
    out << "dsrun " << DSRUN_VERSION << "\n";
    return 0;
  }
  if (!options.makeTls.empty()) {
    tls::makeTlsDirectory(options.makeTls);
    out << "dsrun: created TLS directory " << options.makeTls
        << " (the cluster CA, the launcher's certificate and an empty revocation list); keep it on this machine, "
           "pass it to dsrun as --tls_dir, and give each host its own with 'dsrun --make_node_cert "
        << options.makeTls << " --host NAME --out NODEDIR'\n";
    return 0;
  }
  if (!options.makeNodeCert.empty()) {
    const std::string cert =
        tls::makeNodeDirectory(options.makeNodeCert, options.certHost, options.certAddrs, options.certOut);
    out << "dsrun: issued " << cert << " into " << options.certOut << "; copy that directory to "
        << options.certHost << " and start 'dsrun-agent --tls_dir DIR' there\n";
    return 0;
  }
  if (!options.revokeCert.empty()) {
    const tls::Revocation r = tls::revokeCertificate(options.revokeCert, options.certFile);
    out << "dsrun: " << (r.alreadyRevoked ? "already revoked: " : "revoked ") << r.certificate << "; "
        << tls::tlsFiles(options.revokeCert).crl << " lists " << r.listed
        << " certificate(s): copy it into every node's TLS directory (agents load it at their next connection)\n";
    return 0;
  }
  if (!options.renewLauncherCert.empty()) {
    const tls::Renewal r = tls::renewLauncherCertificate(options.renewLauncherCert);
    out << "dsrun: revoked " << r.old.certificate << " and issued " << r.certificate << " in "
        << options.renewLauncherCert << "; copy " << tls::tlsFiles(options.renewLauncherCert).crl
        << " into every node's TLS directory\n";
    return 0;
  }

  applyLogLevel(options);
  const PlanInputs inputs = gatherPlanInputs(options, machine);
  LaunchContext ctx{options, inputs.launcherEnv, machine.pid()};
  // The plan a dry run prints: nothing learned from any host, an inferred MASTER_ADDR shown as where it would
  // come from. A launch checks that every host has an address before asking the first one anything; its
  // draft only learns the rendezvous, so its ranks are not planned (~0.4 s of CPU at 80,000 ranks).
  const WorldPlan draft =
      planWorld(options, inputs, Rendezvous{}, options.dryRun ? RankDetail::Commands : RankDetail::None);
  for (const std::string& note : draft.notes) DSRUN_LOG(INFO) << note;
  for (const std::string& note : ignoredBackendFlags(options, draft)) DSRUN_LOG(WARN) << note;
  checkHostsResolve(draft, options, inputs.hostfile ? &*inputs.hostfile : nullptr, inputs.launcherEnv, machine);

  const std::unique_ptr<Backend> backend = registry.create(draft.launcher);  // the launch's one backend
  if (options.dryRun) {
    const std::string json = dryRunJson(draft, backend->nodeCommands(draft, ctx), backend->dryRunSections(draft, ctx));
    out << json << "\n" << std::flush;
    return 0;
  }
  // Learning the rendezvous of a multi-node job costs a round trip: refuse an unusable backend first.
  throwIfUnavailable(*backend);
  if (draft.masterPort == 0 && draft.launcher != "local" && draft.launcher != "agent") {
    // The agent backend asks the first host's agent to pick it (launcher/backends/agent/agent_port_preflight.h).
    throw ConfigError(strCat("--master_port 0 picks a free port on the master host, which only the local and "
                             "agent backends can do; got --launcher ", draft.launcher,
                             "\n  hint: pass a fixed --master_port"));
  }
  // The same planner with what the launch learned: what the ranks get, never patched afterwards.
  const Rendezvous rendezvous = learnRendezvous(draft, *backend, ctx, machine);
  const WorldPlan plan = planWorld(options, inputs, rendezvous, backend->rankDetail(draft, ctx));
  if (plan.elastic) return backend->run(plan, ctx);  // the elastic controller restarts on its own terms
  return runWithRestarts(
      plan, options, [&](const WorldPlan& attempt) { return backend->run(attempt, ctx); },
      [](const std::string& line) { std::cerr << line << "\n" << std::flush; });
}

}  // namespace dsrun::launcher
