#pragma once
// The agent's half of the MASTER_PORT pre-flight (docs/agent.md): on the master host, before any rank starts,
// the launcher asks whether the rendezvous port can be bound here, or asks for a free one (--master_port 0).
// The check binds the port for a moment (common/port_check.h), so it runs on the agent's host and in its
// network namespace, where the ranks will run.

#include <string>

#include "proto/agent.pb.h"

namespace dsrun::agent {

/// A PortCheckReply for `port` (0: pick a free port) on this host, named `host` in the error. Never throws:
/// a port in use, or any failure to check, becomes the reply's error (one line naming the port and, when
/// visible, the process holding it, then a hint line).
wire::Envelope answerPortCheck(int port, const std::string& host);

}  // namespace dsrun::agent
