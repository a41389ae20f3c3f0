#pragma once
// takeStdinForControl: the ssh backend's control channel. dsrun-launch's stdin is the ssh channel; dsrun
// writes control lines on it (supervision/launch_lines.h: "signal USR1") and closes it to stop the node, and
// when dsrun dies or the connection drops it reaches end of file too. runLocalJob reads the returned
// descriptor (LocalJobOptions::controlFds): each line is that signal, end of file is SIGTERM.

#include "common/unique_fd.h"

namespace dsrun::launcher {

/// Moves stdin to a private close-on-exec descriptor and returns it; stdin becomes /dev/null, which the
/// ranks inherit. Call once, before runLocalJob. Throws IoError if the descriptors cannot be set up.
UniqueFd takeStdinForControl();

/// --stdin_timeout_ms: relays `control` to the returned descriptor on a thread of its own, dropping empty
/// lines (dsrun's heartbeats, ssh_job.h), and ends the relay (end of file: SIGTERM for the ranks) when
/// nothing arrived for `timeoutMs`, saying so on stderr: dsrun, or the link to it, is gone although the
/// connection was never closed. Call once, before runLocalJob. Throws IoError if the pipe cannot be made.
UniqueFd relayWithTimeout(UniqueFd control, int timeoutMs);

}  // namespace dsrun::launcher
