#pragma once
// The two signals that end a tree edge on purpose (docs/agent.md "An interior agent dies"), as values: a parent
// releasing its child (the job ends here, nobody adopts it) and an adopted node telling the parent it had that an
// ancestor took it over. They travel as TreeReleased / TreeReattached between agents that announced them
// (Hello/Welcome.tree_edge_signals); agents from before that said the same as the prefix of a connection-level
// Error's text ("released: ", "adopted: "), which is read, and sent, only on an edge to such an agent. Pure: the
// Session and the ChildLink ask here, so the old agents' prose is recognised in one place.

#include <string>

#include "proto/agent.pb.h"

namespace dsrun::agent {

enum class EdgeSignal {
  None,        ///< anything else
  Released,    ///< parent -> child: the job ends here, nobody adopts the child
  Reattached,  ///< child -> parent: an ancestor adopted the child, the edge closes without a loss
};

/// What `envelope` says about the edge it came on. The typed messages from any peer; the older agents' Error
/// texts only from a peer that did not announce the typed ones (`peerTyped` false): from a current agent an
/// Error is an error, whatever its words.
EdgeSignal edgeSignalOf(const wire::Envelope& envelope, bool peerTyped);

/// Parent -> child: job `job` ends here for the child. `jobEnds`: for its whole subtree too (TreeReleased.job_ends);
/// otherwise the child alone was given up and its children wait for the parent to adopt them. TreeReleased for a
/// child that announced it, else the older Error text (which cannot say `jobEnds`).
wire::Envelope releasedMessage(const std::string& job, bool childTyped, bool jobEnds);

/// A Released signal that ends the job in the child's whole subtree (TreeReleased.job_ends).
bool releaseEndsJob(const wire::Envelope& envelope);

/// Adopted child -> its former parent: job `job` re-attached to an ancestor. TreeReattached for a parent that
/// announced it, else the older Error text.
wire::Envelope reattachedMessage(const std::string& job, bool parentTyped);

}  // namespace dsrun::agent
