#include "agent/agent_options.h"

#include <boost/asio/ip/address.hpp>
#include <boost/program_options.hpp>
#include <cmath>

#include "common/error.h"
#include "proto/protocol.h"

namespace dsrun::agent {
namespace po = boost::program_options;

namespace {

po::options_description describe() {
  po::options_description d("dsrun-agent options");
  d.add_options()("listen", po::value<std::string>(),
                  "ADDR:PORT to listen on (default 127.0.0.1:29600; 0.0.0.0:PORT listens on every interface)")(
      "tls_dir", po::value<std::string>(), "this node's TLS directory, made by 'dsrun --make_node_cert' (required)")(
      "log_dir", po::value<std::string>(),
      "write the agent's log to DIR/dsrun-agent.log; relative each-rank log dirs are resolved under DIR")(
      "heartbeat_timeout_s", po::value<double>(),
      "stop a launcher's jobs after this many seconds without a message from it (default 10)")(
      "kill_grace_s", po::value<double>(), "seconds between SIGTERM and SIGKILL when stopping ranks (default 30)")(
      "help,h", "show this help");
  return d;
}

/// Not in --help: a test's way to make this agent a straggler (AgentOptions::testHoldTreeLaunches).
po::options_description hidden() {
  po::options_description d;
  d.add_options()("test_hold_tree_launches", "admit tree launches and then ignore them (tests only)");
  return d;
}

double seconds(const po::variables_map& vm, const char* flag, double min, double max) {
  const double v = vm[flag].as<double>();
  if (!std::isfinite(v) || v < min || (v <= 0 && min > 0) || v > max) {
    throw ParseError(strCat("--", flag), 0,
                     strCat("expected seconds in ", min > 0 ? "(0" : "[0", ", ", max, "], got '", v, "'"));
  }
  return v;
}

}  // namespace

std::string agentUsage() {
  std::ostringstream out;
  out << "usage: dsrun-agent --listen ADDR:PORT --tls_dir DIR [--log_dir DIR] [--heartbeat_timeout_s S] "
         "[--kill_grace_s S]\n\n"
      << describe();
  return out.str();
}

void parseListenAddress(const std::string& text, const std::string& flag, std::string& address, int& port) {
  std::string host = text;
  std::string portText;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      throw ParseError(flag, 0, strCat("expected '[IPV6]:PORT', got '", text, "'"));
    }
    host = text.substr(1, close - 1);
    portText = text.substr(close + 2);
  } else if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    host = text.substr(0, colon);
    portText = text.substr(colon + 1);
  } else {
    host = "";
    portText = text;
  }
  long long p = 0;
  if (!parseInt(portText, p) || p < 0 || p > 65535) {
    throw ParseError(flag, 0, strCat("expected ADDR:PORT with a port in 0..65535, got '", text, "'"));
  }
  if (host.empty()) host = "127.0.0.1";  // never every interface unless asked explicitly
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  if (ec) {
    throw ParseError(flag, 0, strCat("expected an IP address such as 127.0.0.1, 10.0.0.5 or 0.0.0.0, got '", host, "'"));
  }
  address = host;
  port = static_cast<int>(p);
}

AgentOptions parseAgentOptions(int argc, const char* const* argv) {
  po::variables_map vm;
  try {
    po::options_description all;
    all.add(describe()).add(hidden());
    po::store(po::command_line_parser(argc, argv).options(all).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ParseError("dsrun-agent", 0, strCat(e.what(), "\n  hint: dsrun-agent --help"));
  }
  AgentOptions o;
  o.port = proto::kDefaultAgentPort;
  if (vm.count("help")) {
    o.help = true;
    return o;
  }
  if (vm.count("listen")) parseListenAddress(vm["listen"].as<std::string>(), "--listen", o.listenAddress, o.port);
  if (!vm.count("tls_dir")) {
    throw ParseError("dsrun-agent", 0,
                     "--tls_dir is required\n  hint: on the launch machine, 'dsrun --make_tls DIR' once, then 'dsrun "
                     "--make_node_cert DIR --host NAME --out NODEDIR' for this node; copy NODEDIR here");
  }
  o.tlsDir = vm["tls_dir"].as<std::string>();
  o.testHoldTreeLaunches = vm.count("test_hold_tree_launches") > 0;
  if (vm.count("log_dir")) o.logDir = vm["log_dir"].as<std::string>();
  if (vm.count("heartbeat_timeout_s")) o.heartbeatTimeoutS = seconds(vm, "heartbeat_timeout_s", 0.001, 86400);
  if (vm.count("kill_grace_s")) o.killGraceS = seconds(vm, "kill_grace_s", 0, 3600);
  return o;
}

}  // namespace dsrun::agent
