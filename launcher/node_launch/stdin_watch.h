#pragma once
// watchStdinForEof: the ssh backend's "closing the channel stops the node" rule. dsrun-launch's stdin is
// the ssh channel; when dsrun closes it (or dies, or the connection drops) stdin reaches EOF and this
// process sends itself SIGTERM, which runLocalJob forwards to every rank.

namespace dsrun {

/// Moves stdin to a private descriptor (the ranks get /dev/null instead), then starts a detached thread
/// that reads it until EOF or an error and then raises SIGTERM in this process. Call once, before
/// runLocalJob. Throws IoError if the descriptors cannot be set up.
void watchStdinForEof();

}  // namespace dsrun
