#include "launcher/backends/ssh/ssh_elastic_rounds.h"

#include <future>
#include <memory>
#include <thread>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

/// How often a probe waiting for its logins looks at `cancel`.
constexpr auto kCancelPoll = std::chrono::milliseconds(50);

}  // namespace

std::vector<HostProbe> SshElasticRounds::probe(const std::vector<std::string>& hosts,
                                               std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  // libssh's connect timeout is in whole seconds: at least one.
  const long timeoutS = std::max<long>(1, static_cast<long>((timeout.count() + 999) / 1000));
  std::vector<std::future<HostProbe>> answers;
  std::unique_lock<std::mutex> lock(loginsMutex_);
  for (size_t i = logins_.size(); i-- > 0;) {
    if (logins_[i].done->load()) {
      logins_[i].thread.join();
      logins_.erase(logins_.begin() + static_cast<long>(i));
    }
  }
  for (const std::string& host : hosts) {
    auto promise = std::make_shared<std::promise<HostProbe>>();
    answers.push_back(promise->get_future());
    SshTarget target = target_(host);
    target.connectTimeoutS = timeoutS;
    // Its own thread: a cancelled probe must not wait for a login that hangs until its timeout; the
    // thread owns what it uses and is joined later.
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread thread([promise, target, done] {
      HostProbe p;
      p.host = target.host;
      try {
        SshSession session(target);
        p.ok = true;
        p.address = session.peerAddress();
      } catch (const Error& e) {
        p.error = e.what();
        const size_t hint = p.error.find("\n  hint:");
        if (hint != std::string::npos) p.error.resize(hint);
      }
      promise->set_value(std::move(p));
      *done = true;
    });
    logins_.push_back(Login{std::move(thread), done});
  }
  lock.unlock();
  // libssh applies its timeout to each step of a login; the probe as a whole gets one more second.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutS + 1);
  std::vector<HostProbe> out;
  for (size_t i = 0; i < hosts.size(); ++i) {
    while (answers[i].wait_for(kCancelPoll) != std::future_status::ready) {
      if ((cancel != nullptr && cancel->load()) || std::chrono::steady_clock::now() >= deadline) break;
    }
    if (answers[i].wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      out.push_back(answers[i].get());
    } else {
      out.push_back(HostProbe{hosts[i], false, "", strCat("ssh ", hosts[i], ": no answer within ", timeoutS + 1, " s (or the probe was cancelled)")});
    }
  }
  return out;
}

SshElasticRounds::~SshElasticRounds() {
  for (Login& login : logins_) login.thread.join();
}

RoundOutcome SshElasticRounds::runRound(const WorldPlan& plan, const RoundHooks& hooks) {
  SshJob::Settings s = settings_;
  s.elasticRound = true;
  s.hooks = hooks;
  SshJob job(commands_(plan), [this](const std::string& host) { return std::make_unique<SshSession>(target_(host)); },
             s);
  job.run();
  return job.outcome();
}

RoundWording SshElasticRounds::wording() const {
  return {"ssh login failed", "more hosts answer over ssh", "make sure sshd runs on those hosts and accepts your key",
          "hosts unreachable over ssh at launch"};
}

}  // namespace dsrun::launcher
