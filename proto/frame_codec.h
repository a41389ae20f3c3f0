#pragma once
// Framing of Envelopes on a byte stream: a big-endian u32 length, then the serialized Envelope.
// Pure: no sockets, no clocks. The decoder refuses (ParseError) a frame longer than maxFrameBytes
// as soon as its header arrives, so a peer cannot make us buffer more than that.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proto/agent.pb.h"
#include "proto/protocol.h"

namespace dsrun::proto {

using Envelope = ::dsrun::wire::Envelope;

/// Returns header + payload for `envelope`. Throws InternalError if it exceeds kMaxFrameBytes
/// (our own messages must never be that large; callers bound output chunks well below it).
std::string encodeFrame(const Envelope& envelope);

/// Incremental decoder: feed() any split of the byte stream, get back every completed Envelope.
/// Not thread-safe; one per connection. After a ParseError the decoder is unusable (the caller
/// closes the connection), and further feed() calls throw the same error again.
class FrameDecoder {
 public:
  /// `source` names the peer in error messages (e.g. "10.0.0.5:41234").
  explicit FrameDecoder(std::string source, size_t maxFrameBytes = kMaxFrameBytes);

  /// Appends `bytes` and returns the envelopes completed by them, in order. Throws ParseError
  /// "<source>: <what>" for an oversized frame or a payload that is not a valid Envelope.
  std::vector<Envelope> feed(std::string_view bytes);

  /// Bytes of an incomplete frame still buffered (non-zero at end of stream = truncated frame).
  size_t pendingBytes() const { return buffer_.size() - consumed_; }

  /// Throws ParseError if the stream ended inside a frame; call when the peer closes.
  void finish() const;

 private:
  [[noreturn]] void fail(const std::string& what);

  std::string source_;   ///< peer name for messages
  size_t maxFrameBytes_; ///< hard cap on one payload
  std::string buffer_;   ///< received bytes not yet consumed (prefix [0, consumed_) already parsed)
  size_t consumed_ = 0;  ///< start of the first unparsed byte in buffer_
  std::string failure_;  ///< set after the first error; sticky
};

}  // namespace dsrun::proto
