#pragma once
// The cryptography of a tree launch (docs/agent.md "Tree launch: authentication"): SHA-256 for its digests
// (proto/tree_digest.h says what is hashed), dsrun's one signature per launch with its launcher key, and a
// node's check of that signature against the cluster CA. OpenSSL 3 EVP; nothing here knows the messages.

#include <openssl/x509.h>

#include <string>
#include <string_view>

#include "tls/openssl_io.h"

namespace dsrun::tls {

/// SHA-256 of `data` (32 bytes). Throws Error if OpenSSL fails.
std::string sha256(std::string_view data);

/// The launcher's signing identity: its certificate.pem and key.pem of a `dsrun --make_tls` directory.
class TreeSigner {
 public:
  /// Reads <dir>/cert.pem and key.pem. Throws ConfigError naming `flag` and the file when one does not load,
  /// they do not match, or cert.pem is not a launcher (client-only) certificate: a node key never signs.
  explicit TreeSigner(const std::string& dir, const std::string& flag = "--tls_dir");
  TreeSigner(X509Ptr certificate, PKeyPtr key);  ///< for tests: a certificate and its key as they are

  /// The signature over `message` (proto::treeSignedMessage(root)): ECDSA/RSA with SHA-256, or Ed25519,
  /// whatever the key is. One private-key operation per launch.
  std::string sign(std::string_view message) const;
  /// The certificate, DER, as TreeLaunch.launcher_certificate carries it.
  const std::string& certificateDer() const { return certificateDer_; }

 private:
  X509Ptr certificate_;
  PKeyPtr key_;
  std::string certificateDer_;
};

/// Checks a tree launch's signature as a node: `certificateDer` must parse, chain to a CA in `trust` (with
/// its CRL, when the store checks one: makeTrustStore), be a launcher certificate (clientAuth only, as
/// ssl_context.cc's verifyPeerRole demands of a launcher), and `signature` must be its key's over `message`.
/// Returns an empty string when all holds, else one line saying which check failed.
std::string verifyTreeSignature(X509_STORE* trust, std::string_view certificateDer, std::string_view message,
                                std::string_view signature);

/// True if `certificate` names `host` in its subjectAltName (an IP entry for an address literal, else a DNS
/// entry; never the CN, no wildcards): the same reading as expectServerName, for a peer that dialled us.
bool certificateNames(X509* certificate, const std::string& host);

}  // namespace dsrun::tls
