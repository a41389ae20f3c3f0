#pragma once
// FakeChannel: a NodeChannel that records what the driver asked of it, in order, in one log shared by every
// node ("dsn1 start", "dsn2 signal 2", "dsn1 stop", ...), so tests can assert the exact sequence.

#include <optional>
#include <string>
#include <vector>

#include "common/strings.h"
#include "launcher/remote_job/node_channel.h"

namespace dsrun::launcher::test {

class FakeChannel : public NodeChannel {
 public:
  FakeChannel(std::string host, std::vector<std::string>& log) : host_(std::move(host)), log_(log) {}

  std::optional<std::string> start() override {
    log_.push_back(host_ + " start");
    return startError;
  }
  void signal(int signal) override { log_.push_back(strCat(host_, " signal ", signal)); }
  void stop() override { log_.push_back(host_ + " stop"); }
  std::optional<std::string> kill() override {
    log_.push_back(host_ + " kill");
    return killEnds ? std::optional<std::string>(host_ + " closed") : std::nullopt;
  }
  void heartbeat() override { log_.push_back(host_ + " beat"); }

  std::optional<std::string> startError;  ///< what start() answers
  bool killEnds = true;                   ///< kill() closes the channel (ssh) or not (command)

 private:
  std::string host_;
  std::vector<std::string>& log_;
};

}  // namespace dsrun::launcher::test
