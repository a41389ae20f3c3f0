#pragma once
// JobOutput: where a remote-job driver (remote_job.h) writes its own lines and the node lines it forwards.
// The ssh and command media write straight to dsrun's descriptors (SinkOutput); the agent medium queues them
// on its OutputWriter, behind the ranks' output it wrote there, so a closing line never overtakes a rank's.

#include <string_view>

#include "supervision/line_sink.h"

namespace dsrun::launcher {

class JobOutput {
 public:
  virtual ~JobOutput() = default;
  /// One line, without its newline, to dsrun's stderr (`isStderr`) or stdout.
  virtual void line(bool isStderr, std::string_view text) = 0;
};

/// JobOutput onto two LineSinks (not owned).
class SinkOutput : public JobOutput {
 public:
  SinkOutput(LineSink& out, LineSink& err) : out_(out), err_(err) {}
  void line(bool isStderr, std::string_view text) override { (isStderr ? err_ : out_).write("", text); }

 private:
  LineSink& out_;
  LineSink& err_;
};

}  // namespace dsrun::launcher
