// dsrun-agent: the per-node daemon that starts ranks for authenticated dsrun launchers.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

#include "agent/agent_options.h"
#include "agent/agent_server.h"
#include "common/error.h"
#include "common/logging.h"
#include "supervision/posix_spawner.h"
#include "tls/ssl_context.h"

namespace {

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

/// Sends the agent's own log (stderr) to <dir>/dsrun-agent.log, appending.
void redirectLog(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    throw dsrun::IoError("", "mkdir", errno, dsrun::strCat("creating --log_dir ", dir));
  }
  const std::string path = dir + "/dsrun-agent.log";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw dsrun::IoError("", "open", errno, dsrun::strCat("opening the agent log ", path));
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
}

int run(int argc, char** argv) {
  using namespace dsrun::agent;
  AgentOptions options = parseAgentOptions(argc, argv);
  if (options.help) {
    std::cout << agentUsage();
    return 0;
  }
  const std::string host = hostName();
  dsrun::setLogIdentity("dsrun-agent", host);
  if (!options.logDir.empty()) redirectLog(options.logDir);
  auto ssl = dsrun::tls::makeSslContext(options.tlsDir, dsrun::tls::Role::Server);

  boost::asio::io_context io(1);
  dsrun::PosixSpawner spawner;
  AgentServer::Options serverOptions;
  serverOptions.listen = {boost::asio::ip::make_address(options.listenAddress),
                          static_cast<unsigned short>(options.port)};
  serverOptions.hostName = host;
  serverOptions.logDir = options.logDir;
  serverOptions.tlsDir = options.tlsDir;
  serverOptions.testHoldTreeLaunches = options.testHoldTreeLaunches;
  serverOptions.heartbeatTimeout = millis(options.heartbeatTimeoutS);
  serverOptions.killGrace = millis(options.killGraceS);
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) serverOptions.baseEnv.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  AgentServer server(io, serverOptions, std::move(ssl), spawner);
  server.start();
  io.run();
  DSRUN_LOG(INFO) << "stopped";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const dsrun::Error& e) {
    std::cerr << "dsrun-agent: " << e.what() << "\n";
    return e.exitCode();
  } catch (const std::exception& e) {
    std::cerr << "dsrun-agent: internal error: " << e.what() << "\n";
    return 70;
  }
}
