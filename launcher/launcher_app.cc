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

namespace dsrun {

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
void preflightMasterPort(const Options& options, WorldPlan& plan, Machine& machine) {
  if (options.noSsh && plan.localNode != 0) {
    if (plan.masterPort == 0) throw ConfigError("--master_port 0 needs the master host: pass the port it printed");
    return;  // the master is another host; its own dsrun checks the port
  }
  if (plan.masterPort != 0) {
    machine.checkPortBindable(plan.masterPort);
    return;
  }
  plan.masterPort = machine.pickFreePort();
  for (PlannedRank& rank : plan.ranks) rank.env[kEnvMasterPort] = std::to_string(plan.masterPort);
  DSRUN_LOG(INFO) << "--master_port 0: MASTER_PORT=" << plan.masterPort;
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
  if (!options.venvScript.empty() && plan.launcher != "pdsh" && plan.launcher != "ssh") {
    notes.push_back(strCat("--venv_script is sourced on the nodes of pdsh and ssh launches only (as DeepSpeed's pdsh "
                           "runner); ignored with launcher ", plan.launcher));
  }
  return notes;
}

// What --dry_run shows for a MASTER_ADDR that only a launch learns: how it would be found, never an address.
std::string inferredMasterAddr(const Options& options, const std::string& host) {
  if (!options.noSsh && options.launcher == "agent") {
    return strCat("<inferred at launch: the address the agent on ", host, " answers on>");
  }
  return strCat("<inferred at launch: the first address of 'hostname -I' on ", host, ">");
}

// MASTER_ADDR from plan.masterAddrHost, as DeepSpeed infers it: the backend checks it can reach that host
// first (so the first error is about reaching it, DeepSpeed's order), then says where the address comes from.
void inferMasterAddr(WorldPlan& plan, LaunchContext& ctx, const BackendRegistry& registry, Machine& machine) {
  MasterAddrSource source;
  if (!ctx.options.noSsh) {
    source = registry.create(ctx.options.launcher)->preflightFirstHost(plan.masterAddrHost, ctx);
    ctx.firstHostChecked = true;
  }
  switch (source.kind) {
    case MasterAddrSource::Kind::Known: setMasterAddr(plan, source.address); break;
    case MasterAddrSource::Kind::FromAgent: setMasterAddr(plan, ""); break;  // the agent's Welcome tells it
    case MasterAddrSource::Kind::Ssh:
      // The same ssh settings the backend and its passwordless-ssh check use (PDSH_SSH_ARGS_APPEND, --ssh_config).
      setMasterAddr(plan, machine.resolveMasterAddr(plan.masterAddrHost, sshOptionsFor(ctx.options, ctx.launcherEnv)));
      break;
  }
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
  // The master address of a multi-node job costs an ssh round trip: refuse an unusable backend first.
  auto checkBackend = [&](const std::string& name) {
    const std::unique_ptr<Backend> backend = registry.create(name);
    if (std::optional<std::string> reason = backend->unavailableReason()) {
      throw BackendUnavailable(std::string(backend->name()), *reason, backend->unavailableHint());
    }
  };
  LaunchContext ctx{options, inputs.launcherEnv, machine.pid()};
  // Planned first with a placeholder for an inferred MASTER_ADDR: a dry run contacts no host, and a launch
  // checks that every host has an address before asking the first one for its own.
  WorldPlan plan = planWorld(options, inputs, [&](const std::string& host) { return inferredMasterAddr(options, host); });
  for (const std::string& note : plan.notes) DSRUN_LOG(INFO) << note;
  for (const std::string& note : ignoredBackendFlags(options, plan)) DSRUN_LOG(WARN) << note;
  checkHostsResolve(plan, options, inputs.hostfile ? &*inputs.hostfile : nullptr, inputs.launcherEnv, machine);

  const std::unique_ptr<Backend> backend = registry.create(plan.launcher);
  if (options.dryRun) {
    const std::string json = dryRunJson(plan, backend->nodeCommands(plan, ctx));
    out << json << "\n" << std::flush;
    return 0;
  }
  if (!plan.masterAddrHost.empty()) {
    if (!options.noSsh) checkBackend(options.launcher);
    inferMasterAddr(plan, ctx, registry, machine);
  }
  checkBackend(plan.launcher);
  if (plan.launcher == "local") {
    preflightMasterPort(options, plan, machine);
  } else if (plan.masterPort == 0 && plan.launcher != "agent") {
    // The agent backend asks the first host's agent to pick it (launcher/backends/agent/agent_port_preflight.h).
    throw ConfigError(strCat("--master_port 0 picks a free port on the master host, which only the local and "
                             "agent backends can do; got --launcher ", plan.launcher,
                             "\n  hint: pass a fixed --master_port"));
  }
  if (plan.elastic) return backend->run(plan, ctx);  // the elastic controller restarts on its own terms
  return runWithRestarts(
      plan, options, [&](const WorldPlan& attempt) { return backend->run(attempt, ctx); },
      [](const std::string& line) { std::cerr << line << "\n" << std::flush; });
}

}  // namespace dsrun
