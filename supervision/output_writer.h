#pragma once
// OutputWriter: writes dsrun's own stdout and stderr on a thread of its own, so that a slow or
// stalled reader (a paused pager, a full pipe) blocks only that thread, never the event loop that
// sends heartbeats and handles signals. Each batch carries a tag and a byte count that are reported
// back once the batch was written (or dropped because the reader went away): the agent backend
// turns them into OutputCredit, which is what bounds the memory held here (flow control reaches the
// ranks through the agents). Lines keep their order within and across the two streams.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace dsrun {

class OutputWriter {
 public:
  enum class Stream { Out, Err };
  /// Called on the writer thread after a batch with `credit` > 0 was written or dropped.
  using WrittenFn = std::function<void(uint64_t tag, size_t credit)>;

  /// Writes to `outFd` and `errFd` (not owned; they outlive the writer). Starts the thread.
  OutputWriter(int outFd, int errFd, WrittenFn onWritten);
  /// Waits for everything queued to be written, unless abandon() was called (then returns at once).
  ~OutputWriter();
  OutputWriter(const OutputWriter&) = delete;
  OutputWriter& operator=(const OutputWriter&) = delete;

  /// Queues `text` (whole lines, each ending in '\n') for `stream`. Any thread.
  void write(Stream stream, std::string text, uint64_t tag = 0, size_t credit = 0);
  /// Waits up to `timeout` for the queue to be empty and written; true if it is.
  bool waitIdle(std::chrono::milliseconds timeout);
  /// Gives up on whatever is queued (the user asked dsrun to end now): later writes are dropped,
  /// no more callbacks run, and the destructor does not wait for a blocked write.
  void abandon();
  /// Bytes queued and not yet written.
  size_t queuedBytes() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  ///< shared with the thread (which may outlive an abandoned writer)
};

}  // namespace dsrun
