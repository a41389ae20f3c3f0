#pragma once
// Random bytes from OpenSSL's CSPRNG, for values a peer must not guess (a job's store scope, proto/agent.proto
// StoreRendezvous.scope).

#include <cstddef>
#include <string>

namespace dsrun::tls {

/// `count` bytes from RAND_bytes; throws dsrun::Error if OpenSSL cannot supply them.
std::string randomBytes(size_t count);

}  // namespace dsrun::tls
