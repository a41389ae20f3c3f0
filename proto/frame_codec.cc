#include "proto/frame_codec.h"

#include "common/error.h"

namespace dsrun::proto {
namespace {

uint32_t readBigEndian(const char* p) {
  auto b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

}  // namespace

std::string encodeFrame(const Envelope& envelope) {
  const size_t size = envelope.ByteSizeLong();
  DSRUN_CHECK(size <= kMaxFrameBytes, "envelope of ", size, " bytes exceeds the frame limit of ",
              kMaxFrameBytes);
  std::string out(kFrameHeaderBytes, '\0');
  out[0] = static_cast<char>((size >> 24) & 0xff);
  out[1] = static_cast<char>((size >> 16) & 0xff);
  out[2] = static_cast<char>((size >> 8) & 0xff);
  out[3] = static_cast<char>(size & 0xff);
  DSRUN_CHECK(envelope.AppendToString(&out), "cannot serialize envelope");
  return out;
}

FrameDecoder::FrameDecoder(std::string source, size_t maxFrameBytes)
    : source_(std::move(source)), maxFrameBytes_(maxFrameBytes) {}

void FrameDecoder::fail(const std::string& what) {
  failure_ = what;
  buffer_.clear();
  consumed_ = 0;
  throw ParseError(source_, 0, what);
}

std::vector<Envelope> FrameDecoder::feed(std::string_view bytes) {
  if (!failure_.empty()) throw ParseError(source_, 0, failure_);
  buffer_.append(bytes.data(), bytes.size());
  std::vector<Envelope> out;
  while (buffer_.size() - consumed_ >= kFrameHeaderBytes) {
    const uint32_t size = readBigEndian(buffer_.data() + consumed_);
    // Checked before waiting for the payload, so an announced 4 GiB frame is refused at once.
    if (size > maxFrameBytes_) {
      fail(strCat("frame of ", size, " bytes exceeds the limit of ", maxFrameBytes_, " bytes"));
    }
    if (buffer_.size() - consumed_ - kFrameHeaderBytes < size) break;
    Envelope envelope;
    const char* payload = buffer_.data() + consumed_ + kFrameHeaderBytes;
    if (!envelope.ParseFromArray(payload, static_cast<int>(size))) {
      fail(strCat("malformed frame of ", size, " bytes (not a dsrun.wire.Envelope)"));
    }
    if (envelope.msg_case() == Envelope::MSG_NOT_SET) {
      fail(strCat("empty envelope in a frame of ", size, " bytes"));
    }
    out.push_back(std::move(envelope));
    consumed_ += kFrameHeaderBytes + size;
  }
  // Compact once the parsed prefix dominates, keeping appends amortised O(1).
  if (consumed_ > 0 && consumed_ * 2 >= buffer_.size()) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return out;
}

void FrameDecoder::finish() const {
  if (!failure_.empty()) throw ParseError(source_, 0, failure_);
  if (pendingBytes() > 0) {
    throw ParseError(source_, 0, strCat("connection closed inside a frame (", pendingBytes(),
                                        " bytes of an incomplete frame)"));
  }
}

}  // namespace dsrun::proto
