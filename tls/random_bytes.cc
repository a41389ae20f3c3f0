#include "tls/random_bytes.h"

#include <openssl/rand.h>

#include "common/error.h"

namespace dsrun::tls {

std::string randomBytes(size_t count) {
  std::string out(count, '\0');
  if (count > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(count)) != 1) {
    throw Error("RAND_bytes: OpenSSL's random generator failed (drawing a job's store scope)");
  }
  return out;
}

}  // namespace dsrun::tls
