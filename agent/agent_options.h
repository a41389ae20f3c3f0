#pragma once
// Command line of `dsrun-agent`:
//   dsrun-agent --listen ADDR:PORT --tls_dir DIR [--log_dir DIR] [--heartbeat_timeout_s S] [--kill_grace_s S]

#include <string>

namespace dsrun::agent {

struct AgentOptions {
  std::string listenAddress = "127.0.0.1";  ///< IP literal; 0.0.0.0 / :: only when asked for
  int port = 29600;                         ///< proto::kDefaultAgentPort unless given
  std::string tlsDir;                       ///< required: ca.pem, cert.pem, key.pem
  std::string logDir;                       ///< agent log file dir + base of relative each-rank logs
  double heartbeatTimeoutS = 10;            ///< a launcher silent this long is lost (its jobs stopped)
  double killGraceS = 30;                   ///< SIGTERM -> SIGKILL delay when stopping ranks
  bool help = false;                        ///< --help was given
  /// Hidden, for tests only (tests/agent/tree_agents_test.cc): admit tree launches and then do nothing with
  /// them (neither acknowledge, forward nor start), as a straggler that welcomed its parent and hung would.
  bool testHoldTreeLaunches = false;
};

/// Parses argv (argv[0] skipped). Throws ParseError "--flag: what, got 'x'" for bad values.
AgentOptions parseAgentOptions(int argc, const char* const* argv);

/// Splits "ADDR:PORT" / "[V6]:PORT" / "PORT" into address and port; "localhost" becomes 127.0.0.1.
/// Throws ParseError naming `flag`.
void parseListenAddress(const std::string& text, const std::string& flag, std::string& address, int& port);

/// The --help text.
std::string agentUsage();

}  // namespace dsrun::agent
