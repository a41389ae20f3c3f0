#include "agent/port_preflight.h"

#include "common/error.h"
#include "common/port_check.h"

namespace dsrun::agent {

wire::Envelope answerPortCheck(int port, const std::string& host) {
  wire::Envelope e;
  wire::PortCheckReply* reply = e.mutable_port_check_reply();
  reply->set_port(static_cast<uint32_t>(port));
  try {
    if (port == 0) {
      reply->set_port(static_cast<uint32_t>(pickFreePort()));
    } else {
      checkPortBindable(port, host);
    }
  } catch (const dsrun::Error& error) {
    reply->set_error(error.what());
  }
  return e;
}

}  // namespace dsrun::agent
