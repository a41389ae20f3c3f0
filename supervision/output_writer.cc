#include "supervision/output_writer.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "supervision/line_sink.h"

namespace dsrun {

struct OutputWriter::State {
  struct Batch {
    Stream stream;
    std::string text;
    uint64_t tag;
    size_t credit;
  };
  State(int outFd, int errFd, WrittenFn fn) : out(outFd), err(errFd), onWritten(std::move(fn)) {}

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return !queue.empty() || stopping; });
      if (queue.empty()) return;  // stopping and nothing left
      Batch batch = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      // The blocking write, outside the lock: only this thread waits for a slow reader.
      (batch.stream == Stream::Err ? err : out).writeBytes(batch.text);
      lock.lock();
      busy = false;
      queued -= batch.text.size();
      if (batch.credit > 0 && onWritten) {
        WrittenFn fn = onWritten;
        lock.unlock();
        fn(batch.tag, batch.credit);
        lock.lock();
      }
      if (queue.empty()) idle.notify_all();
    }
  }

  LineSink out;                 ///< dsrun's stdout (used by the thread only)
  LineSink err;                 ///< dsrun's stderr (used by the thread only)
  WrittenFn onWritten;          ///< cleared by abandon()
  std::mutex mutex;             ///< guards everything below
  std::condition_variable wake; ///< work arrived or stopping
  std::condition_variable idle; ///< the queue ran empty
  std::deque<Batch> queue;      ///< batches in order
  size_t queued = 0;            ///< bytes in queue + the batch being written
  bool busy = false;            ///< a batch is being written
  bool stopping = false;        ///< the thread ends once the queue is empty
  bool abandoned = false;       ///< see abandon()
  std::thread thread;           ///< the writer thread
};

OutputWriter::OutputWriter(int outFd, int errFd, WrittenFn onWritten)
    : state_(std::make_shared<State>(outFd, errFd, std::move(onWritten))) {
  // The thread holds its own reference: an abandoned writer's thread may still be blocked in write().
  state_->thread = std::thread([state = state_] { state->run(); });
}

OutputWriter::~OutputWriter() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  if (state_->abandoned) {
    state_->thread.detach();
  } else {
    state_->thread.join();
  }
}

void OutputWriter::write(Stream stream, std::string text, uint64_t tag, size_t credit) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->abandoned) return;
  state_->queued += text.size();
  state_->queue.push_back(State::Batch{stream, std::move(text), tag, credit});
  state_->wake.notify_one();
}

bool OutputWriter::waitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  return state_->idle.wait_for(lock, timeout, [&] { return state_->queue.empty() && !state_->busy; });
}

void OutputWriter::abandon() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->abandoned = true;
  state_->onWritten = nullptr;
  for (const auto& batch : state_->queue) state_->queued -= batch.text.size();
  state_->queue.clear();
}

size_t OutputWriter::queuedBytes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->queued;
}

}  // namespace dsrun
