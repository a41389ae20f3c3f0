#include "agent/session_manager.h"

#include <string>

#include <boost/asio/post.hpp>
#include <vector>

#include "agent/session.h"

namespace dsrun::agent {

void SessionManager::start(std::shared_ptr<Session> session) {
  DSRUN_CHECK_THREAD(thread_);
  sessions_[session->id()] = session;
  session->start();
}

void SessionManager::remove(uint64_t id) {
  DSRUN_CHECK_THREAD(thread_);
  sessions_.erase(id);
}

void SessionManager::drainAll() {
  // Copy: drain() may remove sessions from the map.
  std::vector<std::shared_ptr<Session>> all;
  for (auto& [id, s] : sessions_) all.push_back(s);
  for (auto& s : all) s->drain();
}

void SessionManager::stopAll(const std::string& reason) {
  std::vector<std::shared_ptr<Session>> all;
  for (auto& [id, s] : sessions_) all.push_back(s);
  for (auto& s : all) s->stop(reason);
}

void SessionManager::deliver(uint64_t owner, JobEvent event) {
  auto it = sessions_.find(owner);
  if (it != sessions_.end()) it->second->deliver(std::move(event));
}

bool SessionManager::congested(uint64_t owner) const {
  auto it = sessions_.find(owner);
  return it != sessions_.end() && it->second->congested();
}

std::shared_ptr<Session> SessionManager::find(uint64_t id) const {
  const auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

std::shared_ptr<Session> SessionManager::treeCarrier(const std::string& jobId) const {
  for (const auto& [id, session] : sessions_) {
    if (session->treeJob() == jobId) return session;
  }
  return nullptr;
}

void SessionManager::whenDrained(uint64_t owner, std::function<void()> resume) {
  auto it = sessions_.find(owner);
  if (it == sessions_.end()) {
    resume();
    return;
  }
  it->second->whenDrained(std::move(resume));
}

}  // namespace dsrun::agent
