#pragma once
// MeshProbe: the agent's half of the mesh probe (docs/agent.md). Before any rank starts, the
// launcher gives each agent the listen addresses of the agents it is to probe (all others up to 16 hosts,
// O(log N) beyond: launcher/backends/agent/agent_mesh_plan.h); the agent opens a
// TCP connection to each (resolve + connect, all at once, closed again at once, no bytes sent) and reports
// per target whether it connected, so a pair of hosts that cannot reach each other is named before Gloo or
// NCCL would hang in their first collective. Asynchronous on the agent's loop: nothing waits on it.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proto/agent.pb.h"

namespace dsrun::agent {

class MeshProbe : public std::enable_shared_from_this<MeshProbe> {
 public:
  /// Receives the MeshProbeReply envelope once every target has an answer or the timeout passed.
  using Done = std::function<void(wire::Envelope reply)>;

  /// Starts probing `request.targets()` ("host:port") on `executor`; `done` is called exactly once, on
  /// the loop thread, never from inside this call. Targets without an answer after the request's timeout
  /// are reported as timed out.
  static void start(const boost::asio::any_io_executor& executor, const wire::MeshProbeRequest& request, Done done);

 private:
  /// One target's connection attempt.
  struct Target {
    std::string text;                                 ///< "host:port" as asked
    std::unique_ptr<boost::asio::ip::tcp::socket> socket;  ///< the attempt
    std::string error;                                ///< empty when connected
    bool answered = false;                            ///< connected or failed
    std::chrono::steady_clock::time_point started;    ///< for the reply's micros
    uint32_t micros = 0;                              ///< how long the attempt took
  };

  MeshProbe(const boost::asio::any_io_executor& executor, const wire::MeshProbeRequest& request, Done done);
  void run();
  void onAnswer(size_t index, const std::string& error);
  void finishIfDone(bool timedOut);

  boost::asio::any_io_executor executor_;   ///< the agent's loop
  boost::asio::ip::tcp::resolver resolver_;  ///< host names of the targets
  boost::asio::steady_timer timer_;          ///< the request's timeout
  std::chrono::milliseconds timeout_;        ///< as asked (clamped)
  std::vector<Target> targets_;              ///< in request order
  size_t pending_ = 0;                       ///< targets without an answer
  Done done_;                                ///< emptied once called
};

}  // namespace dsrun::agent
