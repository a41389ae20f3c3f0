#pragma once
// The TLS directory shared by every node of a cluster: one CA, and one certificate/key pair signed
// by it that both `dsrun` and every `dsrun-agent` present. Copying the directory to each node is the
// whole deployment; a peer is trusted iff its certificate chains to ca.pem.

#include <string>

namespace dsrun::tls {

/// The files of a TLS directory.
struct TlsFiles {
  std::string caCert;   ///< <dir>/ca.pem: the cluster CA certificate (the trust anchor)
  std::string caKey;    ///< <dir>/ca.key: the CA's private key (0600; not needed at run time)
  std::string cert;     ///< <dir>/cert.pem: the node certificate, signed by the CA
  std::string key;      ///< <dir>/key.pem: the node's private key (0600)
};

/// The paths of the files in `dir` (no I/O).
TlsFiles tlsFiles(const std::string& dir);

/// Creates `dir` (0700, parents as needed) holding a fresh CA (EC P-256, 10 years) and a node
/// certificate signed by it, usable for TLS server and client authentication. Key files are 0600.
/// Uses OpenSSL's C API only. Throws ConfigError if any of the files already exists (never
/// overwrites key material) and IoError if a file cannot be written.
void makeTlsDirectory(const std::string& dir);

/// Checks that the files `dir` must hold exist and that the private key is not readable by group or
/// others. Throws ConfigError naming the file and, in a hint, how to fix it. `flag` names the
/// option the directory came from (e.g. "--tls_dir").
void checkTlsDirectory(const std::string& dir, const std::string& flag);

}  // namespace dsrun::tls
