// libFuzzer target: arbitrary bytes through FrameDecoder (split into arbitrary pieces) and every
// decoded envelope through RequestHandler. A ParseError is the expected way to refuse input; any
// other exception, a crash, a leak or UB (ASan/UBSan) is a finding.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "agent/request_handler.h"
#include "common/error.h"
#include "proto/frame_codec.h"
#include "proto/rank_env.h"

using dsrun::wire::Envelope;
using dsrun::agent::RequestHandler;
using dsrun::agent::SessionView;

namespace {

const RequestHandler& handler() {
  static const RequestHandler h({"fuzz-node", 100, 16, true});
  return h;
}

/// Seeds of valid frames so the fuzzer starts inside the protocol instead of at the length prefix.
void writeSeeds(const std::string& dir) {
  std::vector<Envelope> seeds(6);
  seeds[0].mutable_hello()->set_protocol_version(dsrun::proto::kProtocolVersion);
  seeds[0].mutable_hello()->set_client_name("dsrun");
  auto* l = seeds[1].mutable_launch();
  l->set_job_id("job-1");
  l->mutable_log()->set_tag("20240101000000");
  for (int r = 0; r < 2; ++r) {
    auto* rank = l->add_ranks();
    rank->set_rank(r);
    rank->add_argv("/bin/true");
    dsrun::proto::addEnv(*rank, "RANK", std::to_string(r));
    rank->add_cores(r);
  }
  seeds[2].mutable_signal()->set_job_id("job-1");
  seeds[2].mutable_signal()->set_signal(15);
  seeds[3].mutable_heartbeat()->set_sequence(7);
  seeds[4].mutable_error()->set_message("bye");
  seeds[5].mutable_output()->set_data("x\n");
  for (size_t i = 0; i < seeds.size(); ++i) {
    // First two bytes are the session flags and the split size (see LLVMFuzzerTestOneInput).
    std::string bytes = std::string("\x01\x03", 2) + dsrun::proto::encodeFrame(seeds[0]);
    if (i > 0) bytes += dsrun::proto::encodeFrame(seeds[i]);
    std::ofstream(dir + "/seed" + std::to_string(i), std::ios::binary) << bytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("DSRUN_FUZZ_SEED_DIR")) writeSeeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t flags = data[0];
  const size_t piece = data[1] % 16 + 1;
  data += 2;
  size -= 2;
  SessionView view;
  view.welcomed = flags & 1;
  if (flags & 2) view.ownJobs.insert("job-1");
  if (flags & 4) view.agentJobs.insert("job-1");
  view.peerIsNode = flags & 8;  // a tree parent's node certificate
  // A small cap so the oversize path is reached by short inputs.
  dsrun::proto::FrameDecoder decoder("fuzz", 4096);
  try {
    for (size_t i = 0; i < size; i += piece) {
      const size_t n = std::min(piece, size - i);
      for (const Envelope& e : decoder.feed(std::string_view(reinterpret_cast<const char*>(data) + i, n))) {
        // Re-encoding a decoded envelope must decode to the same message.
        dsrun::proto::FrameDecoder again("again");
        auto round = again.feed(dsrun::proto::encodeFrame(e));
        if (round.size() != 1 || round[0].SerializeAsString() != e.SerializeAsString()) std::abort();
        for (const auto& action : handler().handle(e, view)) {
          if (action.kind == dsrun::agent::Action::Kind::MarkWelcomed) view.welcomed = true;
          // A node key may hand over a (signed, checked later) tree launch, never start or probe anything itself.
          if (view.peerIsNode && (action.kind == dsrun::agent::Action::Kind::Launch ||
                                  action.kind == dsrun::agent::Action::Kind::ProbeMesh ||
                                  action.kind == dsrun::agent::Action::Kind::CheckPort)) {
            std::abort();
          }
          if (action.kind == dsrun::agent::Action::Kind::Launch) {
            view.ownJobs.insert(action.launch.job_id());
            view.agentJobs.insert(action.launch.job_id());
          }
        }
      }
    }
    decoder.finish();
  } catch (const dsrun::ParseError&) {
    // The documented refusal: the connection would be closed with this message.
  }
  return 0;
}
