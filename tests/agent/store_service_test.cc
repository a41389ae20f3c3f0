// StoreService: an agent's store traffic is scoped per job. A link below carries one job; a request must carry the
// scope of the launch running here (StoreRendezvous.scope), so neither another job's agent nor one of an earlier
// launch that reused the job id can read or write the keys. The root's hubs are real; replies are collected.
#include "agent/store_service.h"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <vector>

using Catch::Matchers::Contains;
using dsrun::wire::Envelope;
using dsrun::wire::StoreRequest;
using namespace dsrun::agent;

namespace {

/// This agent is the root of jobs opened with `scope`.
void openRoot(StoreService& stores, const std::string& job, const std::string& scope) {
  dsrun::wire::StoreRendezvous rendezvous;
  rendezvous.set_root(true);
  rendezvous.set_scope(scope);
  stores.open(job, rendezvous, nullptr);
}

StoreRequest request(const std::string& job, const std::string& scope, uint64_t id, dsrun::wire::StoreOp op,
                     const std::string& key, const std::string& value = {}) {
  StoreRequest r;
  r.set_job_id(job);
  r.set_scope(scope);
  r.set_id(id);
  r.set_op(op);
  r.add_keys(key);
  if (op == dsrun::wire::STORE_SET) r.add_values(value);
  return r;
}

/// The replies one link got.
struct Down {
  std::vector<dsrun::wire::StoreReply> replies;
  StoreHub::Send send() {
    return [this](const Envelope& e) { replies.push_back(e.store_reply()); };
  }
};

}  // namespace

TEST_CASE("a link below serves one job: the same peer asking for another job's keys is refused", "[agent][store]") {
  boost::asio::io_context io;
  StoreService stores(io, nullptr, "root-0");
  openRoot(stores, "job-a", "scope-of-job-a!!");
  openRoot(stores, "job-b", "scope-of-job-b!!");
  Down down;
  const uint64_t link = stores.newLinkId();
  stores.fromBelow(link, request("job-a", "scope-of-job-a!!", 0, dsrun::wire::STORE_SET, "k", "from-a"), down.send());
  stores.fromBelow(link, request("job-a", "scope-of-job-a!!", 1, dsrun::wire::STORE_FETCH, "k"), down.send());
  REQUIRE(down.replies.size() == 1);
  CHECK(down.replies[0].error().empty());
  CHECK(down.replies[0].values(0) == "from-a");
  // Even with job b's own scope: this link carries job a.
  stores.fromBelow(link, request("job-b", "scope-of-job-b!!", 2, dsrun::wire::STORE_CHECK, "k"), down.send());
  REQUIRE(down.replies.size() == 2);
  CHECK(down.replies[1].id() == 2);
  CHECK_THAT(down.replies[1].error(), Contains("carries job 'job-a'"));
  // A child's edge is bound before its first request, to its launch's job.
  Down child;
  const uint64_t edge = stores.newLinkId();
  stores.bindLink(edge, "job-b");
  stores.fromBelow(edge, request("job-a", "scope-of-job-a!!", 3, dsrun::wire::STORE_FETCH, "k"), child.send());
  REQUIRE(child.replies.size() == 1);
  CHECK_THAT(child.replies[0].error(), Contains("carries job 'job-b'"));
  CHECK(child.replies[0].values_size() == 0);
}

TEST_CASE("a request without the scope of the launch running here (an earlier launch that reused the job id, or "
          "a peer outside the job) neither reads nor writes its keys",
          "[agent][store]") {
  boost::asio::io_context io;
  StoreService stores(io, nullptr, "root-0");
  openRoot(stores, "job-a", "scope-of-job-a!!");
  Down stale, member;
  const uint64_t staleLink = stores.newLinkId(), memberLink = stores.newLinkId();
  stores.fromBelow(staleLink, request("job-a", "earlier-launch!!", 0, dsrun::wire::STORE_SET, "k", "stale"),
                   stale.send());
  stores.fromBelow(staleLink, request("job-a", "", 1, dsrun::wire::STORE_CHECK, "k"), stale.send());
  REQUIRE(stale.replies.size() == 1);  // the SET wants no answer; the CHECK is refused
  CHECK_THAT(stale.replies[0].error(), Contains("does not carry the scope of the launch running here"));
  // The stale SET did not land: the job's own peer finds no key.
  stores.fromBelow(memberLink, request("job-a", "scope-of-job-a!!", 2, dsrun::wire::STORE_CHECK, "k"), member.send());
  REQUIRE(member.replies.size() == 1);
  CHECK(member.replies[0].error().empty());
  CHECK_FALSE(member.replies[0].ready());
}

TEST_CASE("a request held until its job's store opens is checked against that launch's scope when it does",
          "[agent][store]") {
  boost::asio::io_context io;
  StoreService stores(io, nullptr, "root-0");
  Down early, member;
  stores.fromBelow(stores.newLinkId(), request("job-c", "not-job-c-scope!", 7, dsrun::wire::STORE_CHECK, "k"),
                   early.send());
  stores.fromBelow(stores.newLinkId(), request("job-c", "scope-of-job-c!!", 8, dsrun::wire::STORE_CHECK, "k"),
                   member.send());
  CHECK(early.replies.empty());  // held: the job has not started here yet
  openRoot(stores, "job-c", "scope-of-job-c!!");
  REQUIRE(early.replies.size() == 1);
  CHECK_THAT(early.replies[0].error(), Contains("does not carry the scope"));
  REQUIRE(member.replies.size() == 1);
  CHECK(member.replies[0].error().empty());
}
