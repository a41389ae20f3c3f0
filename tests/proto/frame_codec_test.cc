#include "proto/frame_codec.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using Catch::Matchers::Contains;
using dsrun::ParseError;
using dsrun::proto::encodeFrame;
using dsrun::proto::Envelope;
using dsrun::proto::FrameDecoder;

namespace {

Envelope hello(uint32_t version, const std::string& name) {
  Envelope e;
  e.mutable_hello()->set_protocol_version(version);
  e.mutable_hello()->set_client_name(name);
  return e;
}

Envelope output(int rank, const std::string& data) {
  Envelope e;
  auto* o = e.mutable_output();
  o->set_job_id("job-1");
  o->set_rank(rank);
  o->set_stream(dsrun::wire::STDERR);
  o->set_data(data);
  return e;
}

std::string header(uint32_t size) {
  std::string h(4, '\0');
  h[0] = static_cast<char>(size >> 24);
  h[1] = static_cast<char>(size >> 16);
  h[2] = static_cast<char>(size >> 8);
  h[3] = static_cast<char>(size);
  return h;
}

}  // namespace

TEST_CASE("encodeFrame prefixes the payload with its big-endian length", "[proto]") {
  Envelope e = hello(1, "x");
  std::string frame = encodeFrame(e);
  REQUIRE(frame.size() == 4 + e.ByteSizeLong());
  CHECK(frame.substr(0, 4) == header(static_cast<uint32_t>(e.ByteSizeLong())));
}

TEST_CASE("FrameDecoder round-trips several envelopes fed at once", "[proto]") {
  std::string stream = encodeFrame(hello(1, "dsrun")) + encodeFrame(output(3, std::string("a\0b\n", 4)));
  FrameDecoder decoder("peer");
  auto out = decoder.feed(stream);
  REQUIRE(out.size() == 2);
  CHECK(out[0].hello().protocol_version() == 1);
  CHECK(out[0].hello().client_name() == "dsrun");
  CHECK(out[1].output().rank() == 3);
  CHECK(out[1].output().data() == std::string("a\0b\n", 4));
  CHECK(decoder.pendingBytes() == 0);
  CHECK_NOTHROW(decoder.finish());
}

TEST_CASE("FrameDecoder returns the same envelopes for every split of the stream", "[proto]") {
  std::string stream = encodeFrame(hello(7, "n")) + encodeFrame(output(1, "line\n")) + encodeFrame(output(2, ""));
  const size_t piece = GENERATE(1, 2, 3, 5, 13, 64);
  FrameDecoder decoder("peer");
  std::vector<Envelope> all;
  for (size_t i = 0; i < stream.size(); i += piece) {
    for (auto& e : decoder.feed(std::string_view(stream).substr(i, piece))) all.push_back(std::move(e));
  }
  REQUIRE(all.size() == 3);
  CHECK(all[0].hello().protocol_version() == 7);
  CHECK(all[1].output().data() == "line\n");
  CHECK(all[2].output().rank() == 2);
  CHECK_NOTHROW(decoder.finish());
}

TEST_CASE("FrameDecoder refuses an oversized frame as soon as its header arrives", "[proto]") {
  FrameDecoder decoder("10.0.0.5:4000", 1024);
  REQUIRE_THROWS_WITH(decoder.feed(header(1025)),
                      Contains("10.0.0.5:4000: frame of 1025 bytes exceeds the limit of 1024 bytes"));
  // Sticky: the connection is to be closed, nothing more is parsed.
  REQUIRE_THROWS_AS(decoder.feed(encodeFrame(hello(1, "x"))), ParseError);
}

TEST_CASE("FrameDecoder refuses a 4 GiB announcement with the default limit", "[proto]") {
  FrameDecoder decoder("peer");
  REQUIRE_THROWS_WITH(decoder.feed(header(0xffffffffu)), Contains("exceeds the limit"));
}

TEST_CASE("FrameDecoder reports a stream that ends inside a frame as truncated", "[proto]") {
  std::string frame = encodeFrame(output(0, "hello\n"));
  const size_t cut = GENERATE(1, 3, 4, 5);
  FrameDecoder decoder("peer");
  REQUIRE(decoder.feed(std::string_view(frame).substr(0, frame.size() - cut)).empty());
  REQUIRE_THROWS_WITH(decoder.finish(), Contains("peer: connection closed inside a frame"));
}

TEST_CASE("FrameDecoder rejects payloads that are not envelopes", "[proto]") {
  auto [name, payload] = GENERATE(table<std::string, std::string>({
      {"invalid wire type", std::string("\x0f\xff\xff\xff", 4)},
      {"truncated varint", std::string("\x08\xff", 2)},
      {"length beyond payload", std::string("\x0a\x10" "ab", 4)},
      {"empty envelope", std::string()},
      {"only unknown field", std::string("\xf8\x01\x01", 3)},
  }));
  INFO(name);
  FrameDecoder decoder("peer");
  REQUIRE_THROWS_AS(decoder.feed(header(static_cast<uint32_t>(payload.size())) + payload), ParseError);
}

TEST_CASE("FrameDecoder parses the frames before a malformed one and then fails", "[proto]") {
  FrameDecoder decoder("peer");
  auto good = decoder.feed(encodeFrame(hello(1, "a")));
  REQUIRE(good.size() == 1);
  REQUIRE_THROWS_WITH(decoder.feed(header(2) + std::string("\x0f\xff", 2)), Contains("malformed frame"));
}
